package mcpapi_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
)

// TestVineRelativeFileMCP: a relative file argument names a file under the
// server's first workspace root, not under the MCP process's working
// directory (which a client like an IDE picks, and which may not even be on
// the server's machine); every vine tool answers with the graph's id.
func TestVineRelativeFileMCP(t *testing.T) {
	t.Parallel()
	b, ctx := setupVine(t)
	cs := b.connect(t, ctx)
	schemas := outputSchemas(t, ctx, cs)
	b.file(t, "plans/rel.vine", "vine 1.2.0\n---\n[root] Release (notstarted)\n-> a\n-> docs\n---\n[a] A (notstarted)\n---\nref [docs] Docs (./docs.vine)\n")
	b.file(t, "plans/docs.vine", "vine 1.2.0\n---\n[top] Write the docs (notstarted)\n")
	// A decoy with the same relative name under this process's working
	// directory must not be used.
	if _, err := os.Stat("plans"); err == nil {
		t.Fatal("the test's working directory already has plans/")
	}
	const rel = "plans/rel.vine"
	gid := events.GraphID(rel)

	var fr struct {
		GraphID string `json:"graph_id"`
	}
	callOK(t, ctx, cs, schemas, "vine_next", map[string]any{"file": rel}, &fr)
	if fr.GraphID != gid {
		t.Fatalf("vine_next graph_id = %q; want %q", fr.GraphID, gid)
	}
	var rd trellis.VineReadResult
	callOK(t, ctx, cs, schemas, "vine_read", map[string]any{"file": "./" + rel, "action": "summary"}, &rd)
	if rd.GraphID != gid {
		t.Fatalf("vine_read graph_id = %q; want %q", rd.GraphID, gid)
	}
	var cr trellis.VineClaimResult
	callOK(t, ctx, cs, schemas, "vine_claim", map[string]any{"file": rel}, &cr)
	if cr.GraphID != gid || cr.Node == nil || cr.Node.Node.ID != "a" {
		t.Fatalf("vine_claim = %+v; want a claimed in %s", cr, gid)
	}
	var wr trellis.VineWriteResult
	callOK(t, ctx, cs, schemas, "vine_write", map[string]any{"file": rel, "operations": []map[string]any{{"op": "set_status", "id": "a", "status": "reviewing"}}}, &wr)
	want := filepath.Join(b.ws, "plans", "rel.vine")
	if wr.GraphID != gid || len(wr.Written) != 1 || wr.Written[0] != want {
		t.Fatalf("vine_write = %+v; want %s written", wr, want)
	}
	callOK(t, ctx, cs, schemas, "vine_expand", map[string]any{"file": rel, "ref_id": "docs", "child_file": "./docs.vine"}, &wr)
	data, err := os.ReadFile(want)
	if err != nil || !strings.Contains(string(data), "[docs] Write the docs (notstarted)") || !strings.Contains(string(data), "[a] A (reviewing)") {
		t.Fatalf("%s after the calls: %v\n%s", want, err, data)
	}
	// Relative paths that leave the root are refused, naming the root.
	msg := callErr(t, ctx, cs, "vine_next", map[string]any{"file": "../x.vine"})
	if !strings.HasPrefix(msg, "invalid: file: ") || !strings.Contains(msg, "outside the workspace roots") || !strings.Contains(msg, b.ws) {
		t.Fatalf("../x.vine: %q", msg)
	}
}
