package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/codememory"
	"github.com/trellis/trellis/embedding/embeddingtest"
)

// TestCLICodeMemory: ingest, query in seed 003's citation format and as
// JSON, chunk show, not found with suggestions, and bad input.
func TestCLICodeMemory(t *testing.T) {
	t.Parallel()
	d := "--data=" + t.TempDir()
	repo := t.TempDir()
	os.MkdirAll(filepath.Join(repo, "pkg"), 0o755)
	os.WriteFile(filepath.Join(repo, "pkg", "registry.py"), []byte("class ToolRegistry:\n    \"\"\"Registry for managing tools.\"\"\"\n\n    def register(self, tool):\n        \"\"\"Add a tool to the registry.\"\"\"\n        self.tools.append(tool)\n"), 0o644)
	code, out, errs := cli(t, "ingest", repo, d, "--repo", "demo", "--json")
	var sum codememory.IngestSummary
	mustJSON(t, out, &sum)
	if code != 0 || sum.FilesNew != 1 || sum.ChunksAdded == 0 {
		t.Fatalf("ingest: %d %+v %s", code, sum, errs)
	}
	code, out, _ = cli(t, "query", "ToolRegistry", d)
	for _, want := range []string{"Found ", "[1] CHUNK_ID: chunk_", "Source: pkg/registry.py (lines ", "Type: class (ToolRegistry)", "Snippet: ...", "CITATION RULE"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("query output lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = cli(t, "query", "add a tool", d, "--chunk-type", "method", "--json")
	var res trellis.SearchResult
	mustJSON(t, out, &res)
	if code != 0 || res.NotFound || res.Results[0].Name != "ToolRegistry.register" {
		t.Fatalf("filtered query = %+v", res)
	}
	if code, out, _ = cli(t, "chunk", "show", res.Results[0].ChunkID, d); code != 0 || !strings.Contains(out, "def register") {
		t.Fatalf("chunk show: %d\n%s", code, out)
	}
	if code, out, _ = cli(t, "query", "zzyzx qwertyuiop", d); code != 0 || !strings.Contains(out, "not found") {
		t.Fatalf("not found: %d\n%s", code, out)
	}
	if code, _, errs = cli(t, "ingest", filepath.Join(repo, "missing"), d); code != 2 {
		t.Fatalf("missing path: exit %d %s", code, errs)
	}
	if code, _, errs = cli(t, "chunk", "show", "chunk_0000000000000000", d); code != 3 {
		t.Fatalf("unknown chunk: exit %d %s", code, errs)
	}
	if code, _, errs = cli(t, "query", "x", d, "--top-k", "0"); code != 0 {
		t.Fatalf("top-k 0 means the default: exit %d %s", code, errs)
	}
	if code, _, errs = cli(t, "query", "x", d, "--top-k", "500"); code != 2 {
		t.Fatalf("top-k 500: exit %d %s", code, errs)
	}
}

// TestCLIModels: explain without a chat model prints the evidence and what
// to configure; with embedding and chat endpoints (a test endpoint
// speaking the OpenAI protocol) ingest embeds, query is hybrid and explain
// answers with checked citations; bad endpoints and modes are refused.
func TestCLIModels(t *testing.T) {
	t.Parallel()
	d := "--data=" + t.TempDir()
	repo := t.TempDir()
	os.WriteFile(filepath.Join(repo, "registry.py"), []byte("class ToolRegistry:\n    \"\"\"Registry for managing tools.\"\"\"\n\n    def register(self, tool):\n        \"\"\"Add a tool to the registry.\"\"\"\n        self.tools.append(tool)\n"), 0o644)
	if code, _, errs := cli(t, "ingest", repo, d, "--repo", "demo"); code != 0 {
		t.Fatalf("ingest: %d %s", code, errs)
	}
	code, out, _ := cli(t, "explain", "add a tool", d)
	if code != 0 || !strings.Contains(out, "no chat model is configured") || !strings.Contains(out, "self.tools.append(tool)") {
		t.Fatalf("explain without a model: %d\n%s", code, out)
	}
	if code, _, errs := cli(t, "query", "x", d, "--mode", "fuzzy"); code != 2 {
		t.Fatalf("bad mode: exit %d %s", code, errs)
	}
	if code, _, errs := cli(t, "query", "x", d, "--embed-url", "ftp://x", "--embed-model", "m"); code != 2 || !strings.Contains(errs, "embed-url") {
		t.Fatalf("bad endpoint: exit %d %s", code, errs)
	}

	model := embeddingtest.Start(t, embeddingtest.Options{})
	m := []string{d, "--embed-url", model.URL, "--embed-model", "toy", "--chat-url", model.URL, "--chat-model", "toy-chat"}
	code, out, errs := cli(t, append([]string{"ingest", repo, "--repo", "demo"}, m...)...)
	if code != 0 || !strings.Contains(out, "chunks with openai:toy") || strings.Contains(out, "embedded 0 ") {
		t.Fatalf("ingest with a model: %d\n%s%s", code, out, errs)
	}
	code, out, _ = cli(t, append([]string{"query", "managing tools", "--json"}, m...)...)
	var res trellis.SearchResult
	mustJSON(t, out, &res)
	if code != 0 || res.Mode != trellis.SearchHybrid || res.NotFound {
		t.Fatalf("hybrid query: %d %+v", code, res)
	}
	code, out, _ = cli(t, append([]string{"explain", "add a tool"}, m...)...)
	if code != 0 || !strings.Contains(out, "[CITATION chunk_") || !strings.Contains(out, "1 valid") || strings.Contains(out, "INVALID") {
		t.Fatalf("explain with a model: %d\n%s", code, out)
	}
	model.SetDown(true)
	os.WriteFile(filepath.Join(repo, "more.py"), []byte("def more():\n    \"\"\"More.\"\"\"\n    return 1\n"), 0o644)
	if code, _, errs := cli(t, append([]string{"ingest", repo, "--repo", "demo"}, m...)...); code != 7 || !strings.Contains(errs, "503") {
		t.Fatalf("ingest with the model down: exit %d %s", code, errs)
	}
}
