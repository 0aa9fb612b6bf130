package workflow_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/workflow"
)

// TestForgedTombstoneRemovesNoOpenRun: a tombstone (workflow.Pruned) on a
// run that has not ended was not appended by a prune (a prune tombstones
// finished runs only, checked against their last event): the run folds on
// as if it were not there, so `workflow show` still finds it and a parent
// does not start a child of the same id again. On a finished run the
// tombstone removes it.
func TestForgedTombstoneRemovesNoOpenRun(t *testing.T) {
	t.Parallel()
	id := events.NewID(time.Now())
	rec := func(seq uint64, typ string, payload any) events.Recorded {
		t.Helper()
		env, err := events.NewEnvelope(time.Now(), typ, id, "mallory", 1, payload)
		if err != nil {
			t.Fatal(err)
		}
		return events.Recorded{Envelope: env, Stream: events.StreamWorkflows, Subject: workflow.RunSubject(id, typ), Seq: seq}
	}
	fold := func(r *workflow.Run, rs ...events.Recorded) *workflow.Run {
		t.Helper()
		for _, x := range rs {
			var err error
			if r, err = workflow.FoldRun(r, x); err != nil {
				t.Fatal(err)
			}
		}
		return r
	}
	started := rec(1, workflow.Started, workflow.StartedPayload{Workflow: "w", Version: 1, Queue: "wq", Input: json.RawMessage(`{}`)})
	tomb := rec(2, workflow.Pruned, workflow.PrunedPayload{Archive: "prune-forged.jsonl"})
	r := fold(nil, started, tomb)
	if r == nil || r.Status != workflow.StatusRunning || r.RunID != id {
		t.Fatalf("a running run after a tombstone: %+v; want it running", r)
	}
	ended := rec(3, workflow.Completed, workflow.EndPayload{Output: json.RawMessage(`"ok"`)})
	if r := fold(nil, started, ended, rec(4, workflow.Pruned, workflow.PrunedPayload{Archive: "prune-x.jsonl"})); r != nil {
		t.Fatalf("a completed run after its tombstone: %+v; want none", r)
	}
	if r := fold(nil, rec(5, workflow.Pruned, workflow.PrunedPayload{Archive: "prune-x.jsonl"})); r != nil {
		t.Fatalf("a tombstone alone (the run's events purged): %+v; want none", r)
	}
}
