package workflow_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/audit"
	"github.com/trellis/trellis/workflow"
)

// Cancel reaches the running step (its context ends), no further step
// runs, and the compensations of the completed steps run in reverse order,
// each journaled once.
func TestCancelReachesRunningStepAndCompensatesInReverse(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := ctxT(t)
	var mu sync.Mutex
	var undone []string
	started := make(chan struct{}, 1)
	var afterCancel atomic.Bool
	undo := func(name string) func(context.Context) error {
		return func(context.Context) error {
			mu.Lock()
			defer mu.Unlock()
			undone = append(undone, name)
			return nil
		}
	}
	noop := func(context.Context) (int, error) { return 1, nil }
	if err := workflow.Register(b.e, "saga", 1, func(c *workflow.Context, _ any) (int, error) {
		for _, n := range []string{"a", "b", "c"} {
			if _, err := workflow.Step(c, n, noop, workflow.StepOptions{Compensate: undo(n)}); err != nil {
				return 0, err
			}
		}
		_, err := workflow.Step(c, "long", func(ctx context.Context) (int, error) {
			started <- struct{}{}
			<-ctx.Done() // only a cancel ends it
			return 0, ctx.Err()
		}, workflow.StepOptions{Compensate: undo("long")})
		if err != nil {
			return 0, err
		}
		afterCancel.Store(true)
		return workflow.Step(c, "never", noop)
	}); err != nil {
		t.Fatal(err)
	}
	b.serve(t, workflow.ServeConfig{})
	waitRegistered(t, b.e, "saga")
	run, err := b.e.Start(ctx, workflow.StartRequest{Workflow: "saga"})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("step long never started")
	}
	if _, err := b.e.Cancel(ctx, workflow.CancelRequest{RunID: run.RunID, Reason: "test"}); err != nil {
		t.Fatal(err)
	}
	r := waitStatus(t, b.e, run.RunID, workflow.StatusCancelled, workflow.StatusFailed, workflow.StatusCompleted)
	if r.Status != workflow.StatusCancelled || afterCancel.Load() {
		t.Fatalf("status %s (after cancel ran: %v)", r.Status, afterCancel.Load())
	}
	mu.Lock()
	got := slices.Clone(undone)
	mu.Unlock()
	if strings.Join(got, ",") != "c,b,a" {
		t.Fatalf("compensations ran %v, want c,b,a", got)
	}
	var journal []string
	for _, e := range r.Journal {
		journal = append(journal, e.Name+":"+e.Status)
	}
	if strings.Join(journal, ",") != "a:completed,b:completed,c:completed,compensate:c:completed,compensate:b:completed,compensate:a:completed" {
		t.Fatalf("journal = %v", journal)
	}
	if _, err := b.e.Cancel(ctx, workflow.CancelRequest{RunID: run.RunID}); trellis.ErrorCode(err) != trellis.CodeConflict {
		t.Fatalf("cancel of a cancelled run: %v", err)
	}
}

// A failed step fails the run and compensates; retry resumes the run from
// the failed step (the steps before it are not run again).
func TestRetryResumesFromTheFailedStep(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := ctxT(t)
	var runsA, runsB atomic.Int32
	var healed atomic.Bool
	if err := workflow.Register(b.e, "flaky", 1, func(c *workflow.Context, _ any) (string, error) {
		if _, err := workflow.Step(c, "a", func(context.Context) (int, error) { runsA.Add(1); return 1, nil }); err != nil {
			return "", err
		}
		return workflow.Step(c, "b", func(context.Context) (string, error) {
			runsB.Add(1)
			if !healed.Load() {
				return "", errors.New("service down")
			}
			return "ok", nil
		}, workflow.StepOptions{Attempts: 3, Backoff: func(int) time.Duration { return time.Millisecond }})
	}); err != nil {
		t.Fatal(err)
	}
	b.serve(t, workflow.ServeConfig{})
	waitRegistered(t, b.e, "flaky")
	run, err := b.e.Start(ctx, workflow.StartRequest{Workflow: "flaky"})
	if err != nil {
		t.Fatal(err)
	}
	r := waitStatus(t, b.e, run.RunID, workflow.StatusFailed, workflow.StatusCompleted)
	if r.Status != workflow.StatusFailed || !strings.Contains(r.Error, "service down") || runsB.Load() != 3 {
		t.Fatalf("run %s %q, b ran %d times", r.Status, r.Error, runsB.Load())
	}
	if _, err := b.e.Retry(ctx, workflow.RetryRequest{RunID: "NOPE"}); trellis.ErrorCode(err) != trellis.CodeNotFound {
		t.Fatalf("retry unknown: %v", err)
	}
	healed.Store(true)
	if _, err := b.e.Retry(ctx, workflow.RetryRequest{RunID: run.RunID}); err != nil {
		t.Fatal(err)
	}
	r = waitStatus(t, b.e, run.RunID, workflow.StatusCompleted, workflow.StatusFailed)
	if r.Status != workflow.StatusCompleted || string(r.Output) != `"ok"` || runsA.Load() != 1 {
		t.Fatalf("after retry: %s %s, a ran %d times", r.Status, r.Output, runsA.Load())
	}
	if _, err := b.e.Retry(ctx, workflow.RetryRequest{RunID: run.RunID}); trellis.ErrorCode(err) != trellis.CodeConflict {
		t.Fatalf("retry of a completed run: %v", err)
	}
}

