package vinegraph_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/handlers"
	"github.com/trellis/trellis/vinegraph"
)

// broadGraph is a graph of about n nodes with many tasks ready to start:
// the root depends on n/50 groups, each on 49 leaves, every node with a
// description line (about 130 bytes a node, as `trellis bench vine`'s
// 50,000-node graph).
func broadGraph(n int) string {
	var b strings.Builder
	b.WriteString("vine 1.2.0\n---\n[root] Root (notstarted)\nThe goal.\n")
	groups := n / 50
	for g := 0; g < groups; g++ {
		fmt.Fprintf(&b, "-> g%05d\n", g)
	}
	for g := 0; g < groups; g++ {
		fmt.Fprintf(&b, "---\n[g%05d] Group %d (notstarted)\nDescription of group %d: a longer description, as real plans have, of what to do and why.\n", g, g, g)
		for l := 0; l < 49; l++ {
			fmt.Fprintf(&b, "-> l%05d-%02d\n", g, l)
		}
	}
	for g := 0; g < groups; g++ {
		for l := 0; l < 49; l++ {
			fmt.Fprintf(&b, "---\n[l%05d-%02d] Leaf %d.%d (notstarted)\nDescription of leaf %d.%d: a longer description, as real plans have, of what to do and why.\n", g, l, g, l, g, l)
		}
	}
	return b.String()
}

// BenchmarkClaimLargeGraph times one claim (reconcile the file, decide,
// checked append, rewrite the file) on a 50,000-node graph, fsync on.
func BenchmarkClaimLargeGraph(b *testing.B) {
	bundle := eventstest.Start(b, eventstest.Options{Durable: true})
	ws := b.TempDir()
	svc := handlers.NewService(bundle.Store, handlers.ServiceConfig{DataDir: b.TempDir(), Vine: vinegraph.Config{Roots: []string{ws}}})
	ctx := context.Background()
	if err := svc.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer svc.Close()
	file := filepath.Join(ws, "big.vine")
	if err := os.WriteFile(file, []byte(broadGraph(50000)), 0o644); err != nil {
		b.Fatal(err)
	}
	if _, err := svc.VineImport(ctx, trellis.VineFileRequest{File: file}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c, err := svc.VineClaim(ctx, trellis.VineClaimRequest{File: file, Agent: "bench"})
		if err != nil || c.Node == nil {
			b.Fatalf("claim %d: %+v, %v", i, c, err)
		}
	}
}
