package server_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/trellis/trellis/server"
	"github.com/trellis/trellis/workflow"
)

// TestServerWorkflowMetrics: /metrics counts the runs started, completed
// and failed since the server started, the runs in flight by status and
// the recorded steps' durations, all derived from the log; a malformed
// event on the workflow stream is skipped, not counted.
func TestServerWorkflowMetrics(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := server.Start(ctx, server.Config{DataDir: t.TempDir(), NATSAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", SyncInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	e := srv.Service().Workflows()
	if err := workflow.Register(e, "metered", 1, func(c *workflow.Context, mode string) (string, error) {
		_, err := workflow.Step(c, "work", func(context.Context) (int, error) {
			if mode == "fail" {
				return 0, errors.New("refused")
			}
			return 1, nil
		})
		if err != nil {
			return "", err
		}
		if mode == "wait" {
			return workflow.WaitFor[string](c, "go", 0)
		}
		return "ok", nil
	}); err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- e.Serve(sctx, workflow.ServeConfig{Queue: "metered"}) }()
	defer func() { stop(); <-served }()
	for {
		if _, err := e.Definition(ctx, "metered"); err == nil {
			break
		}
		select {
		case err := <-served:
			t.Fatalf("serve: %v", err)
		case <-ctx.Done():
			t.Fatal("workflow never registered")
		case <-time.After(20 * time.Millisecond):
		}
	}
	// A malformed message on a run's subject: stored by the stream, not
	// an event; the metrics skip it.
	if err := srv.Service().Store().Conn().Publish(workflow.RunSubject("junk", workflow.Started), []byte("not an event")); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"ok", "fail", "wait"} {
		if _, err := e.Start(ctx, workflow.StartRequest{Workflow: "metered", Input: []byte(`"` + mode + `"`)}); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{
		`trellis_workflow_runs_total{event="started",workflow="metered"} 3`,
		`trellis_workflow_runs_total{event="completed",workflow="metered"} 1`,
		`trellis_workflow_runs_total{event="failed",workflow="metered"} 1`,
		`trellis_workflow_runs_in_flight{status="waiting",workflow="metered"} 1`,
		`trellis_workflow_runs_in_flight{status="running",workflow="metered"} 0`,
		`trellis_workflow_step_duration_seconds_count{outcome="completed",workflow="metered"} 2`,
		`trellis_workflow_step_duration_seconds_count{outcome="failed",workflow="metered"} 1`,
	}
	scrapeUntil(t, srv, want, []string{`workflow="junk"`, `workflow=""`})
}

// scrapeUntil polls /metrics until it holds every line of want (and none
// of absent), failing after a generous deadline.
func scrapeUntil(t *testing.T, srv *server.Server, want, absent []string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(srv.Info().HTTPURL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, a := range absent {
			if strings.Contains(string(body), a) {
				t.Fatalf("/metrics has %q", a)
			}
		}
		missing := ""
		for _, w := range want {
			if !strings.Contains(string(body), w) {
				missing = w
				break
			}
		}
		if missing == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/metrics lacks %q:\n%s", missing, grepLines(string(body), "trellis_workflow"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