// A run whose code asks, on replay, for another step than its journal
// holds stops as failed naming both; it never runs the new step.
func TestNondeterminismFailsNamingBothSteps(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := ctxT(t)
	var changed atomic.Bool
	var ranNew atomic.Bool
	if err := workflow.Register(b.e, "drift", 1, func(c *workflow.Context, _ any) (string, error) {
		first := "reserve"
		if changed.Load() {
			first = "reserve-v2"
		}
		if _, err := workflow.Step(c, first, func(context.Context) (int, error) {
			if first == "reserve-v2" {
				ranNew.Store(true)
			}
			return 1, nil
		}); err != nil {
			return "", err
		}
		return workflow.WaitFor[string](c, "go", 0)
	}); err != nil {
		t.Fatal(err)
	}
	b.serve(t, workflow.ServeConfig{})
	waitRegistered(t, b.e, "drift")
	run, err := b.e.Start(ctx, workflow.StartRequest{Workflow: "drift"})
	if err != nil {
		t.Fatal(err)
	}
	waitStatus(t, b.e, run.RunID, workflow.StatusWaiting)
	changed.Store(true) // a code change deployed while the run waits
	if _, err := b.e.Signal(ctx, workflow.SignalRequest{RunID: run.RunID, Name: "go", Data: json.RawMessage(`"x"`)}); err != nil {
		t.Fatal(err)
	}
	r := waitStatus(t, b.e, run.RunID, workflow.StatusFailed, workflow.StatusCompleted)
	if r.Status != workflow.StatusFailed || !strings.Contains(r.Error, "nondeterministic") ||
		!strings.Contains(r.Error, `"reserve"`) || !strings.Contains(r.Error, `"reserve-v2"`) || ranNew.Load() {
		t.Fatalf("run %s %q (new step ran: %v)", r.Status, r.Error, ranNew.Load())
	}
}

