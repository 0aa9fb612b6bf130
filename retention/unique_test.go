package retention_test

import (
	"testing"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/taskqueue"
)

// TestPruneCutsUniqueKeys: a unique key held by one task after the other
// (70 adds, each finished before the next) records a held event per add
// and snapshots itself every 64; a key held by delayed tasks (65, each
// cancelled before the next) is kept whole: a delayed task's timer
// follows the key's event in the add's batch. A prune
// removes the finished tasks and cuts the first key at its snapshot:
// verify is OK on the live log and the archives, the key's state is the
// one the whole history gave (replay == live), and it still holds: an
// add with the key while its last task is open gets that task, and once
// that task is done a new add takes the key.
func TestPruneCutsUniqueKeys(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	ctx := ctxT(t)
	q := taskqueue.New(b.Store, taskqueue.Config{})
	var holder *trellis.Task
	const n = 70
	for i := 0; i < n; i++ {
		task, err := q.Add(ctx, trellis.AddTaskRequest{Queue: "uq", Objective: "nightly", UniqueKey: "nightly"})
		if err != nil {
			t.Fatal(err)
		}
		holder = task
		if i == n-1 {
			break // the last holder stays queued
		}
		if got, err := q.Next(ctx, trellis.NextRequest{Queue: "uq", Worker: "w"}); err != nil || got == nil || got.TaskID != task.TaskID {
			t.Fatalf("claim %d: %+v, %v", i, got, err)
		}
		if _, err := q.Done(ctx, trellis.DoneRequest{TaskID: task.TaskID, Worker: "w", WhatWasDone: "ok"}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < taskqueue.UniqueSnapshotEvery+1; i++ {
		task, err := q.Add(ctx, trellis.AddTaskRequest{Queue: "ud", Objective: "later", UniqueKey: "later", Delay: "1h"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := q.Cancel(ctx, trellis.CancelRequest{TaskID: task.TaskID, Reason: "not needed"}); err != nil {
			t.Fatal(err)
		}
	}
	delayedKey := "trellis.queue." + taskqueue.UniqueID("ud", "later") + ".>"
	delayedAll := eventstest.Load(t, ctx, b.Store, events.StreamQueue, delayedKey)
	filter := "trellis.queue." + taskqueue.UniqueID("uq", "nightly") + ".>"
	all := eventstest.Load(t, ctx, b.Store, events.StreamQueue, filter)
	before, err := taskqueue.FoldUnique(all)
	if err != nil {
		t.Fatal(err)
	}
	res := pruneKeyed(t, ctx, b.Store)
	live := eventstest.Load(t, ctx, b.Store, events.StreamQueue, filter)
	t.Logf("prune: %d tasks, %d unique key events cut; the key keeps %d of its %d events; kept %v", res.Tasks, res.UniqueEvents, len(live), len(all), res.GatesKept)
	if res.Tasks != n-1 || res.UniqueEvents == 0 || len(live)+res.UniqueEvents != len(all) || live[0].Type != taskqueue.Snapshot {
		t.Fatalf("prune: %d tasks, %d unique key events cut, %d of %d kept from a %s (gates kept %v)", res.Tasks, res.UniqueEvents, len(live), len(all), live[0].Type, res.GatesKept)
	}
	if res.GatesKept["a task added delayed holds it (its timer follows the key's event)"] != 1 {
		t.Fatalf("the delayed tasks' key was not kept whole: %v", res.GatesKept)
	}
	if got, _, err := b.Store.Load(ctx, events.StreamQueue, delayedKey); err != nil || len(got) != len(delayedAll) {
		t.Fatalf("the delayed tasks' key keeps %d of its %d events (%v)", len(got), len(delayedAll), err)
	}
	verifyPruned(t, ctx, b.Store, res)
	after, err := taskqueue.FoldUnique(live)
	if err != nil || !taskqueue.SameUnique(after, before) || after.TaskID != holder.TaskID {
		t.Fatalf("unique key after the prune %+v, %v; before %+v", after, err, before)
	}
	cold := taskqueue.New(b.Store, taskqueue.Config{})
	dup, err := cold.Add(ctx, trellis.AddTaskRequest{Queue: "uq", Objective: "nightly", UniqueKey: "nightly"})
	if err != nil || dup.TaskID != holder.TaskID {
		t.Fatalf("add with the held key after the prune: %+v, %v; want its holder %s", dup, err, holder.TaskID)
	}
	if got, err := cold.Next(ctx, trellis.NextRequest{Queue: "uq", Worker: "w"}); err != nil || got == nil || got.TaskID != holder.TaskID {
		t.Fatalf("claim the holder after the prune: %+v, %v", got, err)
	}
	if _, err := cold.Done(ctx, trellis.DoneRequest{TaskID: holder.TaskID, Worker: "w", WhatWasDone: "ok"}); err != nil {
		t.Fatal(err)
	}
	next, err := cold.Add(ctx, trellis.AddTaskRequest{Queue: "uq", Objective: "nightly", UniqueKey: "nightly"})
	if err != nil || next.TaskID == holder.TaskID {
		t.Fatalf("add with the key once its holder is done: %+v, %v; want a new task", next, err)
	}
	verifyKeyed(t, ctx, b.Store, "after the key was taken again")
}
