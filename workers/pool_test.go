package workers_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/handlers"
	"github.com/trellis/trellis/workers"
)

type bundle struct {
	*eventstest.Bundle
	q *handlers.Queue
}

func setup(t *testing.T) *bundle {
	t.Helper()
	b := &bundle{Bundle: eventstest.Start(t)}
	b.q = handlers.NewQueue(b.Store, handlers.QueueConfig{RetryBackoff: handlers.ExponentialBackoff(200*time.Millisecond, time.Second)})
	return b
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

func (b *bundle) add(t *testing.T, queue string, n int, maxAttempts int) []string {
	t.Helper()
	var ids []string
	for i := 0; i < n; i++ {
		task, err := b.q.Add(context.Background(), trellis.AddTaskRequest{Queue: queue, Objective: fmt.Sprintf("task %d", i), MaxAttempts: maxAttempts, MaxSteps: 5})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, task.TaskID)
	}
	return ids
}

// waitStatus polls until every task has one of the statuses.
func (b *bundle) waitStatus(t *testing.T, ids []string, within time.Duration, statuses ...trellis.Status) map[string]*trellis.Task {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		out := map[string]*trellis.Task{}
		for _, id := range ids {
			task, err := b.q.Show(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range statuses {
				if task.Status == s {
					out[id] = task
				}
			}
		}
		if len(out) == len(ids) {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d tasks reached %v", len(out), len(ids), statuses)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (b *bundle) countEvents(t *testing.T, typ string) map[string]int {
	t.Helper()
	counts := map[string]int{}
	err := b.Store.Read(context.Background(), events.StreamQueue, "", 0, func(r events.Recorded) error {
		if r.Type == typ {
			counts[r.AggregateID]++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return counts
}

func runPool(t *testing.T, b *bundle, h workers.Handler, cfg workers.Config) (stop func()) {
	t.Helper()
	cfg.Logger = quiet()
	pool, err := workers.New(b.q, h, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = pool.Run(ctx); close(done) }()
	return func() { cancel(); <-done }
}

func TestPoolRunsEveryTaskOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ids := b.add(t, "pool", 60, 0)
	var runs atomic.Int64
	h := workers.HandlerFunc(func(ctx context.Context, task *trellis.Task, p *workers.Progress) (*trellis.Checkpoint, error) {
		runs.Add(1)
		if err := p.Step(); err != nil {
			return nil, err
		}
		return &trellis.Checkpoint{WhatWasDone: "ran " + task.Objective, Citations: []string{"chunk_1"}}, nil
	})
	stop1 := runPool(t, b, h, workers.Config{Queue: "pool", Worker: "a", Concurrency: 4})
	stop2 := runPool(t, b, h, workers.Config{Queue: "pool", Worker: "b", Concurrency: 4})
	done := b.waitStatus(t, ids, 30*time.Second, trellis.StatusDone)
	stop1()
	stop2()
	for id, task := range done {
		if task.Checkpoint.WhatWasDone != "ran "+task.Objective || task.Checkpoint.Usage.StepsUsed != 1 {
			t.Fatalf("task %s checkpoint = %+v", id, task.Checkpoint)
		}
	}
	for id, n := range b.countEvents(t, events.TaskCompleted) {
		if n != 1 {
			t.Fatalf("task %s completed %d times", id, n)
		}
	}
	if runs.Load() != 60 {
		t.Fatalf("handlers ran %d times for 60 tasks", runs.Load())
	}
}

func TestPoolBudgetExhausted(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ids := b.add(t, "budget", 1, 0) // max_steps 5
	h := workers.HandlerFunc(func(ctx context.Context, task *trellis.Task, p *workers.Progress) (*trellis.Checkpoint, error) {
		for {
			if err := p.Step(); err != nil {
				return &trellis.Checkpoint{WhatWasDone: "stopped when the budget ran out"}, err
			}
		}
	})
	stop := runPool(t, b, h, workers.Config{Queue: "budget", Concurrency: 1})
	got := b.waitStatus(t, ids, 10*time.Second, trellis.StatusFailed)[ids[0]]
	stop()
	if !got.BudgetExhausted || !got.Checkpoint.BudgetExhausted || got.Checkpoint.Usage.StepsUsed != 6 || got.Attempts != 1 {
		t.Fatalf("budget-exhausted task = %+v / %+v", got, got.Checkpoint)
	}
	if got.Checkpoint.WhatWasDone != "stopped when the budget ran out" {
		t.Fatalf("checkpoint lost the handler's account: %+v", got.Checkpoint)
	}
}

func TestPoolRetriesThenDeadLetter(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ids := b.add(t, "flaky", 1, 3)
	h := workers.HandlerFunc(func(context.Context, *trellis.Task, *workers.Progress) (*trellis.Checkpoint, error) {
		return nil, errors.New("always broken")
	})
	stop := runPool(t, b, h, workers.Config{Queue: "flaky", Concurrency: 2})
	dead := b.waitStatus(t, ids, 20*time.Second, trellis.StatusDead)[ids[0]]
	stop()
	if dead.Attempts != 3 || dead.LastError != "always broken" {
		t.Fatalf("dead task = %+v", dead)
	}
	recs, err := b.q.History(context.Background(), ids[0])
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	var claims []time.Time
	for _, r := range recs {
		types = append(types, r.Type)
		if r.Type == events.TaskClaimed {
			claims = append(claims, r.Time)
		}
	}
	if fmt.Sprint(types) != "[added claimed attempt_failed claimed attempt_failed claimed dead]" {
		t.Fatalf("history = %v", types)
	}
	// Backoff 200 ms then 400 ms, ±20 % jitter.
	if g := claims[1].Sub(claims[0]); g < 160*time.Millisecond {
		t.Fatalf("second attempt after %s; want the ~200 ms backoff", g)
	}
	if g := claims[2].Sub(claims[1]); g < 320*time.Millisecond {
		t.Fatalf("third attempt after %s; want the ~400 ms backoff", g)
	}
}

func TestPoolDrainReleasesUnfinished(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ids := b.add(t, "drain", 6, 0)
	var started sync.WaitGroup
	started.Add(3)
	h := workers.HandlerFunc(func(ctx context.Context, task *trellis.Task, _ *workers.Progress) (*trellis.Checkpoint, error) {
		started.Done()
		<-ctx.Done() // never finishes on its own
		return nil, ctx.Err()
	})
	stop := runPool(t, b, h, workers.Config{Queue: "drain", Concurrency: 3, Grace: 300 * time.Millisecond})
	started.Wait()
	stop()
	got := b.waitStatus(t, ids, 5*time.Second, trellis.StatusQueued)
	released := b.countEvents(t, events.TaskReleased)
	if len(released) != 3 {
		t.Fatalf("%d tasks released; want the 3 in flight", len(released))
	}
	for id := range released {
		if got[id].Attempts != 0 || got[id].ClaimedBy != "" {
			t.Fatalf("released task %s = %+v", id, got[id])
		}
	}
	// A new pool picks them all up.
	stop = runPool(t, b, workers.HandlerFunc(func(context.Context, *trellis.Task, *workers.Progress) (*trellis.Checkpoint, error) {
		return &trellis.Checkpoint{WhatWasDone: "ok"}, nil
	}), workers.Config{Queue: "drain", Concurrency: 3})
	b.waitStatus(t, ids, 10*time.Second, trellis.StatusDone)
	stop()
}

func TestPoolPausedQueueClaimsNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	if _, err := b.q.Pause(ctx, "paused", "ops", "test"); err != nil {
		t.Fatal(err)
	}
	ids := b.add(t, "paused", 3, 0)
	ran := make(chan string, 3)
	stop := runPool(t, b, workers.HandlerFunc(func(_ context.Context, task *trellis.Task, _ *workers.Progress) (*trellis.Checkpoint, error) {
		ran <- task.TaskID
		return &trellis.Checkpoint{WhatWasDone: "ok"}, nil
	}), workers.Config{Queue: "paused", Concurrency: 2})
	defer stop()
	select {
	case id := <-ran:
		t.Fatalf("paused queue ran task %s", id)
	case <-time.After(700 * time.Millisecond):
	}
	if _, err := b.q.Resume(ctx, "paused", "ops"); err != nil {
		t.Fatal(err)
	}
	b.waitStatus(t, ids, 10*time.Second, trellis.StatusDone)
}

func TestPoolConfigErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h := workers.HandlerFunc(func(context.Context, *trellis.Task, *workers.Progress) (*trellis.Checkpoint, error) { return nil, nil })
	if _, err := workers.New(b.q, h, workers.Config{Queue: "bad queue"}); trellis.ErrorCode(err) != trellis.CodeInvalid {
		t.Fatalf("bad queue: %v", err)
	}
	if _, err := workers.New(b.q, h, workers.Config{Lease: time.Second, Heartbeat: 2 * time.Second}); trellis.ErrorCode(err) != trellis.CodeInvalid {
		t.Fatalf("heartbeat >= lease: %v", err)
	}
}
