package retention_test

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/audit"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/projections"
	"github.com/trellis/trellis/retention"
	"github.com/trellis/trellis/taskqueue"
)

// taskEvents returns the events the live log holds of a task.
func taskEvents(t *testing.T, store *events.Store, id string) []events.Recorded {
	t.Helper()
	recs, _, err := store.Load(ctxT(t), events.StreamQueue, taskqueue.Filter(id))
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// TestPruneCutsOpenTasks: open tasks with events after their last
// dispatch (a prerequisite five dependants were linked to, an agent's
// claim with heartbeats, a retried task claimed again with heartbeats)
// are snapshotted and their events between the dispatch and the snapshot
// archived and removed; tasks with nothing to cut are left as they are.
// audit verify (keyed) is OK on the live log and on the archives, a board
// replayed from the pruned log equals the live one, and every task still
// claims and finishes with the right attempts (the dependants once their
// prerequisite is done); a second prune then removes them whole.
func TestPruneCutsOpenTasks(t *testing.T) {
	t.Parallel()
	store, q := startQueue(t)
	ctx := ctxT(t)
	f := &fixture{q: q, finished: map[string]string{}, open: map[string]string{}}
	pre := f.add(t, "prerequisite", trellis.AddTaskRequest{Queue: "ot-pre"})
	var deps []string
	for i := 0; i < 5; i++ {
		deps = append(deps, f.add(t, "dependant", trellis.AddTaskRequest{Queue: "ot-dep", After: []string{pre.TaskID}}).TaskID)
	}
	hb := f.add(t, "heartbeat", trellis.AddTaskRequest{Queue: "ot-hb"})
	f.claim(t, "ot-hb", hb.TaskID)
	rt := f.add(t, "retried", trellis.AddTaskRequest{Queue: "ot-rt", MaxAttempts: 5})
	f.claim(t, "ot-rt", rt.TaskID)
	if got, err := q.Fail(ctx, trellis.FailRequest{TaskID: rt.TaskID, Worker: "w1", Error: "flaky", Retry: true}); err != nil || got.Status != trellis.StatusQueued {
		t.Fatalf("fail with retry: %+v, %v", got, err)
	}
	f.claim(t, "ot-rt", rt.TaskID)
	for i := 0; i < 5; i++ {
		for _, id := range []string{hb.TaskID, rt.TaskID} {
			if _, err := q.Heartbeat(ctx, trellis.HeartbeatRequest{TaskID: id, Worker: "w1"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	plain := f.add(t, "plain", trellis.AddTaskRequest{Queue: "ot-plain"})
	before := map[string]*trellis.Task{}
	for _, id := range append([]string{pre.TaskID, hb.TaskID, rt.TaskID, plain.TaskID}, deps...) {
		before[id] = show(t, q, id)
	}
	live := projections.NewBoard(t.TempDir())
	if _, err := live.Load(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = live.Close() })
	next := foldBoard(t, store, live, 1)

	key := []byte("0123456789abcdef0123456789abcdef")
	dir := filepath.Join(t.TempDir(), "archive")
	res, err := retention.Prune(ctx, store, retention.Options{OlderThan: time.Minute, Archive: dir, Now: later, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	if res.OpenTasks != 3 || res.Tasks != 0 {
		t.Fatalf("prune cut %d open tasks and pruned %d; want the 3 with events after their dispatch and none; kept %v", res.OpenTasks, res.Tasks, res.Kept)
	}
	for id, n := range map[string]int{pre.TaskID: 2, hb.TaskID: 2, rt.TaskID: 4, plain.TaskID: 1, deps[0]: 1} {
		recs := taskEvents(t, store, id)
		if len(recs) != n {
			t.Fatalf("task %s keeps %d events; want %d", id, len(recs), n)
		}
	}
	other := taskqueue.New(store, taskqueue.Config{}) // folds from the pruned log
	for id, want := range before {
		got, err := other.Show(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if !taskqueue.SameTask(got, want) {
			t.Fatalf("task %s after the prune:\n%+v\nbefore:\n%+v", id, got, want)
		}
	}
	verifyKeyed := func(when string) {
		t.Helper()
		var fs []audit.Finding
		if _, err := audit.Verify(ctx, store, audit.VerifyOptions{AnchorKey: key}, func(f audit.Finding) error { fs = append(fs, f); return nil }); err != nil {
			t.Fatal(err)
		}
		if len(fs) > 0 {
			t.Fatalf("verify %s: %v", when, fs)
		}
	}
	verifyKeyed("after the open tasks were cut")
	for _, ar := range res.Archives {
		if fs, _ := verifyArchive(t, ar.File); len(fs) > 0 {
			t.Fatalf("verify --file %s: %v", ar.File, fs)
		}
	}
	foldBoard(t, store, live, next)
	replay := projections.NewBoard(t.TempDir())
	if _, err := replay.Load(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = replay.Close() })
	foldBoard(t, store, replay, 1)
	lt, lc := boardState(t, live)
	rt2, rc := boardState(t, replay)
	if lt != rt2 || !reflect.DeepEqual(lc, rc) {
		t.Fatalf("live board != replayed board:\nlive   %v %s\nreplay %v %s", lc, lt, rc, rt2)
	}

	// Every task still claims and finishes, with the right attempts.
	for _, id := range []string{hb.TaskID, rt.TaskID} {
		if _, err := other.Done(ctx, trellis.DoneRequest{TaskID: id, Worker: "w1", WhatWasDone: "ok"}); err != nil {
			t.Fatalf("done %s after the prune: %v", id, err)
		}
	}
	if a := show(t, q, hb.TaskID).Attempts; a != 1 {
		t.Fatalf("heartbeat task: %d attempts; want 1", a)
	}
	if a := show(t, q, rt.TaskID).Attempts; a != 2 {
		t.Fatalf("retried task: %d attempts; want 2", a)
	}
	f.done(t, "ot-pre", pre.TaskID)
	f.done(t, "ot-plain", plain.TaskID)
	for range deps {
		var got *trellis.Task
		waitFor(t, "a dependant is claimable", func() bool {
			got, err = q.Next(ctx, trellis.NextRequest{Queue: "ot-dep", Worker: "w1"})
			if err != nil {
				t.Fatal(err)
			}
			return got != nil
		})
		if got.Attempts != 1 || len(got.Prerequisites) != 1 {
			t.Fatalf("dependant %s: %d attempts, prerequisites %v", got.TaskID, got.Attempts, got.Prerequisites)
		}
		if _, err := q.Done(ctx, trellis.DoneRequest{TaskID: got.TaskID, Worker: "w1", WhatWasDone: "ok"}); err != nil {
			t.Fatal(err)
		}
	}
	verifyKeyed("after the cut tasks finished")

	res2, err := retention.Prune(ctx, store, retention.Options{OlderThan: time.Minute, Archive: dir, Now: later, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	if res2.Tasks != 9 {
		t.Fatalf("second prune removed %d tasks; want all 9; kept %v", res2.Tasks, res2.Kept)
	}
	verifyKeyed("after the second prune")
	for _, ar := range res2.Archives {
		if fs, _ := verifyArchive(t, ar.File); len(fs) > 0 {
			t.Fatalf("verify --file %s: %v", ar.File, fs)
		}
	}
}

func show(t *testing.T, q *taskqueue.Handler, id string) *trellis.Task {
	t.Helper()
	task, err := q.Show(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return task
}
