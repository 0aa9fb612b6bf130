package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/handlers"
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
	var sum handlers.IngestSummary
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
