package workers_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/taskqueue"
	"github.com/trellis/trellis/workers"
)

// A cancelled task a pool runs is stopped at the pool's next heartbeat:
// the handler's context ends and the pool records cancelled; the history
// is added, claimed, cancel_requested, cancelled.
func TestPoolStopsCancelledTask(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	ids := b.add(t, "cancel", 1, 3)
	started := make(chan struct{})
	stopped := make(chan error, 1)
	stop := runPool(t, b, workers.HandlerFunc(func(ctx context.Context, _ *trellis.Task, _ *workers.Progress) (*trellis.Checkpoint, error) {
		close(started)
		<-ctx.Done()
		stopped <- ctx.Err()
		return nil, ctx.Err()
	}), workers.Config{Queue: "cancel", Worker: "pool", Lease: 3 * time.Second})
	defer stop()
	<-started
	// A task running past the claim window has its claim on the log.
	b.waitStatus(t, ids, 10*time.Second, trellis.StatusClaimed)
	marked, err := b.q.Cancel(ctx, trellis.CancelRequest{TaskID: ids[0], Reason: "wrong branch", Actor: "ops"})
	if err != nil || marked.Status != trellis.StatusClaimed || marked.CancelRequested == nil {
		t.Fatalf("cancel = %+v, %v; want claimed and marked", marked, err)
	}
	got := b.waitStatus(t, ids, 15*time.Second, trellis.StatusCancelled)[ids[0]]
	if err := <-stopped; err == nil {
		t.Fatal("the handler was not stopped")
	}
	if got.Cancellation == nil || got.Cancellation.Reason != "wrong branch" || got.Cancellation.By != "pool/0" {
		t.Fatalf("cancellation = %+v", got.Cancellation)
	}
	recs, err := b.q.History(ctx, ids[0])
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, r := range recs {
		types = append(types, r.Type)
	}
	if fmt.Sprint(types) != "[added claimed cancel_requested cancelled]" {
		t.Fatalf("history = %v", types)
	}
}

// A flood of priority-4 tasks delays a priority-1 task by at most one
// claim per slot: from the log, between the priority-1 task's add and its
// claim, at most Concurrency other claims are recorded.
func TestPoolPriorityBeatsFlood(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	var flood []string
	for i := 0; i < 60; i++ {
		task, err := b.q.Add(ctx, trellis.AddTaskRequest{Queue: "flood", Objective: fmt.Sprint("bulk ", i), Priority: 4})
		if err != nil {
			t.Fatal(err)
		}
		flood = append(flood, task.TaskID)
	}
	const slots = 3
	stop := runPool(t, b, workers.HandlerFunc(func(ctx context.Context, _ *trellis.Task, _ *workers.Progress) (*trellis.Checkpoint, error) {
		time.Sleep(20 * time.Millisecond)
		return &trellis.Checkpoint{WhatWasDone: "ok"}, nil
	}), workers.Config{Queue: "flood", Worker: "pool", Concurrency: slots})
	defer stop()
	// Let the flood start running, then add the urgent task.
	b.waitStatusAny(t, "flood", 10)
	urgent, err := b.q.Add(ctx, trellis.AddTaskRequest{Queue: "flood", Objective: "urgent", Priority: 1})
	if err != nil {
		t.Fatal(err)
	}
	// Every claim is on the log once every task is done (a claim held
	// unrecorded is recorded with its outcome): read it then, or the
	// claims made after the urgent one may not be there yet.
	b.waitStatus(t, append(flood, urgent.TaskID), 15*time.Second, trellis.StatusDone)
	// Claims are compared by when they were made (a claim recorded with
	// its outcome carries its time), not by where they are in the log: a
	// claim made before the urgent add may be recorded after it.
	var recs []events.Recorded
	err = b.Store.Read(ctx, events.StreamQueue, "", 0, func(r events.Recorded) error {
		recs = append(recs, r)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	recs = taskqueue.ExpandClaims(recs)
	var addedAt, claimedAt time.Time
	for _, r := range recs {
		if r.AggregateID == urgent.TaskID && r.Type == "added" {
			addedAt = r.Time
		}
		if r.AggregateID == urgent.TaskID && r.Type == "claimed" {
			claimedAt = r.Time
		}
	}
	if addedAt.IsZero() || claimedAt.IsZero() {
		t.Fatalf("the urgent task's add (%s) or claim (%s) is not in the log", addedAt, claimedAt)
	}
	// A pool may hold at once its slots and what it fetched ahead of them
	// (up to max(concurrency, 32) dispatches, docs/reliability.md): those
	// may go first, nothing more. And the urgent task must overtake the
	// flood: priority-4 tasks queued before it are claimed after it (in
	// FIFO order it would be claimed last).
	const canHold = slots + max(slots, 32)
	between, after := 0, 0
	for _, r := range recs {
		if r.Type != "claimed" || r.AggregateID == urgent.TaskID {
			continue
		}
		if r.Time.After(addedAt) && r.Time.Before(claimedAt) {
			between++
		}
		if r.Time.After(claimedAt) {
			after++
		}
	}
	if between > canHold {
		t.Fatalf("%d priority-4 claims went between the priority-1 task's add and its claim; at most %d (what the pool holds at once)", between, canHold)
	}
	if after == 0 {
		t.Fatalf("no priority-4 task was claimed after the priority-1 task: it overtook nothing (%d claims went between its add and its claim)", between)
	}
}

// waitStatusAny waits until at least n tasks of the queue are done.
func (b *bundle) waitStatusAny(t *testing.T, queue string, n int) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if len(b.countEvents(t, "completed")) >= n {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("fewer than %d tasks of %s done", n, queue)
}
