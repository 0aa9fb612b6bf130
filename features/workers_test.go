package features

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/cucumber/godog"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/handlers"
	"github.com/trellis/trellis/workers"
)

// poolSteps are the worker-pool steps; pools run in-process on the
// scenario's server and stop when the scenario ends.
func poolSteps(sc *godog.ScenarioContext, w *world) {
	sc.Step(`^a worker pool "([^"]*)" of (\d+) runs a handler that succeeds on queue "([^"]*)"$`, w.poolSucceeds)
	sc.Step(`^every task in queue "([^"]*)" is done$`, w.queueAllDone)
	sc.Step(`^each task in queue "([^"]*)" has exactly one completion event$`, w.oneCompletionEach)
	sc.Step(`^a queue "([^"]*)" whose lease is (\d+) seconds?$`, w.queueLease)
	sc.Step(`^a queued task "([^"]*)" in queue "([^"]*)"$`, func(obj, q string) error { return w.queuedTaskIn(obj, q, 0) })
	sc.Step(`^a queued task "([^"]*)" in queue "([^"]*)" with (\d+) attempts$`, w.queuedTaskIn)
	sc.Step(`^worker "([^"]*)" claims it and crashes without finishing$`, w.claimAndCrash)
	sc.Step(`^its history reads "([^"]*)"$`, w.historyReads)
	sc.Step(`^a worker pool "([^"]*)" of (\d+) runs a handler that always fails with "([^"]*)" on queue "([^"]*)"$`, w.poolFails)
	sc.Step(`^the task is dead after (\d+) attempts$`, w.deadAfter)
	sc.Step(`^it is listed among the dead tasks with the error "([^"]*)"$`, w.listedDead)
	sc.Step(`^an operator retries it and a worker pool "([^"]*)" of (\d+) runs a handler that succeeds on queue "([^"]*)"$`, w.retryAndSucceed)
}

func (w *world) queueHandler() *handlers.Queue {
	return handlers.NewQueue(w.srv.Store(), handlers.QueueConfig{RetryBackoff: handlers.ExponentialBackoff(100*time.Millisecond, time.Second)})
}

func (w *world) startPool(name string, n int, queue string, h workers.Handler) error {
	pool, err := workers.New(w.queueHandler(), h, workers.Config{
		Queue: queue, Worker: name, Concurrency: n, Lease: w.lease, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = pool.Run(ctx); close(done) }()
	w.stops = append(w.stops, func() { cancel(); <-done })
	return nil
}

func (w *world) poolSucceeds(name string, n int, queue string) error {
	return w.startPool(name, n, queue, workers.HandlerFunc(func(_ context.Context, t *trellis.Task, p *workers.Progress) (*trellis.Checkpoint, error) {
		if err := p.Step(); err != nil {
			return nil, err
		}
		return &trellis.Checkpoint{WhatWasDone: "handled " + t.Objective}, nil
	}))
}

func (w *world) poolFails(name string, n int, msg, queue string) error {
	return w.startPool(name, n, queue, workers.HandlerFunc(func(context.Context, *trellis.Task, *workers.Progress) (*trellis.Checkpoint, error) {
		return nil, errors.New(msg)
	}))
}

// waitQueue polls the board until every task of the queue has status s.
func (w *world) waitQueue(queue string, s trellis.Status) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := ctxT()
		l, err := listAll(ctx, w.client, trellis.ListRequest{Queue: queue})
		cancel()
		if err != nil {
			return err
		}
		n := 0
		for _, r := range l.Tasks {
			if r.Status == s {
				n++
			}
		}
		if n == len(l.Tasks) && n > 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d tasks in %s are %s", n, len(l.Tasks), queue, s)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (w *world) queueAllDone(queue string) error { return w.waitQueue(queue, trellis.StatusDone) }

func (w *world) oneCompletionEach(queue string) error {
	counts, err := w.eventCounts()
	if err != nil {
		return err
	}
	ctx, cancel := ctxT()
	defer cancel()
	l, err := listAll(ctx, w.client, trellis.ListRequest{Queue: queue})
	if err != nil {
		return err
	}
	for _, r := range l.Tasks {
		if n := counts[r.TaskID][events.TaskCompleted]; n != 1 {
			return fmt.Errorf("task %s has %d completion events", r.TaskID, n)
		}
	}
	return nil
}

func (w *world) queueLease(queue string, secs int) error {
	w.lease = time.Duration(secs) * time.Second
	ctx, cancel := ctxT()
	defer cancel()
	_, err := w.queueHandler().EnsureConsumer(ctx, queue, w.lease)
	return err
}

func (w *world) queuedTaskIn(objective, queue string, attempts int) error {
	ctx, cancel := ctxT()
	defer cancel()
	t, err := w.client.Add(ctx, trellis.AddTaskRequest{Objective: objective, Queue: queue, MaxAttempts: attempts})
	w.task = t
	return err
}

// claimAndCrash claims the next dispatch with a lease, as a pool worker
// would, and then never heartbeats, finishes or acknowledges it: what the
// server sees of a worker killed mid-task.
func (w *world) claimAndCrash(worker string) error {
	q := w.queueHandler()
	ctx, cancel := ctxT()
	defer cancel()
	cons, err := q.Consumer(ctx, w.task.Queue)
	if err != nil {
		return err
	}
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		return err
	}
	for msg := range batch.Messages() {
		t, err := q.ClaimDispatched(ctx, msg, worker, true)
		if err != nil {
			return err
		}
		if t == nil || t.TaskID != w.task.TaskID {
			return fmt.Errorf("crashing worker claimed %v", t)
		}
		return nil
	}
	return errors.New("nothing to claim")
}

