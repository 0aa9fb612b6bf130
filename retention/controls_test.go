package retention_test

import (
	"testing"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/taskqueue"
)

// TestPruneCutsQueueControls: a queue paused and resumed 150 times (its
// controls snapshot themselves every 64 events), with a task finished and
// one queued, is pruned: the finished task goes, the controls are cut at
// their last snapshot (the live log keeps at most 65 of their events,
// starting at that snapshot), audit verify is OK on the live log and on
// the archive, a cold process reads the controls the whole history gave
// (replay == live) and honours them: paused, the queued task is not
// claimed; resumed, it is claimed and finished, and verify stays OK.
func TestPruneCutsQueueControls(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	ctx := ctxT(t)
	q := taskqueue.New(b.Store, taskqueue.Config{})
	done, err := q.Add(ctx, trellis.AddTaskRequest{Queue: "cq", Objective: "finished"})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := q.Next(ctx, trellis.NextRequest{Queue: "cq", Worker: "w"}); err != nil || got == nil || got.TaskID != done.TaskID {
		t.Fatalf("claim: %+v, %v", got, err)
	}
	if _, err := q.Done(ctx, trellis.DoneRequest{TaskID: done.TaskID, Worker: "w", WhatWasDone: "ok"}); err != nil {
		t.Fatal(err)
	}
	queued, err := q.Add(ctx, trellis.AddTaskRequest{Queue: "cq", Objective: "queued"})
	if err != nil {
		t.Fatal(err)
	}
	const n = 151 // ends paused
	for i := 0; i < n; i++ {
		if i%2 == 0 {
			_, err = q.Pause(ctx, "cq", "ops", "maintenance")
		} else {
			_, err = q.Resume(ctx, "cq", "ops")
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	filter := taskqueue.ControlFilter("cq")
	all := eventstest.Load(t, ctx, b.Store, events.StreamQueue, filter)
	before, err := taskqueue.FoldControls(all)
	if err != nil {
		t.Fatal(err)
	}
	res := pruneKeyed(t, ctx, b.Store)
	live := eventstest.Load(t, ctx, b.Store, events.StreamQueue, filter)
	t.Logf("prune: %d tasks, %d control events cut; the controls keep %d of their %d events", res.Tasks, res.ControlEvents, len(live), len(all))
	if res.Tasks != 1 || res.ControlEvents == 0 || len(live)+res.ControlEvents != len(all) {
		t.Fatalf("prune: %d tasks, %d control events cut, %d of %d kept (gates kept %v)", res.Tasks, res.ControlEvents, len(live), len(all), res.GatesKept)
	}
	if live[0].Type != taskqueue.Snapshot || len(live) > taskqueue.ControlSnapshotEvery+1 {
		t.Fatalf("the controls keep %d events from a %s; want at most %d from their snapshot", len(live), live[0].Type, taskqueue.ControlSnapshotEvery+1)
	}
	verifyPruned(t, ctx, b.Store, res)
	cold := taskqueue.New(b.Store, taskqueue.Config{})
	got, _, err := cold.Controls(ctx, "cq")
	if err != nil || !taskqueue.SameControls(got, before) || !got.Paused {
		t.Fatalf("controls after the prune %+v, %v; before %+v", got, err, before)
	}
	if got, err := cold.Next(ctx, trellis.NextRequest{Queue: "cq", Worker: "w"}); err != nil || got != nil {
		t.Fatalf("claim on the paused queue after the prune: %+v, %v; want nothing", got, err)
	}
	if _, err := cold.Resume(ctx, "cq", "ops"); err != nil {
		t.Fatal(err)
	}
	var claimed *trellis.Task
	waitFor(t, "the queued task claimed after the resume", func() bool {
		claimed, err = cold.Next(ctx, trellis.NextRequest{Queue: "cq", Worker: "w"})
		return err == nil && claimed != nil
	})
	if claimed.TaskID != queued.TaskID {
		t.Fatalf("claimed %s; want the queued %s", claimed.TaskID, queued.TaskID)
	}
	if _, err := cold.Done(ctx, trellis.DoneRequest{TaskID: claimed.TaskID, Worker: "w", WhatWasDone: "ok"}); err != nil {
		t.Fatal(err)
	}
	verifyKeyed(t, ctx, b.Store, "after the resume and the claim")
}
