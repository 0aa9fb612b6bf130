package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/workflow"
)

// TestLiveFeedFollowsWorkflowRuns: the live feed the dashboard reads
// follows the workflow stream by default (a run page updates as its
// journal grows): a run's started event and its signal arrive on a feed
// opened without a stream filter, and on one filtered to workflows and
// the run; an unknown stream is refused naming workflows among the
// choices.
func TestLiveFeedFollowsWorkflowRuns(t *testing.T) {
	t.Parallel()
	b := setup(t)
	e := workflow.New(b.nats.Store, workflow.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err := workflow.Register(e, "gate", 1, func(c *workflow.Context, _ struct{}) (string, error) {
		return workflow.WaitFor[string](c, "open", 0)
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Serve(ctx, workflow.ServeConfig{}) }()
	t.Cleanup(func() { cancel(); <-done })
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := e.Definition(b.ctx, "gate"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("workflow gate was not registered in 60 s")
		}
		time.Sleep(20 * time.Millisecond)
	}

	all := b.openLive(t, "")
	filtered := b.openLive(t, "stream=workflows&aggregate=run-live-1")
	for _, s := range []*sseStream{all, filtered} {
		m := s.next(t)
		var hello struct {
			Start map[string]uint64 `json:"start"`
		}
		if m.event != "hello" || json.Unmarshal([]byte(m.data), &hello) != nil {
			t.Fatalf("first message %+v", m)
		}
		if _, ok := hello.Start["TRELLIS_WORKFLOWS"]; !ok {
			t.Fatalf("the feed does not follow TRELLIS_WORKFLOWS: %s", m.data)
		}
	}
	b.do(t, http.MethodPost, "/v1/workflows", map[string]any{"workflow": "gate", "run_id": "run-live-1"}).expect(t, http.StatusCreated, nil)
	b.do(t, http.MethodPost, "/v1/workflows/run-live-1/signal", map[string]any{"name": "open", "data": "now"}).expect(t, http.StatusOK, nil)
	for name, s := range map[string]*sseStream{"unfiltered": all, "filtered": filtered} {
		var types []string
		for len(types) < 2 {
			ev := s.nextEvent(t)
			if ev.Stream != "TRELLIS_WORKFLOWS" || ev.AggregateID != "run-live-1" {
				if name == "filtered" {
					t.Fatalf("the filtered feed delivered %+v", ev)
				}
				continue
			}
			if len(types) == 0 || ev.Type != types[len(types)-1] {
				types = append(types, ev.Type)
			}
			if len(types) == 1 && ev.Type != "started" {
				t.Fatalf("%s: the run's first event is %s, want started", name, ev.Type)
			}
		}
	}
	b.do(t, http.MethodGet, "/v1/events/live?stream=bogus", nil).expectError(t, http.StatusBadRequest, trellis.CodeInvalid, "stream", "tasks or workflows")
}
