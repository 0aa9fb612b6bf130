package vinegraph

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
)

const twoLeaves = `vine 1.2.0
---
[root] Ship it (notstarted)
-> a
-> b
---
[a] Analyse (notstarted)
---
[b] Build (notstarted)
`

// TestVineGraphCacheEvicts: with room for one graph, working on two in
// turn evicts each; the evicted graph is loaded again from the log and
// its commands go on as if it had stayed (no spurious hand edit, no
// conflict), and the cache never holds more than one idle graph.
func TestVineGraphCacheEvicts(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ws := t.TempDir()
	v := NewHandler(b.Store, Config{Roots: []string{ws}, CacheSize: 1})
	files := map[string]string{}
	for _, name := range []string{"one.vine", "two.vine"} {
		files[name] = filepath.Join(ws, name)
		if err := os.WriteFile(files[name], []byte(twoLeaves), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for round := 0; round < 2; round++ {
		for _, name := range []string{"one.vine", "two.vine"} {
			c, err := v.Claim(ctx, trellis.VineClaimRequest{File: files[name], Agent: "agent-" + name})
			if err != nil || c.Node == nil {
				t.Fatalf("round %d claim on %s: %+v, %v", round, name, c, err)
			}
			if n := v.graphs.CacheLen(); n != 1 {
				t.Fatalf("cache holds %d graphs", n)
			}
		}
	}
	for _, name := range []string{"one.vine", "two.vine"} {
		recs, _, err := b.Store.Load(ctx, events.StreamVine, events.GraphFilter(events.GraphID(name)))
		if err != nil {
			t.Fatal(err)
		}
		var types []string
		for _, r := range recs {
			types = append(types, r.Type)
		}
		if got := strings.Join(types, " "); got != "imported batch_applied batch_applied" {
			t.Fatalf("%s events after evictions: %s", name, got)
		}
	}
}
