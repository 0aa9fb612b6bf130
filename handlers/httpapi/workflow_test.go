package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/trellis/trellis/workflow"
)

// The workflow routes: start, show, list, signal, cancel and retry over
// HTTP on runs a pool advances, with bad input answered in the error
// shape (unknown workflow and run 404, bad JSON and unknown fields 400, a
// signal to a finished run 409).
func TestWorkflowRoutes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	e := workflow.New(b.nats.Store, workflow.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err := workflow.Register(e, "approve", 1, func(c *workflow.Context, in struct{ N int }) (string, error) {
		if _, err := workflow.Step(c, "prepare", func(context.Context) (int, error) { return in.N, nil }); err != nil {
			return "", err
		}
		return workflow.WaitFor[string](c, "decision", 0)
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Serve(ctx, workflow.ServeConfig{}) }()
	t.Cleanup(func() { cancel(); <-done })
	for {
		if _, err := e.Definition(b.ctx, "approve"); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	res := b.do(t, "POST", "/v1/workflows", map[string]any{"workflow": "approve", "input": map[string]int{"N": 2}})
	if res.status != 201 {
		t.Fatalf("start: %d %s", res.status, res.body)
	}
	var run workflow.View
	if err := json.Unmarshal(res.body, &run); err != nil || run.RunID == "" {
		t.Fatalf("start body %s", res.body)
	}
	path := "/v1/workflows/" + run.RunID
	waitFor := func(status workflow.Status) workflow.View {
		deadline := time.Now().Add(60 * time.Second)
		for {
			res := b.do(t, "GET", path, nil)
			var v workflow.View
			_ = json.Unmarshal(res.body, &v)
			if res.status == 200 && v.Status == status {
				return v
			}
			if time.Now().After(deadline) {
				t.Fatalf("run never %s: %d %s", status, res.status, res.body)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor(workflow.StatusWaiting)
	if res := b.do(t, "POST", path+"/signal", map[string]any{"name": "decision", "data": "yes"}); res.status != 200 {
		t.Fatalf("signal: %d %s", res.status, res.body)
	}
	v := waitFor(workflow.StatusCompleted)
	if string(v.Output) != `"yes"` || len(v.Steps) != 1 || v.Steps[0].Name != "prepare" {
		t.Fatalf("completed run %+v", v)
	}
	res = b.do(t, "GET", "/v1/workflows?status=completed", nil)
	var list workflow.RunList
	if err := json.Unmarshal(res.body, &list); err != nil || res.status != 200 || len(list.Runs) != 1 || len(list.Versions) != 1 || list.Versions[0].InFlight != 0 {
		t.Fatalf("list: %d %s", res.status, res.body)
	}
	// Cancel a second run while it waits.
	res = b.do(t, "POST", "/v1/workflows", map[string]any{"workflow": "approve", "input": map[string]int{"N": 3}})
	_ = json.Unmarshal(res.body, &run)
	path = "/v1/workflows/" + run.RunID
	waitFor(workflow.StatusWaiting)
	if res := b.do(t, "POST", path+"/cancel", nil); res.status != 200 {
		t.Fatalf("cancel: %d %s", res.status, res.body)
	}
	waitFor(workflow.StatusCancelled)
	bad := []struct {
		method, path string
		body         any
		status       int
	}{
		{"POST", "/v1/workflows", map[string]any{"workflow": "nope"}, 404},
		{"POST", "/v1/workflows", map[string]any{"workflow": "approve", "version": 9}, 404},
		{"POST", "/v1/workflows", `{"workflow": "approve", "input": {`, 400},
		{"POST", "/v1/workflows", map[string]any{"workflow": "approve", "bogus": 1}, 400},
		{"POST", "/v1/workflows", map[string]any{"workflow": "../etc"}, 400},
		{"GET", "/v1/workflows/NOPE", nil, 404},
		{"GET", "/v1/workflows/a.b", nil, 400},
		{"GET", "/v1/workflows?status=bogus", nil, 400},
		{"POST", "/v1/workflows/NOPE/signal", map[string]any{"name": "decision"}, 404},
		{"POST", path + "/signal", map[string]any{"name": "decision"}, 409},
		{"POST", path + "/signal", map[string]any{"name": "bad name"}, 400},
		{"POST", path + "/retry", nil, 409},
		{"POST", path + "/cancel", nil, 409},
	}
	for _, c := range bad {
		if res := b.do(t, c.method, c.path, c.body); res.status != c.status {
			t.Errorf("%s %s: %d %s, want %d", c.method, c.path, res.status, res.body, c.status)
		}
	}
}
