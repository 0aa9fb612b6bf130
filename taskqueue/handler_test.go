package taskqueue_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/taskqueue"
)

func setupQueue(t *testing.T) (*taskqueue.Handler, *eventstest.Bundle) {
	t.Helper()
	b := eventstest.Start(t)
	return taskqueue.New(b.Store, taskqueue.Config{}), b
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestQueueLifecycle(t *testing.T) {
	t.Parallel()
	q, _ := setupQueue(t)
	ctx := ctxT(t)
	added, err := q.Add(ctx, trellis.AddTaskRequest{Objective: "Refactor auth", Inputs: []string{"auth.py"}, MaxToolCalls: 5, MaxSteps: 3})
	if err != nil {
		t.Fatal(err)
	}
	if added.Status != trellis.StatusQueued || added.Queue != "default" || added.Budget.MaxSteps != 3 {
		t.Fatalf("added = %+v", added)
	}
	got, err := q.Next(ctx, trellis.NextRequest{Worker: "w1"})
	if err != nil || got == nil || got.TaskID != added.TaskID || got.Status != trellis.StatusClaimed || got.ClaimedBy != "w1" {
		t.Fatalf("next = %+v, %v", got, err)
	}
	none, err := q.Next(ctx, trellis.NextRequest{Worker: "w1"})
	if err != nil || none != nil {
		t.Fatalf("second next = %+v, %v; want nil", none, err)
	}
	if _, err := q.Done(ctx, trellis.DoneRequest{TaskID: added.TaskID, Worker: "w2", WhatWasDone: "x"}); trellis.ErrorCode(err) != trellis.CodeConflict {
		t.Fatalf("done by other worker: %v; want conflict", err)
	}
	done, err := q.Done(ctx, trellis.DoneRequest{TaskID: added.TaskID, Worker: "w1", WhatWasDone: "did it", StepsUsed: 4})
	if err != nil {
		t.Fatal(err)
	}
	if done.Status != trellis.StatusDone || !done.BudgetExhausted || done.Checkpoint.WhatWasDone != "did it" {
		t.Fatalf("done = %+v", done)
	}
	if _, err := q.Done(ctx, trellis.DoneRequest{TaskID: added.TaskID, Worker: "w1", WhatWasDone: "again"}); trellis.ErrorCode(err) != trellis.CodeConflict {
		t.Fatalf("done twice: %v; want conflict", err)
	}
	if _, err := q.Fail(ctx, trellis.FailRequest{TaskID: added.TaskID, Worker: "w1", Error: "late"}); trellis.ErrorCode(err) != trellis.CodeConflict {
		t.Fatalf("fail after done: %v; want conflict", err)
	}
	hist, err := q.History(ctx, added.TaskID)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, r := range hist {
		types = append(types, r.Type)
	}
	if fmt.Sprint(types) != "[added claimed completed]" {
		t.Fatalf("history = %v", types)
	}
	shown, err := q.Show(ctx, added.TaskID)
	if err != nil || shown.Status != trellis.StatusDone {
		t.Fatalf("show = %+v, %v", shown, err)
	}
}

func TestQueueNotFoundAndInvalid(t *testing.T) {
	t.Parallel()
	q, _ := setupQueue(t)
	ctx := ctxT(t)
	unknown := events.NewID(time.Now())
	if _, err := q.Show(ctx, unknown); trellis.ErrorCode(err) != trellis.CodeNotFound {
		t.Fatalf("show unknown: %v", err)
	}
	if _, err := q.Done(ctx, trellis.DoneRequest{TaskID: unknown, Worker: "w", WhatWasDone: "x"}); trellis.ErrorCode(err) != trellis.CodeNotFound {
		t.Fatalf("done unknown: %v", err)
	}
	if _, err := q.Add(ctx, trellis.AddTaskRequest{Objective: "x", ParentID: unknown}); trellis.ErrorCode(err) != trellis.CodeInvalid {
		t.Fatalf("unknown parent: %v", err)
	}
	cases := []trellis.AddTaskRequest{
		{Objective: ""},
		{Objective: "  "},
		{Objective: "x", MaxSteps: -1},
		{Objective: "x", MaxToolCalls: -5},
		{Objective: "x", Queue: "bad.queue"},
		{Objective: "x", ParentID: "nope"},
		{Objective: "bad \xff utf8"},
	}
	for _, c := range cases {
		_, err := q.Add(ctx, c)
		var te *trellis.Error
		if !errors.As(err, &te) || te.Code != trellis.CodeInvalid || te.Field == "" {
			t.Errorf("add %+v: %v; want invalid with a field", c, err)
		}
	}
}

func TestQueueIdempotencyKey(t *testing.T) {
	t.Parallel()
	q, _ := setupQueue(t)
	ctx := ctxT(t)
	a, err := q.Add(ctx, trellis.AddTaskRequest{Objective: "once", IdempotencyKey: "k1"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := q.Add(ctx, trellis.AddTaskRequest{Objective: "once", IdempotencyKey: "k1"})
	if err != nil {
		t.Fatal(err)
	}
	if a.TaskID != b.TaskID {
		t.Fatalf("idempotent add created two tasks: %s, %s", a.TaskID, b.TaskID)
	}
}

// TestQueueConcurrentNext: 50 concurrent claimants, every task claimed
// exactly once.
func TestQueueConcurrentNext(t *testing.T) {
	t.Parallel()
	_, b := setupQueue(t)
	ctx := ctxT(t)
	q := taskqueue.New(b.Store, taskqueue.Config{})
	const tasks = 200
	for i := 0; i < tasks; i++ {
		if _, err := q.Add(ctx, trellis.AddTaskRequest{Objective: fmt.Sprintf("t%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	claimed := map[string]string{}
	var wg sync.WaitGroup
	for w := 0; w < 50; w++ {
		// Each claimant has its own handler, as separate processes would.
		wq := taskqueue.New(b.Store, taskqueue.Config{})
		worker := fmt.Sprintf("w%d", w)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				task, err := wq.Next(ctx, trellis.NextRequest{Worker: worker})
				if err != nil {
					t.Error(err)
					return
				}
				if task == nil {
					return
				}
				mu.Lock()
				if prev, dup := claimed[task.TaskID]; dup {
					t.Errorf("task %s claimed by %s and %s", task.TaskID, prev, worker)
				}
				claimed[task.TaskID] = worker
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(claimed) != tasks {
		t.Fatalf("claimed %d of %d tasks", len(claimed), tasks)
	}
	// The log agrees: exactly one claimed event per task.
	n := 0
	if err := b.Store.Read(ctx, events.StreamQueue, "trellis.queue.*.*.claimed", 0, func(events.Recorded) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n != tasks {
		t.Fatalf("%d claimed events; want %d", n, tasks)
	}
}

// TestQueueRacingFinish: a done and a fail racing on one task cannot both
// pass (the check covers the whole aggregate, not one subject).
func TestQueueRacingFinish(t *testing.T) {
	t.Parallel()
	_, b := setupQueue(t)
	ctx := ctxT(t)
	for i := 0; i < 20; i++ {
		q := taskqueue.New(b.Store, taskqueue.Config{})
		task, err := q.Add(ctx, trellis.AddTaskRequest{Objective: "race", Queue: "race"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := q.Next(ctx, trellis.NextRequest{Queue: "race", Worker: "w"}); err != nil {
			t.Fatal(err)
		}
		q1 := taskqueue.New(b.Store, taskqueue.Config{})
		q2 := taskqueue.New(b.Store, taskqueue.Config{})
		var wg sync.WaitGroup
		var errDone, errFail error
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, errDone = q1.Done(ctx, trellis.DoneRequest{TaskID: task.TaskID, Worker: "w", WhatWasDone: "d"})
		}()
		go func() {
			defer wg.Done()
			_, errFail = q2.Fail(ctx, trellis.FailRequest{TaskID: task.TaskID, Worker: "w", Error: "f"})
		}()
		wg.Wait()
		if (errDone == nil) == (errFail == nil) {
			t.Fatalf("done err %v, fail err %v: exactly one must win", errDone, errFail)
		}
		hist, err := q.History(ctx, task.TaskID)
		if err != nil || len(hist) != 3 {
			t.Fatalf("history has %d events (%v); want 3", len(hist), err)
		}
	}
}

// TestQueueNextSeesJustAddedTask: with the claim consumer already in
// place, a next straight after an acknowledged add must claim that task,
// never answer "nothing queued" (read-your-writes).
func TestQueueNextSeesJustAddedTask(t *testing.T) {
	t.Parallel()
	q, _ := setupQueue(t)
	ctx := ctxT(t)
	if got, err := q.Next(ctx, trellis.NextRequest{Worker: "w"}); err != nil || got != nil {
		t.Fatalf("empty queue: %v, %v", got, err)
	}
	for i := 0; i < 200; i++ {
		added, err := q.Add(ctx, trellis.AddTaskRequest{Objective: fmt.Sprint(i)})
		if err != nil {
			t.Fatal(err)
		}
		got, err := q.Next(ctx, trellis.NextRequest{Worker: "w"})
		if err != nil {
			t.Fatal(err)
		}
		if got == nil || got.TaskID != added.TaskID {
			t.Fatalf("round %d: next after add returned %v; want task %s", i, got, added.TaskID)
		}
	}
}

// A next that waits on an empty queue returns a task as soon as it
// arrives on one lane: it does not sit out the wait on the other, empty
// lanes first (a lost wait, not a timing: NextWait is 20 s and the task
// arrives at once).
func TestQueueNextReturnsOnArrival(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	ctx := ctxT(t)
	const wait = 20 * time.Second
	q := taskqueue.New(b.Store, taskqueue.Config{NextWait: wait})
	if _, err := q.Lanes(ctx, "arrive"); err != nil {
		t.Fatal(err)
	}
	type result struct {
		task *trellis.Task
		err  error
		took time.Duration
	}
	got := make(chan result, 1)
	go func() {
		start := time.Now()
		task, err := q.Next(ctx, trellis.NextRequest{Queue: "arrive", Worker: "w"})
		got <- result{task, err, time.Since(start)}
	}()
	// Add only once the next is waiting on every lane (a no-wait pull
	// would otherwise take the task).
	time.Sleep(300 * time.Millisecond)
	added, err := q.Add(ctx, trellis.AddTaskRequest{Queue: "arrive", Objective: "arrives"})
	if err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.err != nil || r.task == nil || r.task.TaskID != added.TaskID {
		t.Fatalf("next = %v, %v; want task %s", r.task, r.err, added.TaskID)
	}
	if r.took >= wait {
		t.Fatalf("next took %s: it waited out the empty lanes' %s before returning the task that arrived", r.took, wait)
	}
	// The other lanes' pulls still end; nothing is lost meanwhile: a task
	// added now is the next one's.
	second, err := q.Add(ctx, trellis.AddTaskRequest{Queue: "arrive", Objective: "second"})
	if err != nil {
		t.Fatal(err)
	}
	next, err := q.Next(ctx, trellis.NextRequest{Queue: "arrive", Worker: "w"})
	if err != nil || next == nil || next.TaskID != second.TaskID {
		t.Fatalf("second next = %v, %v; want task %s", next, err, second.TaskID)
	}
}
