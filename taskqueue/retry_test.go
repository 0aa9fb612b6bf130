package taskqueue_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/taskqueue"
)

func historyTypes(t *testing.T, q *taskqueue.Handler, id string) string {
	t.Helper()
	recs, err := q.History(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range recs {
		out = append(out, r.Type)
	}
	return strings.Join(out, " ")
}

// nextUntil claims until a task comes back or the deadline passes.
func nextUntil(t *testing.T, q *taskqueue.Handler, queue, worker string, within time.Duration) *trellis.Task {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		task, err := q.Next(context.Background(), trellis.NextRequest{Queue: queue, Worker: worker})
		if err != nil {
			t.Fatal(err)
		}
		if task != nil {
			return task
		}
	}
	return nil
}

// TestFailWithRetryThenDead: an explicit fail asking for a retry queues the
// task again after the backoff; at max attempts it becomes dead; queue
// retry brings a dead task back with fresh attempts.
func TestFailWithRetryThenDead(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	q := taskqueue.New(b.Store, taskqueue.Config{RetryBackoff: func(int) time.Duration { return 300 * time.Millisecond }})
	ctx := ctxT(t)
	task, err := q.Add(ctx, trellis.AddTaskRequest{Objective: "flaky", MaxAttempts: 2})
	if err != nil {
		t.Fatal(err)
	}
	c1 := nextUntil(t, q, "default", "w", time.Second)
	failed, err := q.Fail(ctx, trellis.FailRequest{TaskID: task.TaskID, Worker: "w", Error: "boom 1", Retry: true})
	if err != nil {
		t.Fatal(err)
	}
	if failed.Status != trellis.StatusQueued || failed.RetryAt == nil || failed.LastError != "boom 1" || c1.Attempts != 1 {
		t.Fatalf("after a retried failure: %+v", failed)
	}
	// Not due yet: nothing to claim right now.
	if early, err := q.Next(ctx, trellis.NextRequest{Worker: "w"}); err != nil || early != nil {
		t.Fatalf("claimed before the backoff elapsed: %v, %v", early, err)
	}
	c2 := nextUntil(t, q, "default", "w", 5*time.Second)
	if c2 == nil || c2.Attempts != 2 {
		t.Fatalf("second attempt = %+v", c2)
	}
	if wait := c2.ClaimedAt.Sub(*failed.RetryAt); wait < -50*time.Millisecond {
		t.Fatalf("claimed %s before retry_at", -wait)
	}
	dead, err := q.Fail(ctx, trellis.FailRequest{TaskID: task.TaskID, Worker: "w", Error: "boom 2", Retry: true})
	if err != nil || dead.Status != trellis.StatusDead || dead.Checkpoint == nil || dead.Checkpoint.Error != "boom 2" {
		t.Fatalf("after the last attempt: %+v, %v", dead, err)
	}
	if got := historyTypes(t, q, task.TaskID); got != "added claimed attempt_failed claimed dead" {
		t.Fatalf("history = %s", got)
	}
	if _, err := q.Retry(ctx, task.TaskID, "operator"); err != nil {
		t.Fatal(err)
	}
	c3 := nextUntil(t, q, "default", "w", 2*time.Second)
	if c3 == nil || c3.Attempts != 1 {
		t.Fatalf("after queue retry: %+v", c3)
	}
	if _, err := q.Retry(ctx, task.TaskID, "operator"); trellis.ErrorCode(err) != trellis.CodeConflict {
		t.Fatalf("retry of a claimed task: %v; want conflict", err)
	}
}

