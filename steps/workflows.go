package steps

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/trellis/trellis/workflow"
)

// runRef is the pattern of a run a step names: "the run" (the one the
// steps last started) or run "NAME" (a run started as NAME, or a run id).
const runRef = `(the run|run "[^"]*")`

// workflowState is the scenario's workflow state: the runs it started.
type workflowState struct {
	last  string            // the run id "the run" names
	named map[string]string // name → run id
	pool  bool              // a workflow pool runs
}

func workflowSteps() []Definition {
	return []Definition{
		{
			Pattern: `^a workflow pool hosts the suite's workflows$`,
			Example: `Given a workflow pool hosts the suite's workflows`,
			Doc: "Starts a workflow pool in this process (workflow.Engine.Serve, its own engine on the scenario's server) hosting " +
				"the workflows the suite registers through steps.Config.Workflows; it stops when the scenario ends.",
			run: func(w *World) any { return w.hostWorkflows },
		},
		{
			Pattern: `^I start workflow "([^"]*)" with input (.+)$`,
			Example: `When I start workflow "order" with input {"id": "o-1"}`,
			Doc:     "Starts a run of the workflow's latest version with the JSON input (workflow start). It becomes \"the run\".",
			run:     func(w *World) any { return w.startRun },
		},
		{
			Pattern: `^I start workflow "([^"]*)" as run "([^"]*)" with input (.+)$`,
			Example: `When I start workflow "order" as run "first" with input {"id": "o-1"}`,
			Doc:     "Starts a run as above and names it, so later steps can say run \"first\". It becomes \"the run\".",
			run:     func(w *World) any { return w.startNamedRun },
		},
		{
			Pattern: `^I signal ` + runRef + ` with "([^"]*)"$`,
			Example: `When I signal the run with "approve"`,
			Doc:     "Sends the run the signal NAME with null data (workflow signal).",
			run:     func(w *World) any { return w.signalRun },
		},
		{
			Pattern: `^I signal ` + runRef + ` with "([^"]*)" and data (.+)$`,
			Example: `When I signal run "first" with "ship" and data {"carrier": "ups"}`,
			Doc:     "Sends the run the signal NAME with the JSON data (workflow signal --data).",
			run:     func(w *World) any { return w.signalRunWith },
		},
		{
			Pattern: `^I cancel ` + runRef + `$`,
			Example: `When I cancel the run`,
			Doc:     "Asks the run to stop (workflow cancel): its running step is cancelled, compensations run, it ends cancelled.",
			run:     func(w *World) any { return w.cancelRun },
		},
		{
			Pattern: `^I retry ` + runRef + `$`,
			Example: `When I retry run "first"`,
			Doc:     "Resumes a failed run from its failed step (workflow retry).",
			run:     func(w *World) any { return w.retryRun },
		},
		{
			Pattern: `^` + runRef + ` is (running|sleeping|waiting|completed|failed|cancelled)$`,
			Example: `Then the run is waiting`,
			Doc:     "Checks the run's status (workflow show). Wrap it in \"wait up to N seconds until\" for what pools do in the background.",
			Check:   true,
			run:     func(w *World) any { return w.runIs },
		},
		{
			Pattern: `^` + runRef + ` is completed with steps "([^"]*)"$`,
			Example: `Then the run is completed with steps "reserve, charge, ship"`,
			Doc: "Checks that the run completed and that its steps (the journal's entries of kind step, in journal order, " +
				"as workflow show lists them) are exactly these, each completed.",
			Check: true,
			run:   func(w *World) any { return w.runCompletedWith },
		},
		{
			Pattern: `^` + runRef + ` has output (.+)$`,
			Example: `Then the run has output {"id": "o-1", "shipped_by": "ups"}`,
			Doc:     "Checks the run's output: equal JSON (key order and spacing do not matter).",
			Check:   true,
			run:     func(w *World) any { return w.runHasOutput },
		},
		{
			Pattern: `^` + runRef + ` failed with an error containing "([^"]*)"$`,
			Example: `Then run "first" failed with an error containing "card declined"`,
			Doc:     "Checks that the run failed and that its error contains the text.",
			Check:   true,
			run:     func(w *World) any { return w.runFailedWith },
		},
	}
}

