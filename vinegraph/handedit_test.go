package vinegraph_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/internal/servicetest"
	"github.com/trellis/trellis/vine"
	"github.com/trellis/trellis/vinegraph"
)

// saveLikeEditor writes text to path the way editors do: a new file
// renamed over the old one.
func saveLikeEditor(t *testing.T, path, text string) {
	t.Helper()
	tmp := path + ".editor-tmp"
	if err := os.WriteFile(tmp, []byte(text), 0o644); err != nil {
		t.Error(err)
		return
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Error(err)
	}
}

// addDecision inserts "> note" after the header line of node id.
func addDecision(text, id, note string) string {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "["+id+"]") {
			return strings.Join(append(lines[:i+1], append([]string{"> " + note}, lines[i+1:]...)...), "\n")
		}
	}
	return text
}

func (b *vineBundle) graph(t *testing.T, graphID string) (vine.Graph, []events.Recorded) {
	t.Helper()
	res, err := b.svc.VineExport(context.Background(), trellis.VineExportRequest{Graph: graphID})
	if err != nil {
		t.Fatal(err)
	}
	g, err := vine.Parse(res.Text)
	if err != nil {
		t.Fatal(err)
	}
	recs, _, err := b.Store.Load(context.Background(), events.StreamVine, events.GraphFilter(graphID))
	if err != nil {
		t.Fatal(err)
	}
	return g, recs
}

// TestVineStaleEditorSaveNeverUndoesClaim reproduces issue 19: an editor
// buffer loaded before a claim and saved after it recorded the whole file
// as a snapshot, undoing the claim, so a second agent claimed the same
// task. The save is merged instead: its own change is kept, the claim
// stays, the reverted status is reported as a conflict, and the edit is
// attributed to hand-edit with the agent that noticed it.
func TestVineStaleEditorSaveNeverUndoesClaim(t *testing.T) {
	t.Parallel()
	b := setupVine(t)
	ctx := context.Background()
	path := b.file(t, "plan.vine", servicetest.Chain)
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	buffer, err := os.ReadFile(path) // the editor loads the file
	if err != nil {
		t.Fatal(err)
	}
	c1, err := b.svc.VineClaim(ctx, trellis.VineClaimRequest{File: path, Agent: "agent-1"})
	if err != nil || c1.Node == nil || c1.Node.Node.ID != "a" {
		t.Fatalf("agent-1 claim: %+v %v", c1, err)
	}
	// The file shows the claim; then the person saves the stale buffer
	// with an edit of their own.
	waitFile(t, path, holds("[a] Analyse (started)"))
	saveLikeEditor(t, path, addDecision(string(buffer), "b", "use the new API"))
	if err := os.Chmod(path, 0o640); err != nil { // the person's file mode
		t.Fatal(err)
	}
	c2, err := b.svc.VineClaim(ctx, trellis.VineClaimRequest{File: path, Agent: "agent-2", ID: "a"})
	if trellis.ErrorCode(err) != trellis.CodeConflict {
		t.Fatalf("agent-2 claimed a task agent-1 holds: %+v %v", c2, err)
	}
	c2, err = b.svc.VineClaim(ctx, trellis.VineClaimRequest{File: path, Agent: "agent-2"})
	if err != nil || c2.Node != nil {
		t.Fatalf("agent-2 got a task although none is ready: %+v %v", c2, err)
	}
	g, recs := b.graph(t, c1.GraphID)
	if a, _ := g.Lookup("a"); a.Status != vine.StatusStarted {
		t.Fatalf("the claim was undone: a is %s", a.Status)
	}
	if bn, _ := g.Lookup("b"); len(bn.Decisions) != 1 || bn.Decisions[0] != "use the new API" {
		t.Fatalf("the person's edit was lost: %+v", bn)
	}
	var hand *events.Recorded
	for i, r := range recs {
		if r.Type == events.GraphHandEdited {
			hand = &recs[i]
		}
	}
	if hand == nil || hand.Actor != vinegraph.HandEditActor {
		t.Fatalf("no hand_edited event by %q: %+v", vinegraph.HandEditActor, recs)
	}
	var p events.GraphSnapshotPayload
	if err := hand.DecodePayload(&p); err != nil {
		t.Fatal(err)
	}
	if p.NoticedBy != "agent-2" || len(p.Conflicts) != 1 || p.Conflicts[0].ID != "a" || p.Conflicts[0].Field != "status" {
		t.Fatalf("hand edit noticed by %q, conflicts %+v", p.NoticedBy, p.Conflicts)
	}
	// The file is rewritten with the merge, keeping its mode.
	if _, err := b.svc.VineWrite(ctx, trellis.VineWriteRequest{File: path, Agent: "agent-1",
		Operations: []vine.Op{{Op: vine.OpSetStatus, ID: "a", Status: vine.StatusComplete}}}); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if !strings.Contains(string(data), "> use the new API") || !strings.Contains(string(data), "[a] Analyse (complete)") {
		t.Fatalf("file:\n%s", data)
	}
	if info, _ := os.Stat(path); info.Mode().Perm() != 0o640 {
		t.Fatalf("rewrite changed the mode to %v", info.Mode().Perm())
	}
}

