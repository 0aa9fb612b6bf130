package taskqueue_test

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/taskqueue"
)

// TestHoldReadsTheEndOfATaskWhoseDispatchComesBackFirst: a first delivery
// does not prove that no one held the dispatch before. A worker process
// holds a task and completes it in one event (the completion carries the
// claim: nothing but the log records that the task ran); then the queue's
// claim consumers lose their state (removed by an operator, or a server
// that lost them) and are made again, and they deliver the same dispatch
// again as a first delivery. Another worker process, which never saw the
// task, must not hold it: only the log tells that it ended. The
// dispatch is acknowledged and the history stays added, completed.
func TestHoldReadsTheEndOfATaskWhoseDispatchComesBackFirst(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	ctx := ctxT(t)
	adder := taskqueue.New(b.Store, taskqueue.Config{})
	process := func() *taskqueue.Handler { return workerProcess(t, b) }
	const queue = "comesback"
	task, err := adder.Add(ctx, trellis.AddTaskRequest{Queue: queue, Objective: "once", MaxAttempts: 3})
	if err != nil {
		t.Fatal(err)
	}
	fetchFirst := func(w *taskqueue.Handler) jetstream.Msg {
		t.Helper()
		lanes, err := w.Lanes(ctx, queue)
		if err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); {
			for _, lane := range lanes {
				batch, err := lane.Fetch(1, jetstream.FetchMaxWait(200*time.Millisecond))
				if err != nil {
					t.Fatal(err)
				}
				for m := range batch.Messages() {
					meta, err := m.Metadata()
					if err != nil {
						t.Fatal(err)
					}
					if meta.NumDelivered != 1 || strings.Split(m.Subject(), ".")[3] != task.TaskID {
						t.Fatalf("fetched %s, delivery %d; want the task's dispatch, first delivery", m.Subject(), meta.NumDelivered)
					}
					return m
				}
			}
		}
		t.Fatal("no dispatch delivered")
		return nil
	}

	first := process()
	h, err := first.HoldDispatched(ctx, fetchFirst(first), "pool/0")
	if err != nil || h == nil || h.Recorded() {
		t.Fatalf("first hold = %+v, %v; want an unrecorded hold", h, err)
	}
	if _, err := first.DoneHeld(ctx, h, trellis.DoneRequest{TaskID: task.TaskID, Worker: "pool/0", WhatWasDone: "ran"}); err != nil {
		t.Fatal(err)
	}
	if got := historyTypes(t, adder, task.TaskID); got != "added completed" {
		t.Fatalf("history %s; want added completed (the claim carried)", got)
	}

	// The claim consumers lose their state: made again, they deliver
	// every dispatch of the queue again, each as a first delivery. (The
	// first process's acknowledgement is not awaited: a dispatch
	// acknowledged or not comes back all the same.)
	lanes, err := first.Lanes(ctx, queue)
	if err != nil {
		t.Fatal(err)
	}
	js := b.Store.JetStream()
	for _, lane := range lanes {
		if err := js.DeleteConsumer(ctx, events.StreamQueue, lane.CachedInfo().Name); err != nil {
			t.Fatal(err)
		}
	}
	second := process()
	msg := fetchFirst(second)
	h, err = second.HoldDispatched(ctx, msg, "pool/1")
	if err != nil {
		t.Fatal(err)
	}
	if h != nil {
		t.Fatalf("a completed task whose dispatch came back as a first delivery is held again (%+v): it would run twice", h.Task)
	}
	if got := historyTypes(t, adder, task.TaskID); got != "added completed" {
		t.Fatalf("history %s; want added completed", got)
	}
}

// workerProcess is the queue handler of a worker process beside b: its
// own connection, store and task cache (it never saw the tasks b's
// handlers added).
func workerProcess(t *testing.T, b *eventstest.Bundle) *taskqueue.Handler {
	t.Helper()
	return taskqueue.New(b.OtherStore(t), taskqueue.Config{})
}