// Awaited queue tasks (fan-out of two), run by another worker; child runs
// (fan-out of two); parallel steps; a signal wait that times out.
func TestTasksChildrenFanOutAndWaitTimeout(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := ctxT(t)
	if err := workflow.Register(b.e, "child", 1, func(c *workflow.Context, n int) (int, error) {
		return workflow.Step(c, "double", func(context.Context) (int, error) { return 2 * n, nil })
	}); err != nil {
		t.Fatal(err)
	}
	if err := workflow.Register(b.e, "parent", 1, func(c *workflow.Context, _ any) (string, error) {
		tasks, err := workflow.Tasks(c, "build", []trellis.AddTaskRequest{{Queue: "builds", Objective: "build x"}, {Queue: "builds", Objective: "build y"}})
		if err != nil {
			return "", err
		}
		kids, err := workflow.Children(c, "kids", []workflow.ChildSpec{{Workflow: "child", Input: 3}, {Workflow: "child", Input: 4}})
		if err != nil {
			return "", err
		}
		sq, err := workflow.All(c, "squares", []func(context.Context) (int, error){
			func(context.Context) (int, error) { return 25, nil },
			func(context.Context) (int, error) { return 36, nil },
		})
		if err != nil {
			return "", err
		}
		_, werr := workflow.Wait(c, "approve", 300*time.Millisecond)
		return fmt.Sprintf("%s+%s|%s+%s|%v|%v", tasks[0].Checkpoint.WhatWasDone, tasks[1].Checkpoint.WhatWasDone,
			kids[0].Output, kids[1].Output, sq, errors.Is(werr, workflow.ErrTimeout)), nil
	}); err != nil {
		t.Fatal(err)
	}
	b.serve(t, workflow.ServeConfig{})
	waitRegistered(t, b.e, "parent")
	run, err := b.e.Start(ctx, workflow.StartRequest{Workflow: "parent"})
	if err != nil {
		t.Fatal(err)
	}
	waitStatus(t, b.e, run.RunID, workflow.StatusWaiting)
	// Another worker (an agent, a `trellis worker --exec`) runs the tasks.
	q := b.e.Queue()
	for done := 0; done < 2; {
		task, err := q.Next(ctx, trellis.NextRequest{Queue: "builds", Worker: "agent-1"})
		if err != nil {
			t.Fatal(err)
		}
		if task == nil {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		if task.Metadata["workflow_run"] != run.RunID {
			t.Fatalf("task metadata %v", task.Metadata)
		}
		if _, err := q.Done(ctx, trellis.DoneRequest{TaskID: task.TaskID, Worker: "agent-1", WhatWasDone: "built " + task.Objective[6:]}); err != nil {
			t.Fatal(err)
		}
		done++
	}
	r := waitStatus(t, b.e, run.RunID, workflow.StatusCompleted, workflow.StatusFailed)
	if r.Status != workflow.StatusCompleted || string(r.Output) != `"built x+built y|6+8|[25 36]|true"` {
		t.Fatalf("run %s %s %q", r.Status, r.Output, r.Error)
	}
}

// Two pools advancing one run at once: the checked append on the run lets
// only one record each step; the other stops without recording.
func TestTwoPoolsNeverBothAdvanceARun(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := ctxT(t)
	// A second engine on the same store is a second pool.
	e2 := workflow.New(b.Store, workflow.Config{})
	gate := make(chan struct{})
	var entered atomic.Int32
	fn := func(c *workflow.Context, _ any) (string, error) {
		return workflow.Step(c, "once", func(context.Context) (string, error) {
			entered.Add(1)
			<-gate
			return "v", nil
		})
	}
	for _, e := range []*workflow.Engine{b.e, e2} {
		if err := workflow.Register(e, "race", 1, fn); err != nil {
			t.Fatal(err)
		}
	}
	// Register without pools: the test drives the activations itself.
	sctx, cancel := context.WithCancel(ctx)
	go func() { _ = b.e.Serve(sctx, workflow.ServeConfig{Queue: "unused"}) }()
	waitRegistered(t, b.e, "race")
	cancel()
	run, err := b.e.Start(ctx, workflow.StartRequest{Workflow: "race"})
	if err != nil {
		t.Fatal(err)
	}
	msgs := make(chan string, 2)
	for _, e := range []*workflow.Engine{b.e, e2} {
		go func() {
			m, err := e.Advance(ctx, run.RunID)
			if err != nil {
				m = err.Error()
			}
			msgs <- m
		}()
	}
	for entered.Load() < 2 {
		time.Sleep(5 * time.Millisecond)
	}
	close(gate)
	got := []string{<-msgs, <-msgs}
	slices.Sort(got)
	if got[0] != "another activation advanced the run" || got[1] != "completed" {
		t.Fatalf("activations = %q", got)
	}
	r, err := b.e.Show(ctx, run.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Journal) != 1 || r.Status != workflow.StatusCompleted {
		t.Fatalf("journal %+v status %s", r.Journal, r.Status)
	}
}

// The workflow's events are ordinary chained events: audit verify finds
// nothing wrong on a log holding runs (steps, signals, completion).
func TestAuditVerifyOKAfterWorkflowRuns(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := ctxT(t)
	if err := workflow.Register(b.e, "audited", 1, func(c *workflow.Context, _ any) (string, error) {
		if _, err := workflow.Step(c, "one", func(context.Context) (int, error) { return 1, nil }); err != nil {
			return "", err
		}
		return workflow.WaitFor[string](c, "go", 0)
	}); err != nil {
		t.Fatal(err)
	}
	b.serve(t, workflow.ServeConfig{})
	waitRegistered(t, b.e, "audited")
	for i := 0; i < 3; i++ {
		run, err := b.e.Start(ctx, workflow.StartRequest{Workflow: "audited"})
		if err != nil {
			t.Fatal(err)
		}
		waitStatus(t, b.e, run.RunID, workflow.StatusWaiting)
		if _, err := b.e.Signal(ctx, workflow.SignalRequest{RunID: run.RunID, Name: "go", Data: json.RawMessage(`"done"`)}); err != nil {
			t.Fatal(err)
		}
		waitStatus(t, b.e, run.RunID, workflow.StatusCompleted)
	}
	var findings []audit.Finding
	rep, err := audit.Verify(ctx, b.Store, audit.VerifyOptions{}, func(f audit.Finding) error {
		findings = append(findings, f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK {
		t.Fatalf("audit verify: %+v", findings)
	}
	for _, s := range rep.Streams {
		if s.Stream == "TRELLIS_WORKFLOWS" && s.ChainStats.Chained == 0 {
			t.Fatalf("no workflow links verified: %+v", s)
		}
	}
}
