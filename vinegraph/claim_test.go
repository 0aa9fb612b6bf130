package vinegraph_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/handlers"
	"github.com/trellis/trellis/internal/servicetest"
	"github.com/trellis/trellis/vine"
	"github.com/trellis/trellis/vinegraph"
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
		if err != nil || c.Node == nil || seen[c.Node.Node.ID] {
			t.Fatalf("claim %d: %+v, %v", i, c, err)
		}
		seen[c.Node.Node.ID] = true
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

// TestVineLastReadyTaskRacedByTwoServers: two servers on one log (two
// handlers, each with its own kept texts, frontier indexes and file
// writer) and four agents on each race for the one task ready to start,
// after each server has read the graph (its caches warm). Exactly one
// agent gets it; the others get nothing or a conflict; the log holds one
// claim and no hand edit, and the file ends as the log.
func TestVineLastReadyTaskRacedByTwoServers(t *testing.T) {
	t.Parallel()
	b := setupVine(t)
	ctx := context.Background()
	other := handlers.NewService(b.Store, handlers.ServiceConfig{DataDir: t.TempDir(), Vine: vinegraph.Config{Roots: []string{b.ws}}})
	if err := other.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Close() })
	for round := 0; round < 3; round++ {
		f := b.file(t, fmt.Sprintf("race%d.vine", round), servicetest.Chain)
		for _, s := range []*handlers.Service{b.svc, other} {
			if _, err := s.VineNext(ctx, trellis.VineFileRequest{File: f}); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		var winners []string
		for i := 0; i < 8; i++ {
			s := b.svc
			if i%2 == 1 {
				s = other
			}
			agent := fmt.Sprintf("agent-%d", i)
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := s.VineClaim(ctx, trellis.VineClaimRequest{File: f, Agent: agent})
				if err != nil && trellis.ErrorCode(err) != trellis.CodeConflict {
					t.Error(err)
					return
				}
				if err == nil && c.Node != nil {
					mu.Lock()
					winners = append(winners, agent+":"+c.Node.Node.ID)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if len(winners) != 1 || !strings.HasSuffix(winners[0], ":a") {
			t.Fatalf("round %d: winners %v; want exactly one agent with a", round, winners)
		}
		gid := events.GraphID(fmt.Sprintf("race%d.vine", round))
		if evs := b.events(t, gid); !slices.Equal(evs, []string{"imported", "batch_applied"}) {
			t.Fatalf("round %d: events %v", round, evs)
		}
		exp, err := b.svc.VineExport(ctx, trellis.VineExportRequest{Graph: gid})
		if err != nil || !strings.Contains(exp.Text, "[a] Analyse (started)") {
			t.Fatalf("export: %v\n%s", err, exp.Text)
		}
		waitFile(t, f, func(s string) bool { return s == exp.Text })
	}
}

// TestVineEditBetweenClaimsIsMerged: with every kept text warm, a person
// edits the file in place between two claims, keeping its size (the
// file's stamp may not tell): the next claim compares the text, finds
// the edit and merges it; the claims stay.
func TestVineEditBetweenClaimsIsMerged(t *testing.T) {
	t.Parallel()
	b := setupVine(t)
	ctx := context.Background()
	f := b.file(t, "plan.vine", broadGraph(500))
	c1, err := b.svc.VineClaim(ctx, trellis.VineClaimRequest{File: f, Agent: "agent-1"})
	if err != nil || c1.Node == nil {
		t.Fatalf("claim: %+v %v", c1, err)
	}
	text := waitFile(t, f, holds("("+string(vine.StatusStarted)+")"))
	edited := strings.Replace(text, "Description of leaf 3.7:", "Description of leaf 3.7;", 1)
	if edited == text {
		t.Fatal("nothing to edit")
	}
	fh, err := os.OpenFile(f, os.O_WRONLY, 0) // in place: same inode, same size
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fh.WriteAt([]byte(edited), 0); err != nil {
		t.Fatal(err)
	}
	_ = fh.Close()
	c2, err := b.svc.VineClaim(ctx, trellis.VineClaimRequest{File: f, Agent: "agent-2"})
	if err != nil || c2.Node == nil || c2.Node.Node.ID == c1.Node.Node.ID {
		t.Fatalf("second claim: %+v %v", c2, err)
	}
	g, recs := b.graph(t, c1.GraphID)
	var types []string
	for _, r := range recs {
		types = append(types, r.Type)
	}
	if !slices.Equal(types, []string{"imported", "batch_applied", "hand_edited", "batch_applied"}) {
		t.Fatalf("events %v", types)
	}
	leaf, _ := g.Lookup("l00003-07")
	first, _ := g.Lookup(c1.Node.Node.ID)
	if !strings.Contains(leaf.Description, "leaf 3.7;") || first.Status != vine.StatusStarted {
		t.Fatalf("edit or claim lost: %q, %s", leaf.Description, first.Status)
	}
	waitFile(t, f, holds("leaf 3.7;", "["+c2.Node.Node.ID+"]"))
}

// TestVineBrokenFileBetweenClaims: a file cut short or emptied between
// claims is refused with a clear error naming the fix; nothing is
// recorded, the file is left as it is, and the log keeps every claim
// (export restores it).
func TestVineBrokenFileBetweenClaims(t *testing.T) {
	t.Parallel()
	b := setupVine(t)
	ctx := context.Background()
	f := b.file(t, "plan.vine", broadGraph(500))
	c1, err := b.svc.VineClaim(ctx, trellis.VineClaimRequest{File: f, Agent: "agent-1"})
	if err != nil || c1.Node == nil {
		t.Fatalf("claim: %+v %v", c1, err)
	}
	text := waitFile(t, f, holds("(started)"))
	for _, broken := range []string{text[:len(text)/2] + "\n[x] (", "", "vine 9.9.9\n---\n[root] Root (notstarted)\n"} {
		if err := os.WriteFile(f, []byte(broken), 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := b.svc.VineClaim(ctx, trellis.VineClaimRequest{File: f, Agent: "agent-2"})
		if trellis.ErrorCode(err) != trellis.CodeInvalid || !strings.Contains(err.Error(), "not a valid graph") || !strings.Contains(err.Error(), "trellis vine export") {
			t.Fatalf("claim on a broken file: %+v, %v", c, err)
		}
		if got, _ := os.ReadFile(f); string(got) != broken {
			t.Fatalf("the refused claim changed the broken file")
		}
		if evs := b.events(t, c1.GraphID); !slices.Equal(evs, []string{"imported", "batch_applied"}) {
			t.Fatalf("events %v", evs)
		}
	}
	exp, err := b.svc.VineExport(ctx, trellis.VineExportRequest{Graph: c1.GraphID})
	if err != nil || exp.Text != text {
		t.Fatalf("export after the refusals: %v", err)
	}
}

// TestVineEditKeepingStampIsMerged: a claim after the file was written
// takes it for the text written without reading it only while its stamp
// and change time are unchanged. An edit in place of the same size whose
// modification time is then set back to the written one (as `cp -p` or
// `touch -d` would leave it: the stamp of the racily-clean case) is still
// read and merged.
func TestVineEditKeepingStampIsMerged(t *testing.T) {
	t.Parallel()
	b := setupVine(t)
	ctx := context.Background()
	f := b.file(t, "plan.vine", broadGraph(500))
	c1, err := b.svc.VineClaim(ctx, trellis.VineClaimRequest{File: f, Agent: "agent-1"})
	if err != nil || c1.Node == nil {
		t.Fatalf("claim: %+v %v", c1, err)
	}
	text := waitFile(t, f, holds("("+string(vine.StatusStarted)+")"))
	info, err := os.Stat(f)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(text, "Description of leaf 3.7:", "Description of leaf 3.7;", 1)
	if edited == text {
		t.Fatal("nothing to edit")
	}
	fh, err := os.OpenFile(f, os.O_WRONLY, 0) // in place: same inode, same size
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fh.WriteAt([]byte(edited), 0); err != nil {
		t.Fatal(err)
	}
	_ = fh.Close()
	if err := os.Chtimes(f, info.ModTime(), info.ModTime()); err != nil {
		t.Fatal(err)
	}
	if now, err := os.Stat(f); err != nil || !now.ModTime().Equal(info.ModTime()) || now.Size() != info.Size() {
		t.Fatalf("the edit changed the stamp: %v %v", now, err)
	}
	c2, err := b.svc.VineClaim(ctx, trellis.VineClaimRequest{File: f, Agent: "agent-2"})
	if err != nil || c2.Node == nil || c2.Node.Node.ID == c1.Node.Node.ID {
		t.Fatalf("second claim: %+v %v", c2, err)
	}
	g, _ := b.graph(t, c1.GraphID)
	leaf, _ := g.Lookup("l00003-07")
	if !strings.Contains(leaf.Description, "leaf 3.7;") {
		t.Fatalf("edit lost: %q", leaf.Description)
	}
	waitFile(t, f, holds("leaf 3.7;", "["+c2.Node.Node.ID+"]"))
}
