package workers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/taskqueue"
	"github.com/trellis/trellis/workers"
)

type bundle struct {
	*eventstest.Bundle
	q *taskqueue.Handler
}

func setup(t *testing.T) *bundle {
	t.Helper()
	b := &bundle{Bundle: eventstest.Start(t)}
	b.q = taskqueue.New(b.Store, taskqueue.Config{RetryBackoff: taskqueue.ExponentialBackoff(200*time.Millisecond, time.Second)})
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

// logCapture records a pool's log lines (JSON) for assertions.
type logCapture struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logCapture) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logCapture) logger() *slog.Logger { return slog.New(slog.NewJSONHandler(l, nil)) }

// lines returns the records with the message msg (all records when msg is
// empty).
func (l *logCapture) lines(t *testing.T, msg string) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(l.buf.String()), "\n") {
		if line == "" {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line is not JSON: %v: %s", err, line)
		}
		if msg == "" || rec["msg"] == msg {
			out = append(out, rec)
		}
	}
	return out
}

func runPool(t *testing.T, b *bundle, h workers.Handler, cfg workers.Config) (stop func()) {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = quiet()
	}
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
	for id, n := range b.countEvents(t, taskqueue.Completed) {
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
	// The first attempt's outcome carries its claim (a first delivery
	// held, see taskqueue.Hold); the retries are claimed first.
	if c, ok := taskqueue.ClaimOf(recs[1]); !ok || c.Attempt != 1 {
		t.Fatalf("the first attempt_failed carries no claim: %s", recs[1].Payload)
	}
	var types []string
	var claims []time.Time
	for _, r := range taskqueue.ExpandClaims(recs) {
		types = append(types, r.Type)
		if r.Type == taskqueue.Claimed {
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
	released := b.countEvents(t, taskqueue.Released)
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

// TestPoolPausedQueueClaimsNothing: on a paused queue the pool's fetches
// wait on the consumer while every dispatch stays pending: the consumer
// reports itself paused with the pool's pull requests waiting and all
// three dispatches undelivered (a state delivery would end at once), the
// log has no claim and the pool logged none; after resume every task runs.
func TestPoolPausedQueueClaimsNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	if _, err := b.q.Pause(ctx, "paused", "ops", "test"); err != nil {
		t.Fatal(err)
	}
	ids := b.add(t, "paused", 3, 0)
	var logs logCapture
	stop := runPool(t, b, workers.HandlerFunc(func(_ context.Context, task *trellis.Task, _ *workers.Progress) (*trellis.Checkpoint, error) {
		return &trellis.Checkpoint{WhatWasDone: "ok"}, nil
	}), workers.Config{Queue: "paused", Concurrency: 2, Logger: logs.logger()})
	defer stop()
	cons, err := b.q.Consumer(ctx, "paused")
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, err := cons.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.Paused && info.NumWaiting > 0 && info.NumPending == 3 && info.NumAckPending == 0 && info.Delivered.Consumer == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("consumer never showed the pool waiting on a paused queue with 3 dispatches pending: paused=%v waiting=%d pending=%d ack_pending=%d delivered=%d",
				info.Paused, info.NumWaiting, info.NumPending, info.NumAckPending, info.Delivered.Consumer)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := len(b.countEvents(t, taskqueue.Claimed)); n != 0 {
		t.Fatalf("%d tasks claimed on a paused queue", n)
	}
	if got := logs.lines(t, "task claimed"); len(got) != 0 {
		t.Fatalf("the pool logged claims on a paused queue: %v", got)
	}
	if _, err := b.q.Resume(ctx, "paused", "ops"); err != nil {
		t.Fatal(err)
	}
	b.waitStatus(t, ids, 10*time.Second, trellis.StatusDone)
}

// TestPoolLogsEachTask: one log line per claim, finish, failure, retry and
// dead letter, each with the task id, the attempt and the claimant.
func TestPoolLogsEachTask(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	ok, err := b.q.Add(ctx, trellis.AddTaskRequest{Queue: "logs", Objective: "ok", MaxSteps: 5})
	if err != nil {
		t.Fatal(err)
	}
	flaky, err := b.q.Add(ctx, trellis.AddTaskRequest{Queue: "logs", Objective: "flaky", MaxAttempts: 2, MaxSteps: 5})
	if err != nil {
		t.Fatal(err)
	}
	greedy, err := b.q.Add(ctx, trellis.AddTaskRequest{Queue: "logs", Objective: "greedy", MaxSteps: 1})
	if err != nil {
		t.Fatal(err)
	}
	var logs logCapture
	stop := runPool(t, b, workers.HandlerFunc(func(_ context.Context, task *trellis.Task, p *workers.Progress) (*trellis.Checkpoint, error) {
		switch task.Objective {
		case "flaky":
			return nil, errors.New("broken")
		case "greedy":
			for {
				if err := p.Step(); err != nil {
					return nil, err
				}
			}
		}
		return &trellis.Checkpoint{WhatWasDone: "fine"}, nil
	}), workers.Config{Queue: "logs", Worker: "lw", Logger: logs.logger()})
	b.waitStatus(t, []string{ok.TaskID}, 10*time.Second, trellis.StatusDone)
	b.waitStatus(t, []string{flaky.TaskID}, 10*time.Second, trellis.StatusDead)
	b.waitStatus(t, []string{greedy.TaskID}, 10*time.Second, trellis.StatusFailed)
	stop()
	type key struct {
		msg, task string
		attempt   float64
	}
	seen := map[key]map[string]any{}
	for _, rec := range logs.lines(t, "") {
		if id, _ := rec["task"].(string); id != "" {
			attempt, _ := rec["attempt"].(float64)
			k := key{rec["msg"].(string), id, attempt}
			if seen[k] != nil {
				t.Errorf("logged twice: %v", rec)
			}
			seen[k] = rec
		}
	}
	want := []key{
		{"task claimed", ok.TaskID, 1}, {"task done", ok.TaskID, 1},
		{"task claimed", flaky.TaskID, 1}, {"task failed, retry scheduled", flaky.TaskID, 1},
		{"task claimed", flaky.TaskID, 2}, {"task dead", flaky.TaskID, 2},
		{"task claimed", greedy.TaskID, 1}, {"task failed", greedy.TaskID, 1},
	}
	for _, k := range want {
		rec := seen[k]
		if rec == nil {
			t.Errorf("no %q line for task %s attempt %v; logged:\n%s", k.msg, k.task, k.attempt, logs.buf.String())
			continue
		}
		if w, _ := rec["worker"].(string); !strings.HasPrefix(w, "lw/") || rec["queue"] != "logs" {
			t.Errorf("line lacks the claimant or queue: %v", rec)
		}
		delete(seen, k)
	}
	for k := range seen {
		t.Errorf("unexpected per-task line %+v", k)
	}
	if rec := logsFor(logs.lines(t, "task failed, retry scheduled"), flaky.TaskID); rec == nil || rec["error"] != "broken" || rec["retry_at"] == nil {
		t.Errorf("retry line lacks error or retry_at: %v", rec)
	}
	if rec := logsFor(logs.lines(t, "task dead"), flaky.TaskID); rec == nil || rec["error"] != "broken" {
		t.Errorf("dead-letter line lacks the error: %v", rec)
	}
	if rec := logsFor(logs.lines(t, "task failed"), greedy.TaskID); rec == nil || rec["budget_exhausted"] != true {
		t.Errorf("budget failure line: %v", rec)
	}
}

func logsFor(recs []map[string]any, task string) map[string]any {
	for _, r := range recs {
		if r["task"] == task {
			return r
		}
	}
	return nil
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

// TestPoolOverspentBudgetFails: a handler that finishes but reports more
// steps or tool calls than the task's budget (an exec command's JSON
// report, or a Go handler's checkpoint) ends the task failed with
// budget_exhausted after one attempt, its account kept; one that spends
// exactly its budget is done.
func TestPoolOverspentBudgetFails(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	add := func(objective string, steps, tools int) string {
		t.Helper()
		task, err := b.q.Add(ctx, trellis.AddTaskRequest{Queue: "spend", Objective: objective, MaxSteps: steps, MaxToolCalls: tools, MaxAttempts: 3})
		if err != nil {
			t.Fatal(err)
		}
		return task.TaskID
	}
	overSteps := add("exec-steps", 5, 20) // the command reports 9 steps
	overTools := add("exec-tools", 10, 2) // the command reports 3 tool calls
	exact := add("exec-exact", 9, 3)      // 9 steps, 3 tool calls: exactly the budget
	goOver := add("go-over", 1, 20)       // a Go handler's checkpoint says 2 steps
	exec := &workers.Exec{Command: `echo '{"what_was_done":"did a lot","steps_used":9,"tool_calls_used":3}'`}
	stop := runPool(t, b, workers.HandlerFunc(func(ctx context.Context, task *trellis.Task, p *workers.Progress) (*trellis.Checkpoint, error) {
		if task.Objective == "go-over" {
			return &trellis.Checkpoint{WhatWasDone: "two steps", Usage: trellis.Usage{StepsUsed: 2}}, nil
		}
		return exec.Handle(ctx, task, p)
	}), workers.Config{Queue: "spend", Concurrency: 2})
	failed := b.waitStatus(t, []string{overSteps, overTools, goOver}, 15*time.Second, trellis.StatusFailed, trellis.StatusDone, trellis.StatusDead, trellis.StatusQueued)
	b.waitStatus(t, []string{exact}, 15*time.Second, trellis.StatusDone)
	stop()
	for id, task := range failed {
		task, _ = b.q.Show(ctx, id)
		if task.Status != trellis.StatusFailed || !task.BudgetExhausted || task.Checkpoint == nil || !task.Checkpoint.BudgetExhausted || task.Attempts != 1 {
			t.Errorf("%s: %s, budget_exhausted %v, attempts %d; want failed, budget_exhausted, 1 attempt (checkpoint %+v)",
				task.Objective, task.Status, task.BudgetExhausted, task.Attempts, task.Checkpoint)
			continue
		}
		if want := map[string]string{"exec-steps": "did a lot", "exec-tools": "did a lot", "go-over": "two steps"}[task.Objective]; task.Checkpoint.WhatWasDone != want {
			t.Errorf("%s: what_was_done %q; want the handler's %q", task.Objective, task.Checkpoint.WhatWasDone, want)
		}
		if !strings.Contains(task.Checkpoint.Error, "budget") {
			t.Errorf("%s: error %q does not say the budget was overspent", task.Objective, task.Checkpoint.Error)
		}
	}
	done, _ := b.q.Show(ctx, exact)
	if done.BudgetExhausted || done.Checkpoint.Usage.StepsUsed != 9 || done.Checkpoint.Usage.ToolCallsUsed != 3 {
		t.Errorf("exact budget: %+v / %+v", done, done.Checkpoint)
	}
}

// A pool started with a short lease shortens the queue consumer's lease
// for every pool of the queue. A long task another pool runs must not
// expire then: every pool heartbeats at a third of the consumer's current
// lease, not of the lease it was started with.
func TestPoolHeartbeatsFollowTheQueueLease(t *testing.T) {
	t.Parallel()
	b := setup(t)
	release := make(chan struct{})
	started := make(chan string, 1)
	long := workers.HandlerFunc(func(ctx context.Context, task *trellis.Task, _ *workers.Progress) (*trellis.Checkpoint, error) {
		started <- task.TaskID
		select {
		case <-release:
		case <-ctx.Done():
		}
		return &trellis.Checkpoint{WhatWasDone: "long work"}, nil
	})
	pa, err := workers.New(b.q, long, workers.Config{Queue: "lease", Worker: "slowpool", Lease: 30 * time.Second, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = pa.Run(ctx) }()
	ids := b.add(t, "lease", 1, 3)
	var id string
	select {
	case id = <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("the long task never started")
	}
	// Another pool of the queue asks for a 1 s lease.
	fast := workers.HandlerFunc(func(context.Context, *trellis.Task, *workers.Progress) (*trellis.Checkpoint, error) {
		return &trellis.Checkpoint{WhatWasDone: "quick"}, nil
	})
	pb, err := workers.New(taskqueue.New(b.Store, taskqueue.Config{}), fast, workers.Config{Queue: "lease", Worker: "fastpool", Lease: time.Second, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = pb.Run(ctx) }()
	cons, err := b.q.Consumer(context.Background(), "lease")
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		info, err := cons.Info(context.Background())
		if err == nil && info.Config.AckWait == time.Second {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the consumer's lease never became 1 s: %+v, %v", info, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Five leases of the new length pass while the long task runs.
	time.Sleep(5 * time.Second)
	close(release)
	b.waitStatus(t, ids, 30*time.Second, trellis.StatusDone)
	hist, err := b.q.History(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, r := range hist {
		types = append(types, r.Type+" by "+r.Actor)
	}
	if got := strings.Join(types, ", "); got != "added by , claimed by slowpool/0, completed by slowpool/0" {
		t.Fatalf("history = %s; the long task's lease expired under the shorter queue lease", got)
	}
}
