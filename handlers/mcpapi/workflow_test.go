package mcpapi_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/trellis/trellis/workflow"
)

// An agent starts a run over MCP, reads it, approves it with a signal and
// sees it complete; bad calls are tool errors with their stable code.
func TestWorkflowToolsStartShowSignal(t *testing.T) {
	t.Parallel()
	b, ctx := setupVine(t)
	e := workflow.New(b.nats.Store, workflow.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err := workflow.Register(e, "review", 1, func(c *workflow.Context, in map[string]string) (string, error) {
		if _, err := workflow.Step(c, "draft", func(context.Context) (string, error) { return in["doc"], nil }); err != nil {
			return "", err
		}
		return workflow.WaitFor[string](c, "approve", 0)
	}); err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Serve(sctx, workflow.ServeConfig{}) }()
	t.Cleanup(func() { cancel(); <-done })
	for {
		if _, err := e.Definition(ctx, "review"); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	cs := b.connect(t, ctx)
	if msg := callErr(t, ctx, cs, "workflow_start", map[string]any{"workflow": "nope"}); !strings.HasPrefix(msg, "not_found") {
		t.Fatalf("unknown workflow: %q", msg)
	}
	res := call(t, ctx, cs, "workflow_start", map[string]any{"workflow": "review", "input": map[string]string{"doc": "d1"}})
	if res.IsError {
		t.Fatalf("start: %s", text(res))
	}
	var v workflow.View
	decodeStructured(t, res, &v)
	deadline := time.Now().Add(60 * time.Second)
	for v.Status != workflow.StatusWaiting {
		if time.Now().After(deadline) {
			t.Fatalf("run never waiting: %+v", v)
		}
		time.Sleep(20 * time.Millisecond)
		decodeStructured(t, call(t, ctx, cs, "workflow_show", map[string]any{"run_id": v.RunID}), &v)
	}
	if res := call(t, ctx, cs, "workflow_signal", map[string]any{"run_id": v.RunID, "name": "approve", "data": "ok by agent"}); res.IsError {
		t.Fatalf("signal: %s", text(res))
	}
	for v.Status != workflow.StatusCompleted {
		if time.Now().After(deadline) {
			t.Fatalf("run never completed: %+v", v)
		}
		time.Sleep(20 * time.Millisecond)
		decodeStructured(t, call(t, ctx, cs, "workflow_show", map[string]any{"run_id": v.RunID}), &v)
	}
	if string(v.Output) != `"ok by agent"` {
		t.Fatalf("output %s", v.Output)
	}
	if msg := callErr(t, ctx, cs, "workflow_signal", map[string]any{"run_id": v.RunID, "name": "approve"}); !strings.HasPrefix(msg, "conflict") {
		t.Fatalf("signal to a finished run: %q", msg)
	}
	if msg := callErr(t, ctx, cs, "workflow_show", map[string]any{"run_id": "NOPE"}); !strings.HasPrefix(msg, "not_found") {
		t.Fatalf("unknown run: %q", msg)
	}
}
