package retention_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/retention"
)

// pacedLog fills a log whose finished tasks cannot leave in one purge of
// the stream's head (an open task of their queue, claimed, comes first),
// and returns the open task's id and how many finished tasks it holds.
func pacedLog(t *testing.T, f *fixture) (string, int) {
	t.Helper()
	open := f.add(t, "open", trellis.AddTaskRequest{Queue: "paced"}).TaskID
	f.claim(t, "paced", open)
	const n = 10
	for i := 0; i < n; i++ {
		task := f.add(t, "done", trellis.AddTaskRequest{Queue: "paced"})
		f.done(t, "paced", task.TaskID)
	}
	return open, n
}

// TestPruneRemoveRatePacesRemovals: with RemoveRate, the messages removed
// are spaced at that rate, whether alone or in a purge (a prune of 10
// finished tasks behind a claimed task of their queue removes 9 of their
// tombstones in one purge, which takes 9 slots, then their 30 events one
// at a time: 39 messages, which at 10 a second cannot take less than
// 3.8 s), and the result is the same as unpaced: verify OK, the open
// task kept.
func TestPruneRemoveRatePacesRemovals(t *testing.T) {
	t.Parallel()
	store, q := startQueue(t)
	ctx := ctxT(t)
	open, n := pacedLog(t, &fixture{q: q})
	start := time.Now()
	res, err := retention.Prune(ctx, store, retention.Options{OlderThan: time.Minute, Archive: t.TempDir(), Now: later, RemoveRate: 10})
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if res.Tasks != n {
		t.Fatalf("pruned %d tasks, want %d; kept %v", res.Tasks, n, res.Kept)
	}
	// 3 events a task and the tombstones but the last, spaced 100 ms.
	if min := time.Duration(3*n+n-2) * 100 * time.Millisecond; took < min {
		t.Fatalf("a prune paced at 10 messages a second took %s; removing %d messages takes at least %s", took, 4*n-1, min)
	}
	if fs := verifyLog(t, store); len(fs) > 0 {
		t.Fatalf("verify after a paced prune: %v", fs)
	}
	if _, err := q.Show(ctx, open); err != nil {
		t.Fatalf("the open task after a paced prune: %v", err)
	}
}

// TestPacedPruneCancelledIsFinishedNext: a paced prune cancelled while it
// removes (its record appended) stops with the context's error; the next
// prune, unpaced, removes what the record names, and verify is OK.
func TestPacedPruneCancelledIsFinishedNext(t *testing.T) {
	t.Parallel()
	store, q := startQueue(t)
	ctx := ctxT(t)
	_, n := pacedLog(t, &fixture{q: q})
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	_, err := retention.Prune(pctx, store, retention.Options{OlderThan: time.Minute, Archive: t.TempDir(), Now: later, RemoveRate: 2,
		AfterRecord: func() { time.AfterFunc(1200*time.Millisecond, cancel) }})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("a prune cancelled while it removed at 2 a second: %v; want the context's error", err)
	}
	res, err := retention.Prune(ctx, store, retention.Options{OlderThan: time.Minute, Archive: t.TempDir(), Now: later})
	if err != nil {
		t.Fatal(err)
	}
	if res.Completed == 0 || res.Tasks != 0 {
		t.Fatalf("the next prune: finished %d sequences of the last, pruned %d tasks; want some and none (all %d were recorded)", res.Completed, res.Tasks, n)
	}
	if fs := verifyLog(t, store); len(fs) > 0 {
		t.Fatalf("verify after the finished prune: %v", fs)
	}
}