// Workflows returns the scenario's workflow API; nil before "Given a
// Trellis server".
func (w *World) Workflows() workflow.Service {
	if w.srv == nil {
		return nil
	}
	return w.srv.Service().Workflows()
}

// RunID returns the id of the run a step names ("the run" or run
// "NAME").
func (w *World) RunID(ref string) (string, error) {
	if ref == "the run" {
		if w.wf.last == "" {
			return "", errors.New(`no run yet: start one with "When I start workflow ..."`)
		}
		return w.wf.last, nil
	}
	name := strings.TrimSuffix(strings.TrimPrefix(ref, `run "`), `"`)
	if id, ok := w.wf.named[name]; ok {
		return id, nil
	}
	if err := workflow.ValidateRunID(name); err != nil {
		return "", fmt.Errorf("no run is named %q (and it is not a run id)", name)
	}
	return name, nil
}

func (w *World) hostWorkflows(ctx context.Context) error {
	if w.srv == nil {
		return errNoServer
	}
	if w.cfg.Workflows == nil {
		return errors.New("the suite hosts no workflows: set steps.Config.Workflows to register them (workflow.Register)")
	}
	if w.wf.pool {
		return errors.New("a workflow pool already runs in this scenario")
	}
	e := workflow.New(w.srv.Service().Store(), workflow.Config{Logger: w.cfg.Logger})
	if err := w.cfg.Workflows(e); err != nil {
		return fmt.Errorf("register the suite's workflows: %w", err)
	}
	pctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	ready := make(chan struct{})
	go func() {
		done <- e.Serve(pctx, workflow.ServeConfig{Logger: w.cfg.Logger, Ready: func() { close(ready) }})
	}()
	w.OnClose(func() {
		stop()
		<-done
	})
	w.wf.pool = true
	// Ready once every hosted workflow is registered on the log: a run
	// started next finds its workflow, whichever was registered last.
	ctx, cancel, err := w.call(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	select {
	case <-ready:
		return nil
	case err := <-done:
		done <- err // for the scenario's cleanup, which waits on it
		return fmt.Errorf("the workflow pool stopped: %w", err)
	case <-ctx.Done():
		return fmt.Errorf("the workflow pool did not register its workflows: %w", ctx.Err())
	}
}

func (w *World) startRun(ctx context.Context, name, input string) error {
	return w.startNamedRun(ctx, name, "", input)
}

func (w *World) startNamedRun(ctx context.Context, name, as, input string) error {
	ctx, cancel, err := w.call(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	if as != "" {
		if _, ok := w.wf.named[as]; ok {
			return fmt.Errorf("a run is already named %q in this scenario", as)
		}
	}
	if !json.Valid([]byte(input)) {
		return fmt.Errorf("input %s is not valid JSON", input)
	}
	r, err := w.Workflows().Start(ctx, workflow.StartRequest{Workflow: name, Input: json.RawMessage(input)})
	if err != nil {
		return err
	}
	w.wf.last = r.RunID
	if as != "" {
		if w.wf.named == nil {
			w.wf.named = map[string]string{}
		}
		w.wf.named[as] = r.RunID
	}
	return nil
}

func (w *World) signalRun(ctx context.Context, ref, name string) error {
	return w.signalRunWith(ctx, ref, name, "null")
}

func (w *World) signalRunWith(ctx context.Context, ref, name, data string) error {
	return w.onRun(ctx, ref, func(ctx context.Context, id string) error {
		if !json.Valid([]byte(data)) {
			return fmt.Errorf("data %s is not valid JSON", data)
		}
		_, err := w.Workflows().Signal(ctx, workflow.SignalRequest{RunID: id, Name: name, Data: json.RawMessage(data)})
		return err
	})
}

func (w *World) cancelRun(ctx context.Context, ref string) error {
	return w.onRun(ctx, ref, func(ctx context.Context, id string) error {
		_, err := w.Workflows().Cancel(ctx, workflow.CancelRequest{RunID: id})
		return err
	})
}

func (w *World) retryRun(ctx context.Context, ref string) error {
	return w.onRun(ctx, ref, func(ctx context.Context, id string) error {
		_, err := w.Workflows().Retry(ctx, workflow.RetryRequest{RunID: id})
		return err
	})
}

// onRun calls fn with the id of the run ref names, within the call
// timeout.
func (w *World) onRun(ctx context.Context, ref string, fn func(ctx context.Context, id string) error) error {
	ctx, cancel, err := w.call(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	id, err := w.RunID(ref)
	if err != nil {
		return err
	}
	return fn(ctx, id)
}

// showRun returns the run ref names, as workflow show sees it.
func (w *World) showRun(ctx context.Context, ref string) (*workflow.View, error) {
	var v *workflow.View
	err := w.onRun(ctx, ref, func(ctx context.Context, id string) error {
		r, err := w.Workflows().Show(ctx, id)
		if err != nil {
			return err
		}
		v = workflow.ViewOf(r)
		return nil
	})
	return v, err
}

func (w *World) runIs(ctx context.Context, ref, status string) error {
	v, err := w.showRun(ctx, ref)
	if err != nil {
		return err
	}
	if string(v.Status) != status {
		return fmt.Errorf("run %s is %s%s; expected %s", v.RunID, v.Status, errSuffix(v.Error), status)
	}
	return nil
}

func (w *World) runCompletedWith(ctx context.Context, ref, steps string) error {
	v, err := w.showRun(ctx, ref)
	if err != nil {
		return err
	}
	var want []string
	for _, s := range strings.Split(steps, ",") {
		if s = strings.TrimSpace(s); s != "" {
			want = append(want, s)
		}
	}
	var got []string
	allDone := true
	for _, s := range v.Steps {
		got = append(got, s.Name)
		allDone = allDone && s.Status == workflow.EntryCompleted
	}
	if v.Status != workflow.StatusCompleted {
		return fmt.Errorf("run %s is %s%s with steps %q; expected completed", v.RunID, v.Status, errSuffix(v.Error), strings.Join(got, ", "))
	}
	if strings.Join(got, ", ") != strings.Join(want, ", ") || !allDone {
		var have []string
		for _, s := range v.Steps {
			have = append(have, s.Name+" ("+s.Status+")")
		}
		return fmt.Errorf("run %s has steps %q; expected %q, each completed", v.RunID, strings.Join(have, ", "), strings.Join(want, ", "))
	}
	return nil
}

func (w *World) runHasOutput(ctx context.Context, ref, output string) error {
	var want any
	if err := json.Unmarshal([]byte(output), &want); err != nil {
		return fmt.Errorf("expected output %s is not valid JSON: %w", output, err)
	}
	v, err := w.showRun(ctx, ref)
	if err != nil {
		return err
	}
	var got any
	if err := json.Unmarshal(v.Output, &got); err != nil {
		return fmt.Errorf("run %s: output does not decode: %w", v.RunID, err)
	}
	a, _ := json.Marshal(got)
	b, _ := json.Marshal(want)
	if !bytes.Equal(a, b) {
		return fmt.Errorf("run %s (%s) has output %s; expected %s", v.RunID, v.Status, a, b)
	}
	return nil
}

func (w *World) runFailedWith(ctx context.Context, ref, text string) error {
	v, err := w.showRun(ctx, ref)
	if err != nil {
		return err
	}
	if v.Status != workflow.StatusFailed || !strings.Contains(v.Error, text) {
		return fmt.Errorf("run %s is %s%s; expected failed with an error containing %q", v.RunID, v.Status, errSuffix(v.Error), text)
	}
	return nil
}

func errSuffix(e string) string {
	if e == "" {
		return ""
	}
	return " (" + e + ")"
}
