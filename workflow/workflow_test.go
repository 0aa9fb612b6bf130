package workflow_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/workflow"
)

type orderIn struct {
	ID string `json:"id"`
}

type orderOut struct {
	ID        string `json:"id"`
	ShippedBy string `json:"shipped_by"`
}

// A run's steps are journaled, it sleeps durably, waits for a signal and
// completes with the signal's data; show lists the steps in journal order.
func TestRunStepsSleepSignalComplete(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := ctxT(t)
	var runs sync.Map
	count := func(step string) func(context.Context) (string, error) {
		return func(context.Context) (string, error) {
			n, _ := runs.LoadOrStore(step, new(atomic.Int32))
			n.(*atomic.Int32).Add(1)
			return step + "-ok", nil
		}
	}
	err := workflow.Register(b.e, "order", 1, func(c *workflow.Context, in orderIn) (orderOut, error) {
		if _, err := workflow.Step(c, "reserve", count("reserve")); err != nil {
			return orderOut{}, err
		}
		if _, err := workflow.Step(c, "charge", count("charge")); err != nil {
			return orderOut{}, err
		}
		if err := workflow.Sleep(c, "cool-off", 300*time.Millisecond); err != nil {
			return orderOut{}, err
		}
		ship, err := workflow.WaitFor[struct {
			Carrier string `json:"carrier"`
		}](c, "ship", 0)
		if err != nil {
			return orderOut{}, err
		}
		if _, err := workflow.Step(c, "ship", count("ship")); err != nil {
			return orderOut{}, err
		}
		return orderOut{ID: in.ID, ShippedBy: ship.Carrier}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	b.serve(t, workflow.ServeConfig{Concurrency: 2})
	waitRegistered(t, b.e, "order")
	run, err := b.e.Start(ctx, workflow.StartRequest{Workflow: "order", Input: json.RawMessage(`{"id":"o1"}`)})
	if err != nil {
		t.Fatal(err)
	}
	waitStatus(t, b.e, run.RunID, workflow.StatusWaiting)
	if _, err := b.e.Signal(ctx, workflow.SignalRequest{RunID: run.RunID, Name: "ship", Data: json.RawMessage(`{"carrier":"dhl"}`)}); err != nil {
		t.Fatal(err)
	}
	r := waitStatus(t, b.e, run.RunID, workflow.StatusCompleted, workflow.StatusFailed)
	if r.Status != workflow.StatusCompleted || string(r.Output) != `{"id":"o1","shipped_by":"dhl"}` {
		t.Fatalf("run = %s %s %s", r.Status, r.Output, r.Error)
	}
	v := workflow.ViewOf(r)
	var names []string
	for _, s := range v.Steps {
		names = append(names, s.Name+":"+s.Status)
	}
	if strings.Join(names, ",") != "reserve:completed,charge:completed,ship:completed" {
		t.Fatalf("steps = %v", names)
	}
	for _, s := range []string{"reserve", "charge", "ship"} {
		n, _ := runs.Load(s)
		if got := n.(*atomic.Int32).Load(); got != 1 {
			t.Fatalf("step %s ran %d times, want 1 (replays must not rerun recorded steps)", s, got)
		}
	}
	// A signal to a finished run is a conflict.
	if _, err := b.e.Signal(ctx, workflow.SignalRequest{RunID: run.RunID, Name: "ship"}); trellis.ErrorCode(err) != trellis.CodeConflict {
		t.Fatalf("signal to a completed run: %v, want conflict", err)
	}
}

// Bad input: unknown workflow, unknown version, bad JSON, unknown run,
// bad names; a panicking step fails the run with the panic, and input
// that does not decode fails the run naming it.
func TestBadInput(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := ctxT(t)
	if err := workflow.Register(b.e, "typed", 1, func(c *workflow.Context, in orderIn) (string, error) {
		return workflow.Step(c, "boom", func(context.Context) (string, error) { panic("kaboom") }, workflow.StepOptions{Attempts: 2, Backoff: func(int) time.Duration { return time.Millisecond }})
	}); err != nil {
		t.Fatal(err)
	}
	if err := workflow.Register(b.e, "bad name!", 1, func(c *workflow.Context, in orderIn) (string, error) { return "", nil }); trellis.ErrorCode(err) != trellis.CodeInvalid {
		t.Fatalf("register bad name: %v", err)
	}
	b.serve(t, workflow.ServeConfig{})
	waitRegistered(t, b.e, "typed")
	cases := []struct {
		req  workflow.StartRequest
		code trellis.Code
	}{
		{workflow.StartRequest{Workflow: "nope"}, trellis.CodeNotFound},
		{workflow.StartRequest{Workflow: "typed", Version: 7}, trellis.CodeNotFound},
		{workflow.StartRequest{Workflow: "typed", Input: json.RawMessage(`{"id":`)}, trellis.CodeInvalid},
		{workflow.StartRequest{Workflow: "a.b"}, trellis.CodeInvalid},
		{workflow.StartRequest{Workflow: "typed", Input: json.RawMessage(`"` + strings.Repeat("x", workflow.MaxInputBytes) + `"`)}, trellis.CodeInvalid},
		{workflow.StartRequest{Workflow: "typed", RunID: "a.b"}, trellis.CodeInvalid},
	}
	for _, c := range cases {
		if _, err := b.e.Start(ctx, c.req); trellis.ErrorCode(err) != c.code {
			t.Errorf("start %+v: %v, want %s", c.req.Workflow, err, c.code)
		}
	}
	if _, err := b.e.Show(ctx, "NOPE"); trellis.ErrorCode(err) != trellis.CodeNotFound {
		t.Errorf("show unknown: %v", err)
	}
	if _, err := b.e.Signal(ctx, workflow.SignalRequest{RunID: "NOPE", Name: "x"}); trellis.ErrorCode(err) != trellis.CodeNotFound {
		t.Errorf("signal unknown: %v", err)
	}
	if _, err := b.e.Cancel(ctx, workflow.CancelRequest{RunID: "NOPE"}); trellis.ErrorCode(err) != trellis.CodeNotFound {
		t.Errorf("cancel unknown: %v", err)
	}
	if _, err := b.e.List(ctx, workflow.ListRequest{Status: "bogus"}); trellis.ErrorCode(err) != trellis.CodeInvalid {
		t.Errorf("list bad status: %v", err)
	}
	// Input that does not decode into the workflow's type.
	r1, err := b.e.Start(ctx, workflow.StartRequest{Workflow: "typed", Input: json.RawMessage(`[1,2]`)})
	if err != nil {
		t.Fatal(err)
	}
	got := waitStatus(t, b.e, r1.RunID, workflow.StatusFailed, workflow.StatusCompleted)
	if got.Status != workflow.StatusFailed || !strings.Contains(got.Error, "input does not decode") {
		t.Fatalf("undecodable input: %s %q", got.Status, got.Error)
	}
	// A step that panics: a failed attempt, retried, then the run fails.
	r2, err := b.e.Start(ctx, workflow.StartRequest{Workflow: "typed", Input: json.RawMessage(`{"id":"x"}`)})
	if err != nil {
		t.Fatal(err)
	}
	got = waitStatus(t, b.e, r2.RunID, workflow.StatusFailed, workflow.StatusCompleted)
	if got.Status != workflow.StatusFailed || !strings.Contains(got.Error, "panic: kaboom") || got.Journal[0].Attempts != 2 {
		t.Fatalf("panicking step: %s %q %+v", got.Status, got.Error, got.Journal)
	}
	var se *workflow.StepError
	_ = errors.As(nil, &se)
}
