package workflowtest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/trellis/trellis/audit"
	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/workflow"
	"github.com/trellis/trellis/workflow/workflowtest"
)

func v1(c *workflow.Context, _ any) (string, error) {
	if _, err := workflow.Step(c, "reserve", func(context.Context) (int, error) { return 1, nil }); err != nil {
		return "", err
	}
	if _, err := workflow.Step(c, "charge", func(context.Context) (int, error) { return 2, nil }); err != nil {
		return "", err
	}
	return workflow.WaitFor[string](c, "ship", 0)
}

// v2 renames a step: recorded runs would diverge at position 1.
func v2(c *workflow.Context, _ any) (string, error) {
	if _, err := workflow.Step(c, "reserve", func(context.Context) (int, error) { return 1, nil }); err != nil {
		return "", err
	}
	if _, err := workflow.Step(c, "charge-card", func(context.Context) (int, error) { panic("a replay must not run a step") }); err != nil {
		return "", err
	}
	return workflow.WaitFor[string](c, "ship", 0)
}

// v3 adds a step after the wait: safe for runs still waiting.
func v3(c *workflow.Context, in any) (string, error) {
	s, err := v1(c, in)
	if err != nil {
		return "", err
	}
	_, err = workflow.Step(c, "notify", func(context.Context) (int, error) { panic("a replay must not run a step") })
	return s, err
}

// Recorded runs (one waiting, one completed) replayed from the live log
// and from an audit export: the unchanged code and a compatible change
// pass; a renamed step is reported at its position, naming both names.
func TestReplayReportsTheFirstDivergence(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	e := workflow.New(b.Store, workflow.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err := workflow.Register(e, "order", 1, v1); err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	go func() { _ = e.Serve(sctx, workflow.ServeConfig{Queue: "unused"}) }()
	for {
		if _, err := e.Definition(ctx, "order"); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	var ids []string
	for i := 0; i < 2; i++ {
		r, err := e.Start(ctx, workflow.StartRequest{Workflow: "order"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Advance(ctx, r.RunID); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.RunID)
	}
	if _, err := e.Signal(ctx, workflow.SignalRequest{RunID: ids[1], Name: "ship", Data: json.RawMessage(`"dhl"`)}); err != nil {
		t.Fatal(err)
	}
	if msg, err := e.Advance(ctx, ids[1]); err != nil || msg != "completed" {
		t.Fatalf("advance: %q %v", msg, err)
	}
	live, err := workflowtest.ReadLog(ctx, b.Store)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := audit.Export(ctx, b.Store, audit.ExportOptions{}, &buf); err != nil {
		t.Fatal(err)
	}
	exported, err := workflowtest.ReadExport(&buf)
	if err != nil {
		t.Fatal(err)
	}
	for what, hs := range map[string][]workflow.History{"live": live, "export": exported} {
		if len(hs) != 2 {
			t.Fatalf("%s: %d histories", what, len(hs))
		}
		workflowtest.Require(t, "order", v1, hs)
		if d := workflowtest.Check("order", v3, hs); len(d) != 1 || d[0].RunID != ids[1] {
			// v3 is safe for the waiting run; the completed one returned
			// before the new step, which the journal does not hold.
			t.Fatalf("%s: v3 divergences %+v", what, d)
		}
		d := workflowtest.Check("order", v2, hs)
		if len(d) != 2 {
			t.Fatalf("%s: v2 divergences %+v", what, d)
		}
		for _, x := range d {
			if !strings.Contains(x.Message, "position 1") || !strings.Contains(x.Message, `"charge"`) || !strings.Contains(x.Message, `"charge-card"`) {
				t.Fatalf("%s: divergence %q", what, x.Message)
			}
		}
		if d := workflowtest.Check("other", v2, hs); len(d) != 0 {
			t.Fatalf("runs of another workflow were replayed: %+v", d)
		}
	}
}
