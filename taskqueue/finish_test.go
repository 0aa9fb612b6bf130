package taskqueue_test

import (
	"fmt"
	"testing"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/taskqueue"
)

// Two Queue handlers on one store are two processes (two servers, a CLI
// and a server): each has its own task cache. A finish decided from a
// stale cache must be re-decided from the log before it is refused.
func TestFinishDecidesFromTheLogWhenTheCacheIsStale(t *testing.T) {
	t.Parallel()
	qa, b := setupQueue(t)
	qb := taskqueue.New(b.Store, taskqueue.Config{})
	ctx := ctxT(t)
	for _, finish := range []string{"done", "fail", "fail-retry", "release"} {
		t.Run(finish, func(t *testing.T) {
			// qa adds (its cache says queued); qb claims (qa's cache is
			// now stale); qa finishes on the claimant's behalf.
			added, err := qa.Add(ctx, trellis.AddTaskRequest{Objective: "cross-process " + finish, Queue: "cross-" + finish})
			if err != nil {
				t.Fatal(err)
			}
			claimed, err := qb.Next(ctx, trellis.NextRequest{Queue: "cross-" + finish, Worker: "wb"})
			if err != nil || claimed == nil || claimed.TaskID != added.TaskID {
				t.Fatalf("next = %+v, %v", claimed, err)
			}
			var got *trellis.Task
			switch finish {
			case "done":
				got, err = qa.Done(ctx, trellis.DoneRequest{TaskID: added.TaskID, Worker: "wb", WhatWasDone: "ok"})
			case "fail":
				got, err = qa.Fail(ctx, trellis.FailRequest{TaskID: added.TaskID, Worker: "wb", Error: "boom"})
			case "fail-retry":
				got, err = qa.Fail(ctx, trellis.FailRequest{TaskID: added.TaskID, Worker: "wb", Error: "boom", Retry: true})
			case "release":
				got, err = qa.Release(ctx, added.TaskID, "wb", "drain")
			}
			if err != nil {
				t.Fatalf("%s through the other process: %v", finish, err)
			}
			want := map[string]trellis.Status{"done": trellis.StatusDone, "fail": trellis.StatusFailed, "fail-retry": trellis.StatusQueued, "release": trellis.StatusQueued}[finish]
			if got.Status != want {
				t.Fatalf("status = %s, want %s", got.Status, want)
			}
		})
	}
	// A refusal that the log confirms stays a refusal: another worker.
	added, err := qa.Add(ctx, trellis.AddTaskRequest{Objective: "wrong worker", Queue: "cross-wrong"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := qb.Next(ctx, trellis.NextRequest{Queue: "cross-wrong", Worker: "wb"}); err != nil {
		t.Fatal(err)
	}
	if _, err := qa.Done(ctx, trellis.DoneRequest{TaskID: added.TaskID, Worker: "wx", WhatWasDone: "ok"}); trellis.ErrorCode(err) != trellis.CodeConflict {
		t.Fatalf("done by a worker that holds no claim: %v; want conflict", err)
	}
}

// The same worker repeating the same finish (a retry after a lost reply)
// gets the same success; a different finish is still a conflict.
func TestRepeatedFinishIsIdempotent(t *testing.T) {
	t.Parallel()
	q, b := setupQueue(t)
	other := taskqueue.New(b.Store, taskqueue.Config{})
	ctx := ctxT(t)
	claim := func(t *testing.T, queue string) *trellis.Task {
		t.Helper()
		if _, err := q.Add(ctx, trellis.AddTaskRequest{Objective: "idempotent finish", Queue: queue, MaxAttempts: 2}); err != nil {
			t.Fatal(err)
		}
		task, err := q.Next(ctx, trellis.NextRequest{Queue: queue, Worker: "w1"})
		if err != nil || task == nil {
			t.Fatalf("next = %+v, %v", task, err)
		}
		return task
	}
	history := func(t *testing.T, id string) string {
		t.Helper()
		h, err := q.History(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		var types []string
		for _, r := range h {
			types = append(types, r.Type)
		}
		return fmt.Sprint(types)
	}

	t.Run("done", func(t *testing.T) {
		task := claim(t, "idem-done")
		req := trellis.DoneRequest{TaskID: task.TaskID, Worker: "w1", WhatWasDone: "built", WhatChanged: []string{"a.go"}, StepsUsed: 2}
		first, err := q.Done(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range []*taskqueue.Handler{q, other} { // this process, and one with no cache
			again, err := h.Done(ctx, req)
			if err != nil {
				t.Fatalf("repeated done: %v", err)
			}
			if again.Status != trellis.StatusDone || again.UpdatedAt != first.UpdatedAt {
				t.Fatalf("repeated done = %+v, want the first result %+v", again, first)
			}
		}
		changed := req
		changed.WhatWasDone = "something else"
		if _, err := q.Done(ctx, changed); trellis.ErrorCode(err) != trellis.CodeConflict {
			t.Fatalf("a different done: %v; want conflict", err)
		}
		otherWorker := req
		otherWorker.Worker = "w2"
		if _, err := q.Done(ctx, otherWorker); trellis.ErrorCode(err) != trellis.CodeConflict {
			t.Fatalf("the same done by another worker: %v; want conflict", err)
		}
		if _, err := q.Fail(ctx, trellis.FailRequest{TaskID: task.TaskID, Worker: "w1", Error: "late"}); trellis.ErrorCode(err) != trellis.CodeConflict {
			t.Fatalf("fail after done: %v; want conflict", err)
		}
		if h := history(t, task.TaskID); h != "[added claimed completed]" {
			t.Fatalf("history = %s", h)
		}
	})

	t.Run("fail", func(t *testing.T) {
		task := claim(t, "idem-fail")
		req := trellis.FailRequest{TaskID: task.TaskID, Worker: "w1", Error: "db down", Blockers: []string{"no db"}}
		if _, err := q.Fail(ctx, req); err != nil {
			t.Fatal(err)
		}
		again, err := other.Fail(ctx, req)
		if err != nil || again.Status != trellis.StatusFailed {
			t.Fatalf("repeated fail = %+v, %v", again, err)
		}
		if h := history(t, task.TaskID); h != "[added claimed failed]" {
			t.Fatalf("history = %s", h)
		}
	})

	t.Run("fail-retry", func(t *testing.T) {
		task := claim(t, "idem-retry")
		req := trellis.FailRequest{TaskID: task.TaskID, Worker: "w1", Error: "flaky", Retry: true}
		if _, err := q.Fail(ctx, req); err != nil {
			t.Fatal(err)
		}
		again, err := other.Fail(ctx, req)
		if err != nil || again.Status != trellis.StatusQueued {
			t.Fatalf("repeated fail --retry = %+v, %v", again, err)
		}
		if h := history(t, task.TaskID); h != "[added claimed attempt_failed]" {
			t.Fatalf("history = %s", h)
		}
		// Not a repeat: the retry asked for a different outcome.
		if _, err := q.Fail(ctx, trellis.FailRequest{TaskID: task.TaskID, Worker: "w1", Error: "flaky"}); trellis.ErrorCode(err) != trellis.CodeConflict {
			t.Fatalf("a terminal fail after the retry fail: %v; want conflict", err)
		}
	})
}

// Idempotency keys that differ only in what NATS headers cannot carry
// (trailing spaces, CR and LF) stay distinct; the same key returns the
// first task.
func TestIdempotencyKeysStayDistinct(t *testing.T) {
	t.Parallel()
	q, _ := setupQueue(t)
	ctx := ctxT(t)
	ids := map[string]string{}
	for _, key := range []string{"k", "k ", " k", "a\r\nb", "a  b", "a\tb", "k:1"} {
		task, err := q.Add(ctx, trellis.AddTaskRequest{Objective: fmt.Sprintf("key %q", key), IdempotencyKey: key})
		if err != nil {
			t.Fatalf("add with key %q: %v", key, err)
		}
		for other, id := range ids {
			if id == task.TaskID {
				t.Fatalf("keys %q and %q collided on task %s", key, other, id)
			}
		}
		ids[key] = task.TaskID
		again, err := q.Add(ctx, trellis.AddTaskRequest{Objective: fmt.Sprintf("key %q", key), IdempotencyKey: key})
		if err != nil || again.TaskID != task.TaskID {
			t.Fatalf("repeated add with key %q = %+v, %v; want task %s", key, again, err, task.TaskID)
		}
	}
}
