package explain_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/trellis/trellis/embedding"
	"github.com/trellis/trellis/explain"
)

func TestCitations(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		answer string
		want   []string
	}{
		{"It is in [CITATION chunk_0123456789abcdef].", []string{"chunk_0123456789abcdef"}},
		{"[CITATION chunk_a] and [CITATION: chunk_b, chunk_a] [citation chunk_c]", []string{"chunk_a", "chunk_b"}},
		{"chunk_abc mentioned without the marker", nil},
		{"[CITATION ] empty", nil},
	} {
		if got := explain.Citations(tc.answer); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Citations(%q) = %v, want %v", tc.answer, got, tc.want)
		}
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	chunks := []explain.Chunk{{ChunkID: "chunk_a"}, {ChunkID: "chunk_b"}}
	valid, invalid := explain.Check("see [CITATION chunk_a] and [CITATION chunk_zz]", chunks)
	if !reflect.DeepEqual(valid, []string{"chunk_a"}) || !reflect.DeepEqual(invalid, []string{"chunk_zz"}) {
		t.Fatalf("valid %v invalid %v", valid, invalid)
	}
	valid, invalid = explain.Check("no citations", chunks)
	if valid == nil || invalid == nil || len(valid)+len(invalid) != 0 {
		t.Fatalf("empty answer: valid %v invalid %v", valid, invalid)
	}
}

func TestUserPrompt(t *testing.T) {
	t.Parallel()
	p := explain.UserPrompt("how?", []explain.Chunk{{ChunkID: "chunk_a", SourcePath: "a.go", StartLine: 1, EndLine: 3, ChunkType: "function", Name: "A", Content: strings.Repeat("x", explain.MaxChunkBytes+10)}})
	for _, want := range []string{"Question: how?", "Retrieved Chunks (1 total)", "[chunk_a] a.go (lines 1-3), function A", "... (cut)", "Analysis:"} {
		if !strings.Contains(p, want) {
			t.Errorf("prompt lacks %q", want)
		}
	}
	if !strings.Contains(explain.SystemPrompt, "[CITATION chunk_id]") {
		t.Error("system prompt lacks the citation format")
	}
}

func TestOpenAIChat(t *testing.T) {
	t.Parallel()
	var status atomic.Int64
	status.Store(http.StatusOK)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer k" {
			http.Error(w, `{"error":{"message":"wrong route or key"}}`, http.StatusUnauthorized)
			return
		}
		w.WriteHeader(int(status.Load()))
		if status.Load() == http.StatusOK {
			_, _ = w.Write([]byte(`{"choices":[{"message":{"role":"assistant","content":"answer [CITATION chunk_a]"}}]}`))
		} else {
			_, _ = w.Write([]byte(`{"error":{"message":"boom"}}`))
		}
	}))
	defer ts.Close()
	c, err := explain.NewOpenAIChat(explain.OpenAIChatConfig{URL: ts.URL + "/v1", Model: "m", APIKey: "k", Retries: -1})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Complete(context.Background(), "sys", "user")
	if err != nil || got != "answer [CITATION chunk_a]" {
		t.Fatalf("Complete = %q, %v", got, err)
	}
	status.Store(http.StatusInternalServerError)
	if _, err := c.Complete(context.Background(), "sys", "user"); !errors.Is(err, embedding.ErrServer) || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("5xx: %v", err)
	}
	bad, _ := explain.NewOpenAIChat(explain.OpenAIChatConfig{URL: ts.URL, Model: "m", Retries: -1})
	if _, err := bad.Complete(context.Background(), "s", "u"); !errors.Is(err, embedding.ErrRejected) {
		t.Fatalf("401: %v", err)
	}
	for _, cfg := range []explain.OpenAIChatConfig{{Model: "m"}, {URL: "x://y", Model: "m"}, {URL: "http://y"}} {
		if _, err := explain.NewOpenAIChat(cfg); err == nil {
			t.Fatalf("NewOpenAIChat(%+v) accepted", cfg)
		}
	}
}