// TestLeaseExpiry: a leased claim whose holder stops heartbeating is taken
// over after the lease, and the history says so; the first holder can no
// longer finish the task.
func TestLeaseExpiry(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	ctx := ctxT(t)
	a := taskqueue.New(b.Store, taskqueue.Config{})
	bq := taskqueue.New(b.Store, taskqueue.Config{})
	cons, err := a.EnsureConsumer(ctx, "lease", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	task, err := a.Add(ctx, trellis.AddTaskRequest{Queue: "lease", Objective: "long"})
	if err != nil {
		t.Fatal(err)
	}
	claimed := claimLeased(t, a, cons, "A")
	if claimed.Lease == nil || claimed.ClaimedBy != "A" {
		t.Fatalf("leased claim = %+v", claimed)
	}
	// A dies: no heartbeat, no ack. B gets the redelivery after the lease.
	consB, err := bq.Consumer(ctx, "lease")
	if err != nil {
		t.Fatal(err)
	}
	took := claimLeased(t, bq, consB, "B")
	if took.TaskID != task.TaskID || took.ClaimedBy != "B" || took.Attempts != 2 {
		t.Fatalf("takeover = %+v", took)
	}
	if got := historyTypes(t, a, task.TaskID); got != "added claimed lease_expired claimed" {
		t.Fatalf("history = %s", got)
	}
	if _, err := a.Done(ctx, trellis.DoneRequest{TaskID: task.TaskID, Worker: "A", WhatWasDone: "late"}); trellis.ErrorCode(err) != trellis.CodeConflict {
		t.Fatalf("done by the expired holder: %v; want conflict", err)
	}
	if _, err := bq.Done(ctx, trellis.DoneRequest{TaskID: task.TaskID, Worker: "B", WhatWasDone: "done"}); err != nil {
		t.Fatal(err)
	}
}

func claimLeased(t *testing.T, q *taskqueue.Handler, cons jetstream.Consumer, worker string) *trellis.Task {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		batch, err := cons.Fetch(1, jetstream.FetchMaxWait(500*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		for msg := range batch.Messages() {
			task, err := q.ClaimDispatched(context.Background(), msg, worker, true)
			if err != nil {
				t.Fatal(err)
			}
			if task != nil {
				return task
			}
		}
	}
	t.Fatalf("%s claimed nothing", worker)
	return nil
}

// TestPauseResumeAndLimit: controls are events applied to the claim
// consumer: a paused queue hands out nothing; a limit caps leased claims
// in flight across all claimants.
func TestPauseResumeAndLimit(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	ctx := ctxT(t)
	q := taskqueue.New(b.Store, taskqueue.Config{})
	if _, err := q.Add(ctx, trellis.AddTaskRequest{Queue: "ctl", Objective: "one"}); err != nil {
		t.Fatal(err)
	}
	c, err := q.Pause(ctx, "ctl", "ops", "maintenance")
	if err != nil || !c.Paused {
		t.Fatalf("pause = %+v, %v", c, err)
	}
	other := taskqueue.New(b.Store, taskqueue.Config{}) // another process
	if got, err := other.Next(ctx, trellis.NextRequest{Queue: "ctl", Worker: "w"}); err != nil || got != nil {
		t.Fatalf("claim on a paused queue: %v, %v", got, err)
	}
	if _, err := q.Resume(ctx, "ctl", "ops"); err != nil {
		t.Fatal(err)
	}
	got := nextUntil(t, other, "ctl", "w", 3*time.Second)
	if got == nil {
		t.Fatal("no claim after resume")
	}
	// An agent's claim is in flight too (its dispatch is its lease): done,
	// it frees its slot.
	if _, err := other.Done(ctx, trellis.DoneRequest{TaskID: got.TaskID, Worker: "w", WhatWasDone: "done"}); err != nil {
		t.Fatal(err)
	}

	if _, err := q.SetLimit(ctx, "ctl", "ops", 1); err != nil {
		t.Fatal(err)
	}
	if _, err := q.SetLimit(ctx, "ctl", "ops", -1); trellis.ErrorCode(err) != trellis.CodeInvalid {
		t.Fatalf("negative limit: %v", err)
	}
	for i := 0; i < 2; i++ {
		if _, err := q.Add(ctx, trellis.AddTaskRequest{Queue: "ctl", Objective: fmt.Sprint("limited ", i)}); err != nil {
			t.Fatal(err)
		}
	}
	cons, err := q.Consumer(ctx, "ctl")
	if err != nil {
		t.Fatal(err)
	}
	claimLeased(t, q, cons, "p1")
	// The one in-flight slot is taken: a second claimant gets nothing.
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	for msg := range batch.Messages() {
		t.Fatalf("limit 1 let a second dispatch through: %s", msg.Subject())
	}
	controls, _, err := q.Controls(ctx, "ctl")
	if err != nil || controls.MaxInFlight != 1 || controls.Paused {
		t.Fatalf("controls = %+v, %v", controls, err)
	}
}