// TestVineHumanRevertIsMerged: a person restores an older version of the
// file (git checkout): its changes are merged and its reverted statuses
// reported, not silently overwritten.
func TestVineHumanRevertIsMerged(t *testing.T) {
	t.Parallel()
	b := setupVine(t)
	ctx := context.Background()
	path := b.file(t, "plan.vine", addDecision(servicetest.Chain, "root", "first plan"))
	old, _ := os.ReadFile(path)
	if _, err := b.svc.VineWrite(ctx, trellis.VineWriteRequest{File: path, Agent: "agent-1", Operations: []vine.Op{
		{Op: vine.OpUpdate, ID: "root", Decisions: []string{"second thought"}},
		{Op: vine.OpClaim, ID: "a"}}}); err != nil {
		t.Fatal(err)
	}
	saveLikeEditor(t, path, strings.Replace(string(old), "> first plan\n", "", 1)) // the revert, with the first decision dropped too
	info, err := b.svc.VineImport(ctx, trellis.VineFileRequest{File: path, Agent: "agent-2"})
	if err != nil || !info.HandEdit {
		t.Fatalf("revert not recorded: %+v %v", info, err)
	}
	g, _ := b.graph(t, info.GraphID)
	root, _ := g.Lookup("root")
	if a, _ := g.Lookup("a"); a.Status != vine.StatusStarted {
		t.Fatalf("the revert undid the claim: %s", a.Status)
	}
	if strings.Join(root.Decisions, "|") != "" {
		t.Fatalf("the revert's own change (decisions) was not merged: %q", root.Decisions)
	}
}

