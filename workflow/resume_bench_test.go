package workflow_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/trellis/trellis/workflow"
)

// BenchmarkResume10000Steps measures one activation of a run whose
// journal holds 10,000 recorded steps: load and fold the journal, replay
// the code through every recorded step (none runs again) and suspend at
// the signal wait after them. The goal is under a second per resume.
func BenchmarkResume10000Steps(b *testing.B) {
	benchResume(b, 10000)
}

func benchResume(b *testing.B, steps int) {
	bb := setupB(b)
	ctx := context.Background()
	var ran int
	if err := workflow.Register(bb.e, "long", 1, func(c *workflow.Context, _ any) (string, error) {
		for i := 0; i < steps; i++ {
			if _, err := workflow.Step(c, "s"+strconv.Itoa(i), func(context.Context) (int, error) { ran++; return i, nil }); err != nil {
				return "", err
			}
		}
		return workflow.WaitFor[string](c, "go", 0)
	}); err != nil {
		b.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	go func() { _ = bb.e.Serve(sctx, workflow.ServeConfig{Queue: "bench-unused"}) }()
	waitRegisteredB(b, bb.e, "long")
	cancel()
	run, err := bb.e.Start(ctx, workflow.StartRequest{Workflow: "long"})
	if err != nil {
		b.Fatal(err)
	}
	// The first activation records every step (not measured).
	if msg, err := bb.e.Advance(ctx, run.RunID); err != nil || msg != "waiting for signal go" {
		b.Fatalf("first activation: %q %v", msg, err)
	}
	if ran != steps {
		b.Fatalf("ran %d steps", ran)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// A fresh engine: nothing cached, the journal is read from the log.
		e := workflow.New(bb.Store, workflow.Config{})
		if err := workflow.Register(e, "long", 1, func(c *workflow.Context, _ any) (string, error) {
			for i := 0; i < steps; i++ {
				if _, err := workflow.Step(c, "s"+strconv.Itoa(i), func(context.Context) (int, error) { ran++; return i, nil }); err != nil {
					return "", err
				}
			}
			return workflow.WaitFor[string](c, "go", 0)
		}); err != nil {
			b.Fatal(err)
		}
		msg, err := e.Advance(ctx, run.RunID)
		if err != nil || msg != "waiting for signal go" {
			b.Fatalf("resume: %q %v", msg, err)
		}
	}
	b.StopTimer()
	if ran != steps {
		b.Fatalf("a resume ran recorded steps again: %d runs", ran)
	}
}
