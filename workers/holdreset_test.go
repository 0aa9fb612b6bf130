package workers_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/taskqueue"
	"github.com/trellis/trellis/workers"
)

// TestPoolDoesNotRerunTasksWhoseDispatchesComeBackFirst: a worker
// process runs a queue's tasks, each recorded with one event (its
// completion carrying its claim). Then the queue's claim consumers lose
// their state and are made again: every dispatch is delivered again, as
// a first delivery, to a pool in another worker process that never saw
// the tasks. No task runs a second time (the log, not the delivery,
// tells that they ended), every dispatch is acknowledged, and the
// histories stay added, completed.
func TestPoolDoesNotRerunTasksWhoseDispatchesComeBackFirst(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const queue = "comeback"
	ids := b.add(t, queue, 5, 3)
	var mu sync.Mutex
	runs := map[string]int{}
	h := workers.HandlerFunc(func(_ context.Context, task *trellis.Task, _ *workers.Progress) (*trellis.Checkpoint, error) {
		mu.Lock()
		runs[task.TaskID]++
		mu.Unlock()
		return &trellis.Checkpoint{WhatWasDone: "ran"}, nil
	})
	// A worker process: its own connection, store and task cache.
	process := func(worker string) (stop func()) {
		pool, err := workers.New(taskqueue.New(b.OtherStore(t), taskqueue.Config{}), h, workers.Config{
			Queue: queue, Worker: worker, Concurrency: 2, Logger: quiet(), Lease: 60 * time.Second, ClaimWindow: 10 * time.Second,
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { _ = pool.Run(ctx); close(done) }()
		return func() { cancel(); <-done }
	}

	stop := process("first")
	b.waitStatus(t, ids, 60*time.Second, trellis.StatusDone)
	b.waitNoAckPending(t, queue)
	stop()
	for _, id := range ids {
		recs, err := b.q.History(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if got := historyTypes(recs); got != "added,completed" {
			t.Fatalf("task %s: history %s; want added,completed (the claim carried)", id, got)
		}
	}

	// The claim consumers lose their state and are made again.
	ctx := context.Background()
	lanes, err := b.q.Lanes(ctx, queue)
	if err != nil {
		t.Fatal(err)
	}
	for _, lane := range lanes {
		if err := b.Store.JetStream().DeleteConsumer(ctx, events.StreamQueue, lane.CachedInfo().Name); err != nil {
			t.Fatal(err)
		}
	}
	fresh := taskqueue.New(b.Store, taskqueue.Config{})
	if lanes, err = fresh.Lanes(ctx, queue); err != nil {
		t.Fatal(err)
	}
	stop = process("second")
	defer stop()
	// Every dispatch delivered again and acknowledged.
	for deadline := time.Now().Add(60 * time.Second); ; {
		left := 0
		for _, lane := range lanes {
			info, err := lane.Info(ctx)
			if err != nil {
				t.Fatal(err)
			}
			left += int(info.NumPending) + info.NumAckPending
		}
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d dispatches of queue %s still undelivered or unacknowledged", left, queue)
		}
		time.Sleep(20 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, id := range ids {
		if runs[id] != 1 {
			t.Errorf("task %s ran %d times; want once", id, runs[id])
		}
		recs, err := b.q.History(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if got := historyTypes(recs); got != "added,completed" {
			t.Errorf("task %s: history %s; want added,completed", id, got)
		}
	}
}