// TestVineHandEditsUnderLoad reproduces issue 19's trial: three agents
// claim in parallel while a person adds a line every few milliseconds
// (load, edit, save). Every line ends up in the log, and no task is
// claimed twice.
func TestVineHandEditsUnderLoad(t *testing.T) {
	t.Parallel()
	b := setupVine(t)
	ctx := context.Background()
	const tasks = 15
	var sb strings.Builder
	sb.WriteString("vine 1.2.0\n---\n[root] Ship it (notstarted)\n")
	for i := 0; i < tasks; i++ {
		fmt.Fprintf(&sb, "-> t%d\n", i)
	}
	for i := 0; i < tasks; i++ {
		fmt.Fprintf(&sb, "---\n[t%d] Task %d (notstarted)\n", i, i)
	}
	path := b.file(t, "plan.vine", sb.String())
	if _, err := b.svc.VineImport(ctx, trellis.VineFileRequest{File: path, Agent: "setup"}); err != nil {
		t.Fatal(err)
	}
	var done atomic.Bool
	var notes []string
	// dropped are notes the person's own buffer no longer held when it
	// was saved again: a read that landed in the one-call window of an
	// agent's exchange (see writeFileCAS) shows the agent's text, and the
	// save then deletes the line like any edit that removes it. The log
	// follows the file there; every other line must be in the log.
	dropped := map[string]bool{}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the person
		defer wg.Done()
		for i := 0; !done.Load() || i < 30; i++ {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Error(err)
				return
			}
			for _, n := range notes {
				if !strings.Contains(string(data), "> "+n+"\n") {
					dropped[n] = true
				}
			}
			note := fmt.Sprintf("note %d", i)
			notes = append(notes, note)
			saveLikeEditor(t, path, addDecision(string(data), "root", note))
			time.Sleep(3 * time.Millisecond)
		}
	}()
	var mu sync.Mutex
	claimed := map[string]string{}
	var agents sync.WaitGroup
	for a := 0; a < 3; a++ {
		agent := fmt.Sprintf("agent-%d", a)
		agents.Add(1)
		go func() {
			defer agents.Done()
			for {
				res, err := b.svc.VineClaim(ctx, trellis.VineClaimRequest{File: path, Agent: agent})
				if err != nil {
					if trellis.ErrorCode(err) == trellis.CodeConflict {
						continue
					}
					t.Error(err)
					return
				}
				if res.Node == nil {
					return
				}
				mu.Lock()
				if other, ok := claimed[res.Node.Node.ID]; ok {
					t.Errorf("%s claimed by %s and %s", res.Node.Node.ID, other, agent)
				}
				claimed[res.Node.Node.ID] = agent
				mu.Unlock()
				time.Sleep(2 * time.Millisecond)
			}
		}()
	}
	agents.Wait()
	done.Store(true)
	wg.Wait()
	// The last save is merged by the next command.
	info, err := b.svc.VineImport(ctx, trellis.VineFileRequest{File: path, Agent: "checker"})
	if err != nil {
		t.Fatal(err)
	}
	g, _ := b.graph(t, info.GraphID)
	root, _ := g.Lookup("root")
	t.Logf("import %+v; root decisions %d", info, len(root.Decisions))
	have := map[string]bool{}
	for _, d := range root.Decisions {
		have[d] = true
	}
	lost := 0
	for _, n := range notes {
		switch {
		case have[n]:
		case dropped[n]:
			t.Logf("%s was dropped by the person's own later save (a read in an exchange's window)", n)
		default:
			lost++
			t.Errorf("%s is not in the log", n)
		}
	}
	if len(claimed) != tasks {
		t.Errorf("%d of %d tasks claimed", len(claimed), tasks)
	}
	for i := 0; i < tasks; i++ {
		if n, _ := g.Lookup(fmt.Sprintf("t%d", i)); n.Status != vine.StatusStarted {
			t.Errorf("t%d is %s in the log (a claim was undone)", i, n.Status)
		}
	}
	t.Logf("%d edits, %d lost, %d claims", len(notes), lost, len(claimed))
}

// TestVineSecondCompletionRecordedOnce reproduces issue 19: two agents
// both completed the same node (set_status complete twice in the log),
// and both counted it. The second is a no-op: one event, one count.
func TestVineSecondCompletionRecordedOnce(t *testing.T) {
	t.Parallel()
	b := setupVine(t)
	ctx := context.Background()
	path := b.file(t, "plan.vine", servicetest.Chain)
	info, err := b.svc.VineImport(ctx, trellis.VineFileRequest{File: path, Agent: "setup"})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var changed atomic.Int32
	for i := 0; i < 4; i++ {
		agent := fmt.Sprintf("agent-%d", i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := b.svc.VineWrite(ctx, trellis.VineWriteRequest{File: path, Agent: agent,
				Operations: []vine.Op{{Op: vine.OpSetStatus, ID: "a", Status: vine.StatusComplete}}})
			if err != nil {
				t.Error(err)
				return
			}
			if len(res.Results) != 1 {
				t.Errorf("results %+v", res.Results)
				return
			}
			if !res.Results[0].Unchanged {
				changed.Add(1)
			}
		}()
	}
	wg.Wait()
	if n := changed.Load(); n != 1 {
		t.Fatalf("%d agents were told they completed a", n)
	}
	_, recs := b.graph(t, info.GraphID)
	completions := 0
	for _, r := range recs {
		if r.Type == events.GraphBatchApplied {
			completions++
		}
	}
	if completions != 1 {
		t.Fatalf("%d batch_applied events for one completion", completions)
	}
}