func (w *world) historyReads(want string) error {
	ctx, cancel := ctxT()
	defer cancel()
	recs, err := w.srv.Service().Audit(ctx, w.task.TaskID)
	if err != nil {
		return err
	}
	var got []string
	for _, r := range recs[1:] {
		switch r.Type {
		case events.TaskClaimed, events.TaskCompleted:
			got = append(got, r.Type+" by "+r.Actor)
		default:
			got = append(got, r.Type)
		}
	}
	if strings.Join(got, ", ") != want {
		return fmt.Errorf("history reads %q; want %q", strings.Join(got, ", "), want)
	}
	return nil
}

func (w *world) deadAfter(attempts int) error {
	if err := w.waitQueue(w.task.Queue, trellis.StatusDead); err != nil {
		return err
	}
	ctx, cancel := ctxT()
	defer cancel()
	t, err := w.client.Show(ctx, w.task.TaskID)
	if err != nil {
		return err
	}
	if t.Attempts != attempts {
		return fmt.Errorf("dead after %d attempts; want %d", t.Attempts, attempts)
	}
	return nil
}

func (w *world) listedDead(msg string) error {
	ctx, cancel := ctxT()
	defer cancel()
	l, err := listAll(ctx, w.client, trellis.ListRequest{Status: trellis.StatusDead})
	if err != nil {
		return err
	}
	if len(l.Tasks) != 1 || l.Tasks[0].TaskID != w.task.TaskID {
		return fmt.Errorf("dead tasks: %+v", l.Tasks)
	}
	t, err := w.client.Show(ctx, w.task.TaskID)
	if err != nil {
		return err
	}
	if t.LastError != msg {
		return fmt.Errorf("dead task's error is %q; want %q", t.LastError, msg)
	}
	return nil
}

func (w *world) retryAndSucceed(name string, n int, queue string) error {
	w.stopPools()
	ctx, cancel := ctxT()
	defer cancel()
	if _, err := w.client.Retry(ctx, trellis.RetryRequest{TaskID: w.task.TaskID, Actor: "operator"}); err != nil {
		return err
	}
	return w.poolSucceeds(name, n, queue)
}

func (w *world) stopPools() {
	for _, stop := range w.stops {
		stop()
	}
	w.stops = nil
}
