package vinegraph_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/handlers"
	"github.com/trellis/trellis/internal/servicetest"
	"github.com/trellis/trellis/vinegraph"
)

// TestVineRelativeFileResolvesAgainstFirstRoot: a relative file (as HTTP
// and MCP clients send it) names a file under the first workspace root,
// whatever the server's working directory is.
func TestVineRelativeFileResolvesAgainstFirstRoot(t *testing.T) {
	t.Parallel()
	nb := eventstest.Start(t)
	first, second := t.TempDir(), t.TempDir()
	svc := handlers.NewService(nb.Store, handlers.ServiceConfig{DataDir: t.TempDir(), Vine: vinegraph.Config{Roots: []string{first, second}}})
	if err := svc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Close() })
	ctx := context.Background()
	if err := os.MkdirAll(filepath.Join(first, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(first, "sub", "plan.vine"), []byte(servicetest.Chain), 0o644); err != nil {
		t.Fatal(err)
	}
	// The same name in the second root and in the working directory must
	// not be picked.
	if err := os.WriteFile(filepath.Join(second, "plan.vine"), []byte(servicetest.Chain), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{"sub/plan.vine", "./sub/plan.vine", "sub/../sub/plan.vine"} {
		info, err := svc.VineImport(ctx, trellis.VineFileRequest{File: rel})
		if err != nil {
			t.Fatalf("%s: %v", rel, err)
		}
		if want := filepath.Join(first, "sub", "plan.vine"); info.File != want || info.Path != "sub/plan.vine" || info.GraphID != events.GraphID("sub/plan.vine") {
			t.Fatalf("%s resolved to %+v; want %s", rel, info, want)
		}
	}
	if _, err := svc.VineNext(ctx, trellis.VineFileRequest{File: "plan.vine"}); trellis.ErrorCode(err) != trellis.CodeNotFound || !strings.Contains(err.Error(), filepath.Join(first, "plan.vine")) {
		t.Fatalf("plan.vine (only in the second root) = %v; want not_found naming %s", err, filepath.Join(first, "plan.vine"))
	}
	_, err := svc.VineNext(ctx, trellis.VineFileRequest{File: "../escape.vine"})
	if trellis.ErrorCode(err) != trellis.CodeInvalid || !strings.Contains(err.Error(), "outside the workspace roots") {
		t.Fatalf("../escape.vine = %v; want invalid, outside the workspace roots", err)
	}
}

// TestVineOutsideRootsSaysHowToFix: a file outside the roots is refused
// with the file, the roots and the flag that fixes it; a server shared by
// clients says to restart `trellis serve` with it.
func TestVineOutsideRootsSaysHowToFix(t *testing.T) {
	t.Parallel()
	nb := eventstest.Start(t)
	ws, elsewhere := t.TempDir(), t.TempDir()
	outside := filepath.Join(elsewhere, "plan.vine")
	if err := os.WriteFile(outside, []byte(servicetest.Chain), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		served bool
		want   []string
	}{
		{false, []string{outside, ws, "--workspace", "TRELLIS_WORKSPACE"}},
		{true, []string{outside, ws, "trellis serve --workspace", "running server"}},
	} {
		svc := handlers.NewService(nb.Store, handlers.ServiceConfig{DataDir: t.TempDir(), Vine: vinegraph.Config{Roots: []string{ws}, Served: c.served}})
		_, err := svc.VineNext(context.Background(), trellis.VineFileRequest{File: outside})
		if trellis.ErrorCode(err) != trellis.CodeInvalid {
			t.Fatalf("served=%v: %v; want invalid", c.served, err)
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("served=%v: %q does not mention %q", c.served, err, w)
			}
		}
	}
}
