package vinegraph_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
)

// waitFile waits until the file at path holds a text ok accepts (a claim
// returns once its event is recorded; the file follows right after) and
// returns it; it fails after a minute.
func waitFile(t *testing.T, path string, ok func(string) bool) string {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		data, err := os.ReadFile(path)
		if err == nil && ok(string(data)) {
			return string(data)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never held the expected text (%v):\n%s", path, err, data)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// holds returns a predicate true for a text containing every one of want.
func holds(want ...string) func(string) bool {
	return func(s string) bool {
		for _, w := range want {
			if !strings.Contains(s, w) {
				return false
			}
		}
		return true
	}
}

// TestVineClaimsWhileTheFileIsWrittenAreNoHandEdit: claims return before
// their file is written, so a claim reads the file while the writer
// replaces it (once or several times). Whatever text of this process it
// reads is a state of the log, never a person's edit: no hand_edited
// event, every claim recorded once, and the file ends as the log.
func TestVineClaimsWhileTheFileIsWrittenAreNoHandEdit(t *testing.T) {
	t.Parallel()
	b := setupVine(t)
	ctx := context.Background()
	f := b.file(t, "wide.vine", broadGraph(10000))
	info, err := b.svc.VineImport(ctx, trellis.VineFileRequest{File: f})
	if err != nil {
		t.Fatal(err)
	}
	const claims = 40
	seen := map[string]bool{}
	for i := 0; i < claims; i++ {
		c, err := b.svc.VineClaim(ctx, trellis.VineClaimRequest{File: f, Agent: "agent-1"})
		if err != nil || c.Task == nil || seen[c.Task.Task.ID] {
			t.Fatalf("claim %d: %+v, %v", i, c, err)
		}
		seen[c.Task.Task.ID] = true
	}
	evs := b.events(t, info.GraphID)
	if len(evs) != claims+1 || slices.Contains(evs, events.GraphHandEdited) {
		t.Fatalf("events: %v; want imported and %d batch_applied", evs, claims)
	}
	exp, err := b.svc.VineExport(ctx, trellis.VineExportRequest{Graph: info.GraphID})
	if err != nil {
		t.Fatal(err)
	}
	waitFile(t, f, func(s string) bool { return s == exp.Text })
}
