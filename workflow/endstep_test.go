package workflow_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/workflow"
)

// runEventTypes lists the types of a run's events in log order.
func runEventTypes(t *testing.T, b *bundle, runID string) []string {
	t.Helper()
	recs, _, err := b.Store.Load(ctxT(t), events.StreamWorkflows, workflow.RunFilter(runID))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range recs {
		out = append(out, r.Type)
	}
	return out
}

// The run's last step is recorded by its end event (one synced write
// fewer per run): show still lists every step with its result, a step
// before a wait is recorded before the run waits, and a run that fails
// right after a step keeps that step.
func TestLastStepIsRecordedByTheEndEvent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := ctxT(t)
	var ran atomic.Int32
	step := func(v string) func(context.Context) (string, error) {
		return func(context.Context) (string, error) { ran.Add(1); return v, nil }
	}
	if err := workflow.Register(b.e, "three", 1, func(c *workflow.Context, fail bool) (string, error) {
		for _, s := range []string{"a", "b"} {
			if _, err := workflow.Step(c, s, step(s+"-ok")); err != nil {
				return "", err
			}
		}
		if _, err := workflow.Step(c, "before-wait", step("w")); err != nil {
			return "", err
		}
		if _, err := workflow.WaitFor[string](c, "go", 0); err != nil {
			return "", err
		}
		last, err := workflow.Step(c, "c", step("c-ok"))
		if err != nil {
			return "", err
		}
		if fail {
			return "", errors.New("refused after c")
		}
		return last, nil
	}); err != nil {
		t.Fatal(err)
	}
	b.serve(t, workflow.ServeConfig{Queue: "endstep"})
	waitRegistered(t, b.e, "three")
	for _, fail := range []bool{false, true} {
		input := []byte("false")
		want := workflow.StatusCompleted
		if fail {
			input, want = []byte("true"), workflow.StatusFailed
		}
		run, err := b.e.Start(ctx, workflow.StartRequest{Workflow: "three", Input: input})
		if err != nil {
			t.Fatal(err)
		}
		r := waitStatus(t, b.e, run.RunID, workflow.StatusWaiting)
		if len(r.Journal) != 4 || r.Journal[2].Name != "before-wait" || r.Journal[2].Status != workflow.EntryCompleted {
			t.Fatalf("before the wait: journal %+v", r.Journal)
		}
		if _, err := b.e.Signal(ctx, workflow.SignalRequest{RunID: run.RunID, Name: "go"}); err != nil {
			t.Fatal(err)
		}
		r = waitStatus(t, b.e, run.RunID, workflow.StatusCompleted, workflow.StatusFailed)
		if r.Status != want {
			t.Fatalf("fail=%v: status %s (%s)", fail, r.Status, r.Error)
		}
		if len(r.Journal) != 5 || r.Journal[4].Name != "c" || r.Journal[4].Status != workflow.EntryCompleted || string(r.Journal[4].Result) != `"c-ok"` {
			t.Fatalf("fail=%v: journal %+v", fail, r.Journal)
		}
		types := runEventTypes(t, b, run.RunID)
		if last := types[len(types)-1]; last != string(want) {
			t.Fatalf("fail=%v: events %v", fail, types)
		}
		// a, b and before-wait have events of their own; c rides on the end.
		n := 0
		for _, typ := range types {
			if typ == workflow.StepCompleted {
				n++
			}
		}
		if n != 3 {
			t.Fatalf("fail=%v: %d step_completed events, want 3 (c recorded by the end event): %v", fail, n, types)
		}
	}
	if got := ran.Load(); got != 8 {
		t.Fatalf("steps ran %d times, want 8 (4 per run, none again)", got)
	}
}
