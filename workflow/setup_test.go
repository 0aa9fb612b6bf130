package workflow_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/taskqueue"
	"github.com/trellis/trellis/workflow"
)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// bundle is a test's engine on a fresh embedded server.
type bundle struct {
	*eventstest.Bundle
	e *workflow.Engine
}

func setup(t *testing.T) *bundle {
	t.Helper()
	b := setupB(t)
	r, err := b.e.Queue().StartReactor(ctxT(t), taskqueue.ReactorConfig{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	return b
}

// setupB is setup without the reactor (benchmarks).
func setupB(t testing.TB) *bundle {
	t.Helper()
	b := eventstest.Start(t)
	e := workflow.New(b.Store, workflow.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), PollInterval: 200 * time.Millisecond})
	return &bundle{Bundle: b, e: e}
}

// serve runs the engine's pools until the test ends.
func (b *bundle) serve(t *testing.T, cfg workflow.ServeConfig) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.e.Serve(ctx, cfg) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

// waitStatus polls the run until it reaches one of the statuses.
func waitStatus(t *testing.T, e *workflow.Engine, id string, want ...workflow.Status) *workflow.Run {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		r, err := e.Show(context.Background(), id)
		if err == nil {
			for _, w := range want {
				if r.Status == w {
					return r
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s: status %v (err %v), want %v", id, r, err, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitRegistered polls until a workflow is registered.
func waitRegistered(t *testing.T, e *workflow.Engine, name string) { waitRegisteredB(t, e, name) }

func waitRegisteredB(t testing.TB, e *workflow.Engine, name string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := e.Definition(context.Background(), name); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("workflow %s never registered", name)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
