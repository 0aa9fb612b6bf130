package taskqueue_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/taskqueue"
	"github.com/trellis/trellis/workers"
)

// TestRandomizedSchedulingInvariants runs two "servers" (handlers with
// their own reactor) and two worker pools of three slots each on one queue
// with a per-key limit of 1, adds tasks with random priorities, delays,
// prerequisites, unique keys and concurrency keys, cancels some, lets
// handlers fail at random, and once every task has ended checks every
// invariant from the log alone (see checkLogInvariants).
func TestRandomizedSchedulingInvariants(t *testing.T) {
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	b := eventstest.Start(t)
	ctx := ctxT(t)
	backoff := taskqueue.ExponentialBackoff(100*time.Millisecond, 400*time.Millisecond)
	q1 := taskqueue.New(b.Store, taskqueue.Config{RetryBackoff: backoff})
	q2 := taskqueue.New(b.Store, taskqueue.Config{RetryBackoff: backoff})
	withReactor(t, q1)
	withReactor(t, q2)
	const queue, slots = "rnd", 3
	if _, err := q1.SetPerKey(ctx, queue, "ops", 1); err != nil {
		t.Fatal(err)
	}
	handler := workers.HandlerFunc(func(ctx context.Context, task *trellis.Task, _ *workers.Progress) (*trellis.Checkpoint, error) {
		select {
		case <-time.After(time.Duration(5+rand.IntN(25)) * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if task.Metadata["fails"] == "yes" && task.Attempts < 2 {
			return nil, errors.New("flaky")
		}
		if task.Metadata["fails"] == "always" {
			return nil, errors.New("broken")
		}
		return &trellis.Checkpoint{WhatWasDone: "did " + task.Objective}, nil
	})
	for i, q := range []*taskqueue.Handler{q1, q2} {
		pool, err := workers.New(q, handler, workers.Config{Queue: queue, Worker: fmt.Sprint("pool", i), Concurrency: slots,
			Lease: 3 * time.Second, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		pctx, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { _ = pool.Run(pctx); close(done) }()
		t.Cleanup(func() { stop(); <-done })
	}

	var ids []string
	for i := 0; i < 80; i++ {
		q := q1
		if rng.IntN(2) == 0 {
			q = q2
		}
		req := trellis.AddTaskRequest{Queue: queue, Objective: fmt.Sprint("task ", i), Priority: 1 + rng.IntN(4),
			MaxAttempts: 3, Metadata: map[string]string{}}
		switch rng.IntN(10) {
		case 0:
			req.Metadata["fails"] = "yes"
		case 1:
			req.Metadata["fails"] = "always"
		}
		if rng.IntN(4) == 0 {
			req.Delay = fmt.Sprintf("%dms", 300+rng.IntN(1500))
		}
		if len(ids) > 0 && rng.IntN(4) == 0 {
			req.After = []string{ids[rng.IntN(len(ids))]}
			if len(ids) > 1 && rng.IntN(2) == 0 {
				if other := ids[rng.IntN(len(ids))]; other != req.After[0] {
					req.After = append(req.After, other)
				}
			}
		}
		if rng.IntN(6) == 0 {
			req.UniqueKey = fmt.Sprint("u", rng.IntN(3))
		}
		if rng.IntN(3) == 0 {
			req.ConcurrencyKey = fmt.Sprint("repo-", rng.IntN(3))
		}
		task, err := q.Add(ctx, req)
		if trellis.ErrorCode(err) == trellis.CodeConflict && trellis.AsError(err).Field == "after" {
			continue // a prerequisite had ended
		}
		if err != nil {
			t.Fatal(err)
		}
		if !task.Duplicate {
			ids = append(ids, task.TaskID)
		}
		if rng.IntN(12) == 0 {
			victim := ids[rng.IntN(len(ids))]
			if _, err := q.Cancel(ctx, trellis.CancelRequest{TaskID: victim, Reason: "random"}); err != nil && trellis.ErrorCode(err) != trellis.CodeConflict {
				t.Fatal(err)
			}
		}
		time.Sleep(time.Duration(rng.IntN(20)) * time.Millisecond)
	}
	waitFor(t, 90*time.Second, "every task ended", func() bool {
		for _, id := range ids {
			if !show(t, q1, id).Status.Terminal() {
				return false
			}
		}
		return true
	})
	checkLogInvariants(t, b, queue, 1, 2*slots)
}

// checkLogInvariants reads the queue's whole log and checks, from it alone:
//   - every task folds; no task is claimed while claimed; nothing but a
//     timer's due event follows a task's end; no task completes twice;
//   - a delayed task is claimed only after its due event, and not before
//     run_at;
//   - a task with prerequisites is claimed only after each is completed,
//     and is cancelled (not run) when one of them ended otherwise;
//   - a unique key is never taken by a new task while its holder has not
//     ended (no unique_for in this workload);
//   - at most perKey tasks with one concurrency key are claimed at once;
//   - a priority lane waits behind worse lanes by at most `claimants`
//     claims: when a task is queued and claimable (no concurrency key, due,
//     retry time passed), fewer than `claimants` claims of worse priority
//     follow before its own claim (one per slot: each slot may hold a
//     dispatch fetched just before).
func checkLogInvariants(t *testing.T, b *eventstest.Bundle, queue string, perKey, claimants int) {
	t.Helper()
	tasks := map[string]*trellis.Task{}
	completedAt := map[string]uint64{}
	running := map[string]map[string]bool{}
	holder := map[string]string{}
	type waiter struct {
		priority int
		since    time.Time
		overtook int
	}
	claimable := map[string]*waiter{}
	var recs []events.Recorded
	err := b.Store.Read(context.Background(), events.StreamQueue, "trellis.queue."+queue+".>", 0, func(rec events.Recorded) error {
		if taskqueue.IsTaskSubject(rec.Subject) {
			recs = append(recs, rec)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) < 100 {
		t.Fatalf("only %d events: the workload did too little", len(recs))
	}
	claims := 0
	for _, rec := range recs {
		id := rec.AggregateID
		before := tasks[id].Clone()
		after, err := taskqueue.Apply(tasks[id], rec)
		if err != nil {
			t.Fatalf("#%d %s of %s: %v", rec.Seq, rec.Type, id, err)
		}
		tasks[id] = after
		if before != nil && before.Status.Terminal() && rec.Type != taskqueue.Due {
			t.Fatalf("#%d: %s after task %s ended %s", rec.Seq, rec.Type, id, before.Status)
		}
		switch rec.Type {
		case taskqueue.Added:
			if after.UniqueKey != "" {
				if h := holder[after.UniqueKey]; h != "" && !tasks[h].Status.Terminal() {
					t.Fatalf("#%d: task %s took unique key %q while %s (%s) held it", rec.Seq, id, after.UniqueKey, h, tasks[h].Status)
				}
				holder[after.UniqueKey] = id
			}
		case taskqueue.Claimed:
			claims++
			if before.Status == trellis.StatusClaimed {
				t.Fatalf("#%d: task %s claimed while %s held it", rec.Seq, id, before.ClaimedBy)
			}
			if before.RunAt != nil && (!before.Due || rec.Time.Before(*before.RunAt)) {
				t.Fatalf("#%d: task %s claimed at %s before its due event or run_at %s", rec.Seq, id, rec.Time, before.RunAt)
			}
			for _, p := range before.After {
				if completedAt[p] == 0 {
					t.Fatalf("#%d: task %s claimed before its prerequisite %s completed", rec.Seq, id, p)
				}
			}
			if k := before.ConcurrencyKey; k != "" {
				if running[k] == nil {
					running[k] = map[string]bool{}
				}
				running[k][id] = true
				if len(running[k]) > perKey {
					t.Fatalf("#%d: %d tasks with concurrency key %q running at once: %v", rec.Seq, len(running[k]), k, running[k])
				}
			}
			for other, w := range claimable {
				if other != id && w.priority < after.Priority && rec.Time.After(w.since.Add(200*time.Millisecond)) {
					w.overtook++
					if w.overtook > claimants {
						t.Fatalf("#%d: priority-%d task %s waited behind %d claims of worse priority", rec.Seq, w.priority, other, w.overtook)
					}
				}
			}
			delete(claimable, id)
		case taskqueue.Completed:
			if completedAt[id] != 0 {
				t.Fatalf("#%d: task %s completed twice", rec.Seq, id)
			}
			completedAt[id] = rec.Seq
		}
		if before != nil && before.Status == trellis.StatusClaimed && after.Status != trellis.StatusClaimed && before.ConcurrencyKey != "" {
			delete(running[before.ConcurrencyKey], id)
		}
		// Claimable now: queued and due, no concurrency key (a key may hold
		// it back), no retry pending.
		if after.Status == trellis.StatusQueued && after.ConcurrencyKey == "" && after.CancelRequested == nil {
			since := rec.Time
			if after.RetryAt != nil && after.RetryAt.After(since) {
				since = *after.RetryAt
			}
			if w := claimable[id]; w == nil {
				claimable[id] = &waiter{priority: after.Priority, since: since}
			}
		} else if after.Status != trellis.StatusQueued {
			delete(claimable, id)
		}
	}
	// Dependants of a prerequisite that did not complete were cancelled,
	// never run.
	ended := map[trellis.Status]int{}
	for id, task := range tasks {
		ended[task.Status]++
		for _, p := range task.After {
			if tasks[p].Status != trellis.StatusDone && task.Status != trellis.StatusCancelled {
				t.Fatalf("task %s ended %s though its prerequisite %s ended %s", id, task.Status, p, tasks[p].Status)
			}
		}
	}
	if claims == 0 || ended[trellis.StatusDone] == 0 {
		t.Fatalf("nothing ran: %v", ended)
	}
	t.Logf("%d events, %d claims; tasks ended: %v", len(recs), claims, ended)
}
