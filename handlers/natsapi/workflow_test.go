package natsapi_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/workflow"
)

// The workflow API over NATS (what a CLI with a token uses): start, show,
// signal, list, cancel, retry, with the service's error codes.
func TestWorkflowOverNATS(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	e := workflow.New(b.Store, workflow.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err := workflow.Register(e, "gate", 1, func(c *workflow.Context, _ any) (string, error) {
		return workflow.WaitFor[string](c, "open", 0)
	}); err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- e.Serve(sctx, workflow.ServeConfig{}) }()
	defer func() { stop(); <-done }()
	for {
		if _, err := e.Definition(ctx, "gate"); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	wf := b.client.Workflows()
	if _, err := wf.Start(ctx, workflow.StartRequest{Workflow: "nope"}); trellis.ErrorCode(err) != trellis.CodeNotFound {
		t.Fatalf("start unknown: %v", err)
	}
	run, err := wf.Start(ctx, workflow.StartRequest{Workflow: "gate"})
	if err != nil {
		t.Fatal(err)
	}
	for run.Status != workflow.StatusWaiting {
		time.Sleep(20 * time.Millisecond)
		if run, err = wf.Show(ctx, run.RunID); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := wf.Signal(ctx, workflow.SignalRequest{RunID: run.RunID, Name: "open", Data: json.RawMessage(`"now"`)}); err != nil {
		t.Fatal(err)
	}
	for run.Status != workflow.StatusCompleted {
		time.Sleep(20 * time.Millisecond)
		if run, err = wf.Show(ctx, run.RunID); err != nil {
			t.Fatal(err)
		}
	}
	l, err := wf.List(ctx, workflow.ListRequest{Status: workflow.StatusCompleted})
	if err != nil || len(l.Runs) != 1 {
		t.Fatalf("list = %+v, %v", l, err)
	}
	if _, err := wf.Cancel(ctx, workflow.CancelRequest{RunID: run.RunID}); trellis.ErrorCode(err) != trellis.CodeConflict {
		t.Fatalf("cancel completed: %v", err)
	}
	if _, err := wf.Retry(ctx, workflow.RetryRequest{RunID: "NOPE"}); trellis.ErrorCode(err) != trellis.CodeNotFound {
		t.Fatalf("retry unknown: %v", err)
	}
	if _, err := wf.Show(ctx, "a.b"); trellis.ErrorCode(err) != trellis.CodeInvalid {
		t.Fatalf("show bad id: %v", err)
	}
}
