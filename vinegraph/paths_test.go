package vinegraph_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/auth"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/internal/servicetest"
	"github.com/trellis/trellis/vine"
)

// TestVineChildPathsStayInTheWorkspace: the child files a worker's
// request names (extract_to_ref's vine, add_ref's vine, update_ref_uri's
// uri, vine_expand's child_file) are judged where they really lead:
// through a symlinked directory out of the roots is refused, a name that
// is not .vine is refused, an existing file is never overwritten. Each
// refusal is invalid, names the operation, records nothing and leaves
// every file as it was.
func TestVineChildPathsStayInTheWorkspace(t *testing.T) {
	t.Parallel()
	b := setupVine(t)
	ctx := auth.WithIdentity(context.Background(), auth.Identity{Name: "w1", Role: auth.RoleWorker})
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(b.ws, "shared")); err != nil {
		t.Fatal(err)
	}
	readme := filepath.Join(b.ws, "README.md")
	if err := os.WriteFile(readme, []byte("# the user's readme\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	existing := b.file(t, "existing.vine", servicetest.Chain)
	plan := b.file(t, "plan.vine", servicetest.Chain)
	if _, err := b.svc.VineImport(ctx, trellis.VineFileRequest{File: plan}); err != nil {
		t.Fatal(err)
	}
	before := b.events(t, graphIDOf(t, b, plan))
	cases := []struct {
		name string
		op   vine.Op
	}{
		{"extract over the README", vine.Op{Op: vine.OpExtractToRef, ID: "a", Vine: "./README.md"}},
		{"extract through a symlinked dir", vine.Op{Op: vine.OpExtractToRef, ID: "a", Vine: "./shared/x.vine"}},
		{"extract over an existing .vine", vine.Op{Op: vine.OpExtractToRef, ID: "a", Vine: "./existing.vine"}},
		{"extract to a non-.vine name", vine.Op{Op: vine.OpExtractToRef, ID: "a", Vine: "./notes.txt"}},
		{"extract with ..", vine.Op{Op: vine.OpExtractToRef, ID: "a", Vine: "../../x.vine"}},
		{"add_ref through a symlinked dir", vine.Op{Op: vine.OpAddRef, ID: "r", Name: "R", Vine: "shared/y.vine"}},
		{"add_ref to a non-.vine name", vine.Op{Op: vine.OpAddRef, ID: "r", Name: "R", Vine: "README.md"}},
		{"update_ref_uri through a symlinked dir", vine.Op{Op: vine.OpUpdateRefURI, ID: "r", URI: "shared/y.vine"}},
	}
	for _, c := range cases {
		_, err := b.svc.VineWrite(ctx, trellis.VineWriteRequest{File: plan, Operations: []vine.Op{c.op}})
		if trellis.ErrorCode(err) != trellis.CodeInvalid {
			t.Errorf("%s: %v; want invalid", c.name, err)
		}
	}
	if _, err := b.svc.VineExpand(ctx, trellis.VineExpandRequest{File: plan, RefID: "a", ChildFile: "shared/z.vine"}); trellis.ErrorCode(err) != trellis.CodeInvalid {
		t.Errorf("expand through a symlinked dir: %v; want invalid", err)
	}
	if got, _ := os.ReadFile(readme); string(got) != "# the user's readme\n" {
		t.Errorf("README became %q", got)
	}
	if got, _ := os.ReadFile(existing); string(got) != servicetest.Chain {
		t.Errorf("existing.vine was overwritten: %q", got)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("files written outside the workspace: %v", ents)
	}
	if _, err := os.Stat(filepath.Join(b.ws, "notes.txt")); err == nil {
		t.Error("notes.txt was written")
	}
	if after := b.events(t, graphIDOf(t, b, plan)); len(after) != len(before) {
		t.Errorf("refused writes recorded events: %v -> %v", before, after)
	}
	// A fresh .vine child inside the workspace still works.
	if _, err := b.svc.VineWrite(ctx, trellis.VineWriteRequest{File: plan, Operations: []vine.Op{{Op: vine.OpExtractToRef, ID: "a", Vine: "./sub/a.vine"}}}); err != nil {
		t.Fatalf("extract to a fresh child: %v", err)
	}
}

// TestVineFileSymlinkOutIsRefused: a .vine file inside the workspace
// that is a symbolic link to a file outside it is not read (a reader
// would read any VINE file of the machine), and a file that is not VINE
// never has its content echoed in the error (a .env's first line).
func TestVineFileSymlinkOutIsRefused(t *testing.T) {
	t.Parallel()
	b := setupVine(t)
	ctx := auth.WithIdentity(context.Background(), auth.Identity{Name: "r1", Role: auth.RoleReader})
	outside := t.TempDir()
	secretGraph := filepath.Join(outside, "secret.vine")
	if err := os.WriteFile(secretGraph, []byte(strings.Replace(servicetest.Chain, "Ship it", "Secret plan", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secretGraph, filepath.Join(b.ws, "link.vine")); err != nil {
		t.Fatal(err)
	}
	fr, err := b.svc.VineNext(ctx, trellis.VineFileRequest{File: "link.vine"})
	if trellis.ErrorCode(err) != trellis.CodeInvalid || strings.Contains(err.Error(), "Secret plan") {
		t.Fatalf("a symlink out of the workspace: %+v, %v; want invalid", fr, err)
	}
	env := filepath.Join(b.ws, "dot.vine")
	if err := os.WriteFile(env, []byte("DB_PASSWORD=hunter2\nOTHER=x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = b.svc.VineNext(ctx, trellis.VineFileRequest{File: "dot.vine"})
	if trellis.ErrorCode(err) != trellis.CodeInvalid || strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "DB_PASSWORD") {
		t.Fatalf("a file that is not VINE: %v; want invalid without its content", err)
	}
}

// graphIDOf returns the graph id of a file in the workspace.
func graphIDOf(t *testing.T, b *vineBundle, file string) string {
	t.Helper()
	rel, err := filepath.Rel(b.ws, file)
	if err != nil {
		t.Fatal(err)
	}
	return events.GraphID(filepath.ToSlash(rel))
}
