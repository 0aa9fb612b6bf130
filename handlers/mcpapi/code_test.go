package mcpapi_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trellis/trellis/codememory"
)

// TestSearchChunksTool: search_chunks answers in the citation format, says
// not found with suggestions, and rejects bad arguments.
func TestSearchChunksTool(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	repo := t.TempDir()
	os.WriteFile(filepath.Join(repo, "reg.py"), []byte("class ToolRegistry:\n    \"\"\"Registry for managing tools.\"\"\"\n\n    def register(self, tool):\n        \"\"\"Add a tool.\"\"\"\n        self.tools.append(tool)\n"), 0o644)
	if _, err := codememory.Ingest(ctx, b.nats.Store, codememory.IngestConfig{Root: repo, Repo: "demo"}); err != nil {
		t.Fatal(err)
	}
	cs := b.connect(t, ctx)
	res := call(t, ctx, cs, "search_chunks", map[string]any{"query": "ToolRegistry", "k": 3, "filters": map[string]any{"file_type": ".py"}})
	if res.IsError || !strings.Contains(text(res), "CHUNK_ID: chunk_") || !strings.Contains(text(res), "Source: reg.py (lines ") {
		t.Fatalf("search_chunks = %s", text(res))
	}
	if got := text(call(t, ctx, cs, "search_chunks", map[string]any{"query": "zzyzx"})); !strings.Contains(got, "not found") {
		t.Fatalf("not found = %s", got)
	}
	for _, c := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"query": "x", "k": 1000}, "invalid"},
		{map[string]any{"query": "x", "colour": "red"}, "invalid"},
		{map[string]any{"query": 7}, "invalid"},
		{map[string]any{"query": "x", "filters": map[string]any{"tags": []string{"a", "b"}}}, "invalid"},
	} {
		if got := callErr(t, ctx, cs, "search_chunks", c.args); !strings.HasPrefix(got, c.want) {
			t.Errorf("%v: %s", c.args, got)
		}
	}
}

// TestExplainCodeTool: without a chat model explain_code returns the
// evidence and what to configure; bad arguments are invalid.
func TestExplainCodeTool(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	repo := t.TempDir()
	os.WriteFile(filepath.Join(repo, "reg.py"), []byte("class ToolRegistry:\n    \"\"\"Registry for managing tools.\"\"\"\n\n    def register(self, tool):\n        \"\"\"Add a tool.\"\"\"\n        self.tools.append(tool)\n"), 0o644)
	if _, err := codememory.Ingest(ctx, b.nats.Store, codememory.IngestConfig{Root: repo, Repo: "demo"}); err != nil {
		t.Fatal(err)
	}
	cs := b.connect(t, ctx)
	res := call(t, ctx, cs, "explain_code", map[string]any{"question": "how are tools registered?", "k": 2})
	if got := text(res); res.IsError || !strings.Contains(got, "--chat-url") || !strings.Contains(got, "CHUNK_ID: chunk_") || !strings.Contains(got, "self.tools.append(tool)") {
		t.Fatalf("explain_code = %s", got)
	}
	for _, args := range []map[string]any{{"question": ""}, {"question": "x", "k": 50}, {"k": 2}} {
		if got := callErr(t, ctx, cs, "explain_code", args); !strings.HasPrefix(got, "invalid") {
			t.Errorf("%v: %s", args, got)
		}
	}
}
