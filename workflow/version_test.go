package workflow_test

import (
	"context"
	"testing"
	"time"

	"github.com/trellis/trellis/workflow"
)

// A run is pinned to the version it started on: pools of another version
// never claim it; start takes the highest registered version by default;
// list shows each version's runs in flight.
func TestRunsArePinnedToTheirVersion(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := ctxT(t)
	e2 := workflow.New(b.Store, workflow.Config{})
	for v, e := range map[int]*workflow.Engine{1: b.e, 2: e2} {
		if err := workflow.Register(e, "pinned", v, func(c *workflow.Context, _ any) (int, error) {
			return workflow.Step(c, "who", func(context.Context) (int, error) { return v, nil })
		}); err != nil {
			t.Fatal(err)
		}
	}
	b.serve(t, workflow.ServeConfig{})
	done := make(chan error, 1)
	sctx, cancel := context.WithCancel(context.Background())
	go func() { done <- e2.Serve(sctx, workflow.ServeConfig{}) }()
	t.Cleanup(func() { cancel(); <-done })
	waitRegistered(t, b.e, "pinned")
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		d, err := b.e.Definition(ctx, "pinned")
		if err == nil && len(d.Versions) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("both versions never registered: %+v %v", d, err)
		}
	}
	for _, tc := range []struct{ ask, want int }{{1, 1}, {2, 2}, {0, 2}} {
		run, err := b.e.Start(ctx, workflow.StartRequest{Workflow: "pinned", Version: tc.ask})
		if err != nil {
			t.Fatal(err)
		}
		r := waitStatus(t, b.e, run.RunID, workflow.StatusCompleted, workflow.StatusFailed)
		if r.Version != tc.want || string(r.Output) != string(rune('0'+tc.want)) {
			t.Fatalf("asked v%d: run v%d output %s (%s)", tc.ask, r.Version, r.Output, r.Error)
		}
	}
	l, err := b.e.List(ctx, workflow.ListRequest{Workflow: "pinned"})
	if err != nil || len(l.Versions) != 2 || l.Versions[0].InFlight != 0 || l.Versions[0].Queue != "wf-pinned-v1" || l.Versions[1].Queue != "wf-pinned-v2" {
		t.Fatalf("list versions %+v %v", l.Versions, err)
	}
}

// TestServeReadyAfterEveryVersionRegistered: ServeConfig.Ready is called
// only once every hosted workflow can be started; a step that starts runs
// right after it (steps' "a workflow pool hosts ...") once found one of
// three workflows not yet registered.
func TestServeReadyAfterEveryVersionRegistered(t *testing.T) {
	b := setup(t)
	names := []string{"alpha", "beta", "gamma", "delta", "epsilon", "zeta"}
	for _, n := range names {
		if err := workflow.Register(b.e, n, 1, func(c *workflow.Context, _ any) (bool, error) { return true, nil }); err != nil {
			t.Fatal(err)
		}
	}
	if err := workflow.Register(b.e, "alpha", 2, func(c *workflow.Context, _ any) (bool, error) { return true, nil }); err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	b.serve(t, workflow.ServeConfig{Ready: func() { close(ready) }})
	select {
	case <-ready:
	case <-ctxT(t).Done():
		t.Fatal("Serve never called Ready")
	}
	for _, n := range names {
		d, err := b.e.Definition(ctxT(t), n)
		if err != nil {
			t.Fatalf("after Ready: %v", err)
		}
		if n == "alpha" && len(d.Versions) != 2 {
			t.Fatalf("after Ready: alpha has versions %v; want 1 and 2", d.Versions)
		}
	}
}
