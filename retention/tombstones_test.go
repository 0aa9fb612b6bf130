package retention_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/internal/servicetest"
	"github.com/trellis/trellis/retention"
	"github.com/trellis/trellis/workflow"
)

// TestPruneForgedTombstonesKeepAgeAndFamily: a client with NATS
// credentials appends a tombstone (as a prune stopped before its record
// would leave) to finished runs and to a completed agent task. A young
// run and a young task stay (the cut applies to their last event before
// the tombstone), and so does a finished child run of an open parent
// once it is old (the parent still reads its end: removed, the parent
// would start the child again under the same id); an old run of no open
// family is removed, as after a stopped prune.
func TestPruneForgedTombstonesKeepAgeAndFamily(t *testing.T) {
	t.Parallel()
	tasks, b := servicetest.Start(t)
	store := b.Store
	ctx := ctxT(t)
	l := &runLog{t: t, store: store, last: map[string]uint64{}, prev: map[string]string{}}
	start := func(parent string) string {
		id := events.NewID(time.Now())
		l.add(id, workflow.Started, workflow.StartedPayload{Workflow: "w", Version: 1, Queue: "wq", Input: json.RawMessage(`{}`), Parent: parent})
		return id
	}
	end := func(id string) { l.add(id, workflow.Completed, workflow.EndPayload{Output: json.RawMessage(`"ok"`)}) }
	tomb := func(id string) { l.add(id, workflow.Pruned, workflow.PrunedPayload{Archive: "prune-forged.jsonl"}) }
	parent := start("")
	child := start(parent)
	l.add(parent, workflow.ChildStarted, workflow.EntryPayload{Pos: 0, Name: "kid", Children: []string{child}})
	end(child)
	tomb(child)
	lone := start("")
	end(lone)
	tomb(lone)
	last := start("") // the stream's last events stay
	end(last)
	if _, err := tasks.TaskCreate(ctx, trellis.AgentTaskCreateRequest{Name: "young", Description: "d", Objectives: []string{"Do"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := tasks.TaskComplete(ctx, trellis.AgentTaskCompleteRequest{Task: "young", Force: true}); err != nil {
		t.Fatal(err)
	}
	recs, tlast, err := store.Load(ctx, events.StreamTasks, events.TaskNameFilter("young"))
	if err != nil {
		t.Fatal(err)
	}
	env, err := events.NewEnvelope(time.Now(), events.AgentTaskPruned, "young", "mallory", events.TasksSchema, map[string]string{"archive": "prune-forged.jsonl"})
	if err != nil {
		t.Fatal(err)
	}
	env.Prev = events.Hash(recs[len(recs)-1].Envelope)
	if _, err := store.Append(ctx, events.TasksSubject("young", events.AgentTaskPruned), env, events.Expect{Filter: events.TaskNameFilter("young"), LastSeq: tlast}, env.ID); err != nil {
		t.Fatal(err)
	}
	runEvents := func(id string) int {
		recs, _, err := store.Load(ctx, events.StreamWorkflows, workflow.RunFilter(id))
		if err != nil {
			t.Fatalf("run %s: %v", id, err)
		}
		return len(recs)
	}
	dir := t.TempDir()
	// Everything is young: nothing goes.
	res, err := retention.Prune(ctx, store, retention.Options{OlderThan: time.Hour, Archive: dir})
	if err != nil {
		t.Fatal(err)
	}
	if res.Runs != 0 || res.AgentTasks != 0 || res.RunsKept["finished after the cut"] != 3 || res.AgentTasksKept["completed after the cut"] != 1 {
		t.Fatalf("a prune with every event young removed %d run(s) and %d agent task(s) (kept %v, %v); want none", res.Runs, res.AgentTasks, res.RunsKept, res.AgentTasksKept)
	}
	if n := runEvents(child); n != 3 {
		t.Fatalf("the tombstoned child holds %d events; want its 3", n)
	}
	if recs, _, err := store.Load(ctx, events.StreamTasks, events.TaskNameFilter("young")); err != nil || len(recs) < 3 || recs[len(recs)-1].Type != events.AgentTaskPruned {
		t.Fatalf("the young agent task holds %d events (%v)", len(recs), err)
	}
	// Old: the child of the open parent stays, the lone run goes.
	res, err = retention.Prune(ctx, store, retention.Options{OlderThan: time.Minute, Archive: dir, Now: later})
	if err != nil {
		t.Fatal(err)
	}
	if res.RunsKept["its parent run is open"] != 1 || res.Runs != 2 {
		t.Fatalf("pruned %d runs (kept %v); want the lone and last ones, the child of the open parent kept", res.Runs, res.RunsKept)
	}
	if n := runEvents(child); n != 3 {
		t.Fatalf("the tombstoned child of an open parent holds %d events after the prune; want its 3", n)
	}
}

// TestPruneRestartedTombstonedRun: a prune stopped after tombstoning a
// finished run; the run is started again under its id (Start with an
// explicit run id) and finishes; a prune then takes it, and the run
// moves while that prune archives it. The prune's tombstone, checked
// against the run's last event, fails: the run keeps every event,
// counted as changed during the prune.
func TestPruneRestartedTombstonedRun(t *testing.T) {
	t.Parallel()
	store := eventstest.Start(t).Store
	ctx := ctxT(t)
	l := &runLog{t: t, store: store, last: map[string]uint64{}, prev: map[string]string{}}
	started := workflow.StartedPayload{Workflow: "w", Version: 1, Queue: "wq", Input: json.RawMessage(`{}`)}
	id := events.NewID(time.Now())
	l.add(id, workflow.Started, started)
	l.add(id, workflow.Failed, workflow.EndPayload{Error: "boom"})
	l.add(id, workflow.Pruned, workflow.PrunedPayload{Archive: "prune-stopped.jsonl"})
	l.add(id, workflow.Started, started)
	l.add(id, workflow.Failed, workflow.EndPayload{Error: "boom again"})
	other := events.NewID(time.Now()) // the stream's last events stay
	l.add(other, workflow.Started, started)
	l.add(other, workflow.Completed, workflow.EndPayload{Output: json.RawMessage(`"ok"`)})
	moved := false
	res, err := retention.Prune(ctx, store, retention.Options{OlderThan: time.Minute, Archive: t.TempDir(), Now: later,
		AfterArchive: func(string) {
			if !moved {
				moved = true
				l.add(id, workflow.Retried, map[string]any{})
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	recs, _, err := store.Load(ctx, events.StreamWorkflows, workflow.RunFilter(id))
	if err != nil || len(recs) != 6 {
		t.Fatalf("the run that moved during the prune holds %d events (%v); want its 6", len(recs), err)
	}
	if res.RunsKept["changed during the prune"] != 1 || res.Runs != 1 {
		t.Fatalf("pruned %d runs (kept %v); want the other one, the moved one kept", res.Runs, res.RunsKept)
	}
}
