package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/command"
)

// Advance runs one activation of a run: it replays the run's journal
// through the workflow's code and continues until the code completes,
// fails, or blocks on a timer, a signal, a task or a child (then a wake
// dispatches the next activation). Two activations of one run cannot both
// record: every journal event is a checked append on the run, and the
// loser stops. It returns what happened, for the activation's checkpoint;
// an error leaves the run to be dispatched again.
func (e *Engine) Advance(ctx context.Context, runID string) (string, error) {
	if err := ValidateRunID(runID); err != nil {
		return "", err
	}
	// One activation of a run at a time in this process: a wake that
	// comes while the run is active waits and then replays what the first
	// recorded, instead of running the same steps beside it.
	unlock := e.runs.Lock(runID)
	defer unlock()
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c := &Context{e: e, ctx: rctx, taskCtx: ctx}
	// A cancel request reaches the running step at once: the stream's
	// events are also delivered to plain subscribers of their subject.
	stopWatch, err := e.watchCancel(runID, c, func() {
		c.mu.Lock()
		c.cancelled = true
		c.mu.Unlock()
		cancel()
	})
	if err != nil {
		e.cfg.Logger.Warn("workflow cancel requests are not watched", "err", err)
	}
	defer stopWatch()
	st, err := e.runs.Load(ctx, runID)
	if err != nil {
		return "", command.StoreError("load run", err)
	}
	if st.Value == nil {
		return "no such run", nil
	}
	c.st = st
	r := st.Value
	if r.Status.Terminal() {
		return "run is " + string(r.Status), e.notifyParent(ctx, r)
	}
	reg, ok := e.lookup(r.Workflow, r.Version)
	if !ok {
		return "", trellis.Errorf(trellis.CodeNotFound, "this pool does not host workflow %s version %d", r.Workflow, r.Version)
	}
	if r.CancelRequested {
		cancel()
	}
	var out json.RawMessage
	var fnErr error
	finished := c.exec(func() { out, fnErr = reg.run(c, r.Input) })
	if !finished {
		return c.stopped(ctx)
	}
	if c.panicked != nil {
		fnErr = c.panicked
	}
	if c.Cancelled() {
		if !c.exec(c.compensate) {
			return c.stopped(ctx)
		}
		return c.end(ctx, "cancelled", Cancelled, EndPayload{Reason: "cancelled"})
	}
	if fnErr != nil {
		msg := fnErr.Error()
		failedPos := c.pos
		var se *StepError
		if errors.As(fnErr, &se) {
			for _, en := range c.st.Value.Journal {
				if en.Kind == KindStep && en.Name == se.Step && en.Status == EntryFailed {
					failedPos = en.Pos
					break
				}
			}
		}
		if !c.exec(c.compensate) {
			return c.stopped(ctx)
		}
		return c.end(ctx, "failed: "+msg, Failed, EndPayload{Error: msg, Pos: failedPos})
	}
	return c.end(ctx, "completed", Completed, EndPayload{Output: out})
}

// exec runs fn on its own goroutine, as the workflow's code runs: it
// reports false when fn left through runtime.Goexit (suspended, lost,
// diverged, or the store failed). A panic of fn is returned as the run's
// failure through c.panicked.
func (c *Context) exec(fn func()) bool {
	done := make(chan bool, 1)
	go func() {
		finished := false
		defer func() {
			if p := recover(); p != nil {
				c.mu.Lock()
				c.panicked = fmt.Errorf("workflow code panicked: %v", p)
				c.mu.Unlock()
				finished = true
			}
			done <- finished
		}()
		fn()
		finished = true
	}()
	return <-done
}

// stopped reports an activation whose code left early.
func (c *Context) stopped(ctx context.Context) (string, error) {
	c.mu.Lock()
	why, msg, fatal, div := c.why, c.suspendMsg, c.fatal, c.diverged
	c.mu.Unlock()
	switch why {
	case stopSuspend:
		return msg, nil
	case stopLost:
		return "another activation advanced the run", nil
	case stopNondeterm:
		return c.end(ctx, "failed: "+div.Error(), Failed, EndPayload{Error: div.Error(), Pos: div.Pos})
	}
	return "", fatal
}

// compensate runs the compensations of the completed steps in reverse
// order, each journaled as the step "compensate:<name>".
func (c *Context) compensate() {
	c.compensating = true
	for i := len(c.comps) - 1; i >= 0; i-- {
		comp := c.comps[i]
		_, err := c.step("compensate:"+comp.name, StepOptions{Attempts: 3}, func(ctx context.Context) (json.RawMessage, error) {
			return json.RawMessage("null"), comp.fn(ctx)
		})
		if err != nil {
			c.e.cfg.Logger.Warn("workflow compensation failed", "run", c.RunID(), "step", comp.name, "err", err)
		}
	}
}

// end records the run's end (unless another activation advanced the run
// meanwhile) and wakes its parent. It returns msg, or what happened
// instead when another activation advanced the run.
func (c *Context) end(ctx context.Context, msg, typ string, p EndPayload) (string, error) {
	c.mu.Lock()
	st, pos, panicked, held := c.st, c.pos, c.panicked, c.held
	c.held = nil
	c.mu.Unlock()
	// The journal ends where the code stopped, or before the held step
	// that this event records.
	journalLen := pos
	if held != nil {
		p.Step, journalLen = held, held.Pos
	}
	if panicked != nil && typ == Completed {
		typ, p = Failed, EndPayload{Error: panicked.Error(), Pos: pos}
	}
	if panicked != nil && typ == Failed && p.Error == "" {
		p.Error = panicked.Error()
	}
	st, err := c.e.runs.Run(context.WithoutCancel(ctx), st, "", func(r *Run) (command.Decision, error) {
		if r == nil || r.Status.Terminal() || ((typ != Failed || held != nil) && len(r.Journal) != journalLen) {
			return command.Decision{}, errLost
		}
		return command.Decision{Subject: RunSubject(st.ID, typ), Type: typ, Payload: p}, nil
	})
	if errors.Is(err, errLost) {
		return "another activation advanced the run", nil
	}
	if err != nil {
		return "", command.StoreError("end run", err)
	}
	return msg, c.e.notifyParent(ctx, st.Value)
}

// notifyParent wakes the parent of a child run that ended.
func (e *Engine) notifyParent(ctx context.Context, r *Run) error {
	if r.Parent == "" || !r.Status.Terminal() {
		return nil
	}
	parent, err := e.Show(ctx, r.Parent)
	if err != nil {
		return err
	}
	if parent.Status.Terminal() {
		return nil
	}
	return e.wake(ctx, parent, "child-"+r.RunID, wakeOpts{})
}
