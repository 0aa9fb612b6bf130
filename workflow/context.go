package workflow

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/trellis/trellis/command"
)

// ErrCancelled is returned by the primitives of a run that was asked to
// stop (workflow cancel): the workflow should return it (or any error);
// the run then compensates and ends as cancelled.
var ErrCancelled = errors.New("workflow run cancelled")

// NondeterminismError reports a run whose code asked, on replay, for
// another entry than the journal holds at that position.
type NondeterminismError struct {
	Pos                int
	RecordedKind, Kind string
	Recorded, Asked    string
}

func (e *NondeterminismError) Error() string {
	return fmt.Sprintf("nondeterministic: at journal position %d the run recorded %s %q, but the code asks for %s %q",
		e.Pos, e.RecordedKind, e.Recorded, e.Kind, e.Asked)
}

// stop is why the workflow goroutine left early (runtime.Goexit).
type stop int

const (
	stopNone      stop = iota
	stopSuspend        // blocked on a timer, signal, task or child: resumed by a wake
	stopLost           // another activation advanced the run: this one ends
	stopNondeterm      // the code diverged from the journal
	stopFatal          // the store failed: the activation fails and is retried
)

// Context is what a workflow's code gets: the handle of the journaled
// primitives. It is used only by the workflow's goroutine (All runs its
// branches' functions concurrently, but records them itself).
type Context struct {
	e       *Engine
	ctx     context.Context // cancelled when the run is cancelled (or the activation ends)
	taskCtx context.Context // the activation's: ends when the pool drains
	st      command.State[*Run]
	pos     int

	mu         sync.Mutex
	why        stop
	fatal      error
	diverged   *NondeterminismError
	suspendMsg string
	comps      []compensation
	cancelled  bool
	// compensating is set while the compensations run: they run even
	// though the run is cancelled.
	compensating bool
	// panicked is the panic of the workflow's code (outside a step).
	panicked error
	// held is a step that completed in this activation and is not
	// recorded yet: it is recorded before anything else the code does
	// (the next primitive's first move), or by the run's end event.
	held *EntryPayload
	// replay is set by Replay: the code runs against the journal only;
	// it stops where the journal ends or an entry is still open.
	replay bool
}

// compensation is a registered undo of a completed step.
type compensation struct {
	name string
	fn   func(ctx context.Context) error
}

// RunID returns the run's id.
func (c *Context) RunID() string { return c.st.ID }

// Run returns the run as last recorded (read only).
func (c *Context) Run() *Run { return c.st.Value }

// Done is closed when the run is cancelled.
func (c *Context) Done() <-chan struct{} { return c.ctx.Done() }

// Cancelled reports whether the run was asked to stop.
func (c *Context) Cancelled() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.compensating && (c.cancelled || c.st.Value.CancelRequested)
}

// stepCtx is the context of a step's attempt.
func (c *Context) stepCtx() context.Context {
	if c.compensating {
		return c.taskCtx
	}
	return c.ctx
}

// drained leaves when the activation's own context ended (the pool
// drains): nothing is recorded, the run is dispatched again.
func (c *Context) drained() {
	if err := c.taskCtx.Err(); err != nil {
		c.fail(fmt.Errorf("activation stopped: %w", err))
	}
}

// leave ends the workflow goroutine for why.
func (c *Context) leave(why stop) {
	c.mu.Lock()
	if c.why == stopNone {
		c.why = why
	}
	c.mu.Unlock()
	runtime.Goexit()
}

// fail leaves because the store failed.
func (c *Context) fail(err error) {
	c.mu.Lock()
	if c.fatal == nil {
		c.fatal = err
	}
	c.mu.Unlock()
	c.leave(stopFatal)
}

// recorded returns the journal entry at the next position when there is
// one, checking that it is what the code asks for now; it advances the
// position.
func (c *Context) next(kind, name string) (Entry, bool) {
	pos := c.pos
	c.pos++
	j := c.st.Value.Journal
	if pos >= len(j) {
		c.flush()
		if c.replay && c.st.Value.Status == StatusCompleted {
			c.mu.Lock()
			c.diverged = &NondeterminismError{Pos: pos, RecordedKind: "the run's", Recorded: "completion", Kind: kind, Asked: name}
			c.mu.Unlock()
			c.leave(stopNondeterm)
		}
		if c.replay {
			c.suspend("the journal ends")
		}
		return Entry{Pos: pos, Kind: kind, Name: name}, false
	}
	e := j[pos]
	if e.Kind != kind || e.Name != name {
		c.mu.Lock()
		c.diverged = &NondeterminismError{Pos: pos, RecordedKind: e.Kind, Recorded: e.Name, Kind: kind, Asked: name}
		c.mu.Unlock()
		c.leave(stopNondeterm)
	}
	if c.replay && e.Status == EntryPending {
		c.suspend("the journal's last entry is open")
	}
	return e, true
}

// append records a journal event for the entry at pos: opening events
// need the journal to end at pos, closing ones an open entry there. A
// lost race (another activation recorded it) ends this activation.
func (c *Context) append(typ string, p EntryPayload) {
	c.flush()
	c.mu.Lock()
	st := c.st
	c.mu.Unlock()
	st, err := c.e.runs.Run(c.ctx0(), st, "", func(r *Run) (command.Decision, error) {
		if r == nil || r.Status.Terminal() {
			return command.Decision{}, errLost
		}
		switch typ {
		case StepCompleted, StepFailed, TimerSet, SignalWaiting, TaskAwaited, ChildStarted:
			if len(r.Journal) != p.Pos {
				return command.Decision{}, errLost
			}
		default:
			if p.Pos >= len(r.Journal) || r.Journal[p.Pos].Status != EntryPending {
				return command.Decision{}, errLost
			}
		}
		return command.Decision{Subject: RunSubject(st.ID, typ), Type: typ, Payload: p}, nil
	})
	if errors.Is(err, errLost) {
		c.leave(stopLost)
	}
	if err != nil {
		c.fail(err)
	}
	c.mu.Lock()
	c.st = st
	c.mu.Unlock()
}

// hold keeps a completed step to be recorded by the next append or the
// run's end event (see Context.held).
func (c *Context) hold(p EntryPayload) {
	c.flush()
	c.mu.Lock()
	c.held = &p
	c.mu.Unlock()
}

// flush records the held step, if any.
func (c *Context) flush() {
	c.mu.Lock()
	h := c.held
	c.held = nil
	c.mu.Unlock()
	if h != nil {
		c.append(StepCompleted, *h)
	}
}

// ctx0 is the context of the log's writes: not the cancellable one, so a
// cancelled run still records what happened.
func (c *Context) ctx0() context.Context { return context.WithoutCancel(c.taskCtx) }

var errLost = errors.New("another activation advanced the run")

// suspend ends this activation until a wake dispatches another.
func (c *Context) suspend(msg string) {
	c.mu.Lock()
	c.suspendMsg = msg
	c.mu.Unlock()
	c.leave(stopSuspend)
}

// checkCancel returns ErrCancelled once the run was asked to stop.
func (c *Context) checkCancel() error {
	if c.Cancelled() {
		return ErrCancelled
	}
	return nil
}
