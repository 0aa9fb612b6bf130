package workers_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/taskqueue"
	"github.com/trellis/trellis/workers"
)

// readAheadPool runs a one-slot pool on queue whose first task's handler
// waits for release, so that the pool fetches the next dispatches ahead
// of its slot (and reads them) while it runs; it returns once they are
// all delivered to the pool, and the tasks that ran so far.
func readAheadPool(t *testing.T, b *bundle, queue string, ids []string) (release func(), ran func(id string) bool) {
	t.Helper()
	wait := make(chan struct{})
	var mu sync.Mutex
	started := map[string]bool{}
	h := workers.HandlerFunc(func(ctx context.Context, task *trellis.Task, _ *workers.Progress) (*trellis.Checkpoint, error) {
		mu.Lock()
		started[task.TaskID] = true
		mu.Unlock()
		if task.TaskID == ids[0] {
			<-wait
		}
		return &trellis.Checkpoint{WhatWasDone: "ok"}, nil
	})
	t.Cleanup(runPool(t, b, h, workers.Config{Queue: queue, Worker: "p", Concurrency: 1}))
	ran = func(id string) bool {
		mu.Lock()
		defer mu.Unlock()
		return started[id]
	}
	lane := defaultLane(t, b, queue)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		info, err := lane.Info(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if ran(ids[0]) && info.NumAckPending == len(ids) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pool did not fetch every dispatch ahead: first ran %v, %d delivered", ran(ids[0]), info.NumAckPending)
		}
	}
	var once sync.Once
	return func() { once.Do(func() { close(wait) }) }, ran
}

// defaultLane is the claim consumer of queue's default priority.
func defaultLane(t *testing.T, b *bundle, queue string) jetstream.Consumer {
	t.Helper()
	lanes, err := b.q.Lanes(context.Background(), queue)
	if err != nil {
		t.Fatal(err)
	}
	return lanes[trellis.DefaultPriority-1]
}

// TestTaskCancelledWhileFetchedAheadNeverRuns: a pool sharing its queue
// handler with the process that added the tasks (the task in its cache)
// fetches a dispatch ahead of its busy slot and reads it; the task is
// cancelled there before the slot takes it. The slot must take the task
// as this process has it now, cancelled, and never run it (it held the
// copy read at the fetch). Once every dispatch is acknowledged the
// cancelled task has not run.
func TestTaskCancelledWhileFetchedAheadNeverRuns(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const queue = "aheadcancel"
	ids := b.add(t, queue, 2, 3)
	release, ran := readAheadPool(t, b, queue, ids)
	if _, err := b.q.Cancel(context.Background(), trellis.CancelRequest{TaskID: ids[1], Reason: "not needed"}); err != nil {
		t.Fatal(err)
	}
	release()
	b.waitStatus(t, ids[:1], 30*time.Second, trellis.StatusDone)
	lane := defaultLane(t, b, queue)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		info, err := lane.Info(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if info.NumAckPending == 0 && info.NumPending == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("dispatches left: %d pending, %d unacknowledged", info.NumPending, info.NumAckPending)
		}
	}
	if ran(ids[1]) {
		t.Fatalf("task %s, cancelled while its dispatch waited in the pool's buffer, ran", ids[1])
	}
}

// TestRateSetWhileFetchedAheadGovernsTheClaims: a rate set after a pool
// fetched dispatches ahead of its busy slot (SetRate returns once every
// claim honours it) gates their claims: of two tasks fetched before a
// rate of one a second (burst 1), one is claimed at once and the other's
// claim is refused, its dispatch delivered again when the rate allows.
// Taking the queue's controls as read at the fetch, the slot claimed both
// at once, and no dispatch came back.
func TestRateSetWhileFetchedAheadGovernsTheClaims(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const queue = "aheadrate"
	ids := b.add(t, queue, 3, 3)
	release, _ := readAheadPool(t, b, queue, ids)
	if _, err := b.q.SetRate(context.Background(), queue, "ops", "1/s", 1); err != nil {
		t.Fatal(err)
	}
	release()
	b.waitStatus(t, ids, 60*time.Second, trellis.StatusDone)
	// Each claim records the delivery of the dispatch it was made with.
	deliveries := map[string]uint64{}
	for _, id := range ids[1:] {
		recs, err := b.q.History(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range taskqueue.ExpandClaims(recs) {
			var c taskqueue.ClaimedPayload
			if r.Type == taskqueue.Claimed && r.DecodePayload(&c) == nil {
				deliveries[id] = max(deliveries[id], c.Delivery)
			}
		}
	}
	if deliveries[ids[1]] < 2 && deliveries[ids[2]] < 2 {
		t.Fatalf("both tasks fetched before the rate was set were claimed with their first delivery (%v): the rate refused neither", deliveries)
	}
}
