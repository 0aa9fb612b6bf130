package httpapi_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/codememory"
)

// TestCodeSearchRoutes: search and chunk over HTTP, with bad input.
func TestCodeSearchRoutes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	repo := t.TempDir()
	os.WriteFile(filepath.Join(repo, "a.go"), []byte("package a\n\n// Sum adds numbers.\nfunc Sum(xs []int) int {\n\tt := 0\n\tfor _, x := range xs {\n\t\tt += x\n\t}\n\treturn t\n}\n"), 0o644)
	if _, err := codememory.Ingest(b.ctx, b.nats.Store, codememory.IngestConfig{Root: repo, Repo: "demo"}); err != nil {
		t.Fatal(err)
	}
	var res trellis.SearchResult
	b.do(t, http.MethodPost, "/v1/code/search", map[string]any{"query": "adds numbers", "k": 5}).expect(t, http.StatusOK, &res)
	if res.NotFound || res.Results[0].Name != "Sum" {
		t.Fatalf("search = %+v", res)
	}
	var chunk trellis.ChunkHit
	b.do(t, http.MethodGet, "/v1/code/chunks/"+res.Results[0].ChunkID, nil).expect(t, http.StatusOK, &chunk)
	if chunk.Content == "" {
		t.Fatal("chunk without content")
	}
	var ex trellis.ExplainResult
	b.do(t, http.MethodPost, "/v1/code/explain", map[string]any{"question": "adds numbers", "k": 3}).expect(t, http.StatusOK, &ex)
	if ex.NotFound || ex.Evidence[0].Name != "Sum" || ex.Evidence[0].Content == "" || !strings.Contains(ex.Configure, "--chat-url") || ex.Answer != "" {
		t.Fatalf("explain = %+v", ex)
	}
	for _, c := range []struct {
		method, path, body string
		status             int
	}{
		{http.MethodPost, "/v1/code/explain", `{"question":""}`, http.StatusBadRequest},
		{http.MethodPost, "/v1/code/explain", `{"question":"x","k":50}`, http.StatusBadRequest},
		{http.MethodPost, "/v1/code/explain", `{"question":"x","mode":"hybrid"}`, http.StatusServiceUnavailable},
		{http.MethodPost, "/v1/code/search", `{"query":"x","mode":"fuzzy"}`, http.StatusBadRequest},
		{http.MethodPost, "/v1/code/search", `{"query":"x","k":1000}`, http.StatusBadRequest},
		{http.MethodPost, "/v1/code/search", `{"query":"x","colour":"red"}`, http.StatusBadRequest},
		{http.MethodPost, "/v1/code/search", `{"query":`, http.StatusBadRequest},
		{http.MethodPost, "/v1/code/search?x=1", `{"query":"x"}`, http.StatusBadRequest},
		{http.MethodGet, "/v1/code/chunks/nope", "", http.StatusBadRequest},
		{http.MethodGet, "/v1/code/chunks/chunk_0000000000000000", "", http.StatusNotFound},
	} {
		var body any
		if c.body != "" {
			body = c.body
		}
		if r := b.do(t, c.method, c.path, body); r.status != c.status {
			t.Errorf("%s %s %s: %d %s", c.method, c.path, c.body, r.status, r.body)
		}
	}
}
