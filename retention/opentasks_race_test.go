package retention_test

import (
	"context"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/projections"
	"github.com/trellis/trellis/retention"
	"github.com/trellis/trellis/taskqueue"
)

// TestPruneOpenTasksRacingFinish: while a prune snapshots and cuts 30
// claimed tasks (each with heartbeats after its claim), another process
// finishes them: some before their snapshot (the snapshot's check fails,
// the task is left for the next prune), some between the snapshot and the
// record (in the archive hook), the rest after. Every finish succeeds
// once, every task ends done with one attempt, audit verify is OK and a
// board replayed from the pruned log counts them all done; a second prune
// removes them whole.
func TestPruneOpenTasksRacingFinish(t *testing.T) {
	t.Parallel()
	bundle := eventstest.Start(t)
	store := bundle.Store
	q := taskqueue.New(store, taskqueue.Config{})
	ctx := ctxT(t)
	f := &fixture{q: q, finished: map[string]string{}, open: map[string]string{}}
	const n = 30
	var ids []string
	for i := 0; i < n; i++ {
		task := f.add(t, "racing", trellis.AddTaskRequest{Queue: "race"})
		f.claim(t, "race", task.TaskID)
		for j := 0; j < 4; j++ {
			if _, err := q.Heartbeat(ctx, trellis.HeartbeatRequest{TaskID: task.TaskID, Worker: "w1"}); err != nil {
				t.Fatal(err)
			}
		}
		ids = append(ids, task.TaskID)
	}
	other := taskqueue.New(store, taskqueue.Config{})
	finished := make(chan string, n)
	for _, id := range ids {
		finished <- id
	}
	close(finished)
	finish := func() {
		id, ok := <-finished
		if !ok {
			return
		}
		if _, err := other.Done(context.Background(), trellis.DoneRequest{TaskID: id, Worker: "w1", WhatWasDone: "ok"}); err != nil {
			t.Errorf("done %s: %v", id, err)
		}
	}
	raced := make(chan struct{})
	go func() {
		defer close(raced)
		for i := 0; i < n/2; i++ {
			finish()
		}
	}()
	res, err := retention.Prune(ctx, store, retention.Options{OlderThan: time.Minute, Archive: t.TempDir(), Now: later, BatchTasks: 5,
		AfterArchive: func(string) { finish() }})
	if err != nil {
		t.Fatal(err)
	}
	<-raced
	for range n {
		finish()
	}
	t.Logf("cut %d open tasks, pruned %d finished, kept %v", res.OpenTasks, res.Tasks, res.Kept)
	cold := taskqueue.New(store, taskqueue.Config{}) // folds from the log
	for _, id := range ids {
		got, err := cold.Show(ctx, id)
		if err != nil && trellis.ErrorCode(err) == trellis.CodeNotFound {
			continue // finished before the scan, and pruned whole
		}
		if err != nil || got.Status != trellis.StatusDone || got.Attempts != 1 {
			for _, r := range taskEvents(t, store, id) {
				t.Logf("#%d %s prev %.12s hash %.12s", r.Seq, r.Type, r.Prev, events.Hash(r.Envelope))
			}
			t.Fatalf("task %s: %+v, %v; want done after 1 attempt", id, got, err)
		}
	}
	if fs := verifyLog(t, store); len(fs) > 0 {
		t.Fatalf("verify: %v", fs)
	}
	board := projections.NewBoard(t.TempDir())
	if _, err := board.Load(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = board.Close() })
	foldBoard(t, store, board, 1)
	if got := board.Counts()["race"][trellis.StatusDone]; got != n-res.Tasks {
		t.Fatalf("the board replayed from the pruned log counts %d done tasks; want %d (%d pruned)", got, n-res.Tasks, res.Tasks)
	}
	res2, err := retention.Prune(ctx, store, retention.Options{OlderThan: time.Minute, Archive: t.TempDir(), Now: later})
	if err != nil || res.Tasks+res2.Tasks != n {
		t.Fatalf("second prune: %+v, %v; want the other %d tasks removed", res2, err, n-res.Tasks)
	}
	if fs := verifyLog(t, store); len(fs) > 0 {
		t.Fatalf("verify after the second prune: %v", fs)
	}
}
