package taskqueue_test

import (
	"testing"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/taskqueue"
)

// TestClaimFindsItsOwnLateStoredClaim reproduces the stuck tasks of the
// isolated-leader fault runs: a pool's claim append was reported failed
// (the stream leader changing under it) but stored, the claim command
// decided again on the log, found the claim it had just made, took it for
// someone else's, and acknowledged the dispatch: the task stayed claimed
// by a pool that never ran it, and with its dispatch gone no lease could
// ever expire. Here a second handler (another process's view: nothing
// cached, the task as the dispatch carried it) decides the same delivery
// for the same worker after the first stored the claim: it must take the
// claim for its own, run it, and leave the dispatch pending as its lease.
func TestClaimFindsItsOwnLateStoredClaim(t *testing.T) {
	t.Parallel()
	first, b := setupQueue(t)
	ctx := ctxT(t)
	added, err := first.Add(ctx, trellis.AddTaskRequest{Queue: "own", Objective: "claimed once, by us"})
	if err != nil {
		t.Fatal(err)
	}
	cons, err := first.Consumer(ctx, "own")
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(1)
	if err != nil {
		t.Fatal(err)
	}
	msg := <-batch.Messages()
	if msg == nil {
		t.Fatal("no dispatch")
	}
	// The write that was given up on, stored.
	if task, err := first.ClaimDispatched(ctx, msg, "pool/0", true); err != nil || task == nil {
		t.Fatalf("first claim: %v, %v", task, err)
	}
	// The same claim decided again from the state the dispatch carried.
	again := taskqueue.New(b.Store, taskqueue.Config{})
	task, err := again.ClaimDispatched(ctx, msg, "pool/0", true)
	if err != nil || task == nil || task.TaskID != added.TaskID || task.Status != trellis.StatusClaimed || task.ClaimedBy != "pool/0" || task.Attempts != 1 {
		t.Fatalf("the claim found on the log is the pool's own: got %+v, %v", task, err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.NumAckPending != 1 {
		t.Fatalf("the dispatch was acknowledged (%d pending): the claim's lease is gone and the task would stay claimed for ever", info.NumAckPending)
	}
	// Another worker deciding that delivery is still refused, and does
	// not end the holder's lease either.
	if task, err := taskqueue.New(b.Store, taskqueue.Config{}).ClaimDispatched(ctx, msg, "other/0", true); err != nil || task != nil {
		t.Fatalf("another worker on the held delivery: %+v, %v (want nothing)", task, err)
	}
	if info, err = cons.Info(ctx); err != nil || info.NumAckPending != 1 {
		t.Fatalf("another worker's refusal acknowledged the holder's dispatch: %+v, %v", info, err)
	}
	if _, err := first.Done(ctx, trellis.DoneRequest{TaskID: added.TaskID, Worker: "pool/0", WhatWasDone: "once"}); err != nil {
		t.Fatalf("the holder finishes it: %v", err)
	}
}
