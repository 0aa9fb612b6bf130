package workflow

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/trellis/trellis/events"
)

// Run event types: the last token of trellis.workflows.run.<run_id>.<type>.
const (
	// Started records a run: its workflow, version, dispatch queue and input.
	Started = "started"
	// StepCompleted records a step's result at its journal position.
	StepCompleted = "step_completed"
	// StepFailed records a step's final error (after its retries).
	StepFailed = "step_failed"
	// TimerSet records a durable sleep and when it ends.
	TimerSet = "timer_set"
	// TimerFired records that a sleep is over.
	TimerFired = "timer_fired"
	// SignalWaiting records a wait for a named signal (with its deadline).
	SignalWaiting = "signal_waiting"
	// SignalReceived records a signal sent to the run (CLI, HTTP, MCP, NATS).
	SignalReceived = "signal_received"
	// SignalConsumed records which received signal ended a wait, or that
	// the wait timed out.
	SignalConsumed = "signal_consumed"
	// TaskAwaited records queue tasks a run added and waits for.
	TaskAwaited = "task_awaited"
	// TaskEnded records the outcome of awaited queue tasks.
	TaskEnded = "task_ended"
	// ChildStarted records child runs a run started and waits for.
	ChildStarted = "child_started"
	// ChildEnded records the outcome of awaited child runs.
	ChildEnded = "child_ended"
	// CancelRequested records a request to cancel the run.
	CancelRequested = "cancel_requested"
	// Completed records the run's output.
	Completed = "completed"
	// Failed records the run's error.
	Failed = "failed"
	// Cancelled records that the run stopped on a cancel request.
	Cancelled = "cancelled"
	// Retried records a retry of a failed run: the journal is cut back to
	// the failed step, which runs again.
	Retried = "retried"
	// Woken records an explicit wake-up of a run (retry of a run that is
	// not failed): nothing changes but a new activation is dispatched.
	Woken = "woken"

	// Registered records, on trellis.workflows.def.<name>.registered, that
	// a pool hosts a version of a workflow on a queue.
	Registered = "registered"
)

// RunSubject is the subject of a run's event.
func RunSubject(runID, typ string) string { return "trellis.workflows.run." + runID + "." + typ }

// RunFilter is the subject filter of every event of a run: the scope of
// the concurrency check.
func RunFilter(runID string) string { return "trellis.workflows.run." + runID + ".>" }

// DefSubject is the subject of a workflow definition's event.
func DefSubject(name, typ string) string { return "trellis.workflows.def." + name + "." + typ }

// DefFilter is the subject filter of a workflow definition's events.
func DefFilter(name string) string { return "trellis.workflows.def." + name + ".>" }

// StartedPayload is the payload of Started.
type StartedPayload struct {
	Workflow  string          `json:"workflow"`
	Version   int             `json:"version"`
	Queue     string          `json:"queue"`
	Input     json.RawMessage `json:"input"`
	Parent    string          `json:"parent,omitempty"`
	ParentPos int             `json:"parent_pos,omitempty"`
}

// EntryPayload is the payload of every journal event (steps, timers,
// signal waits, tasks, children): Pos is the entry's journal position.
type EntryPayload struct {
	Pos      int             `json:"pos"`
	Name     string          `json:"name,omitempty"`
	Result   json.RawMessage `json:"result,omitempty"`
	Error    string          `json:"error,omitempty"`
	Attempts int             `json:"attempts,omitempty"`
	Until    *time.Time      `json:"until,omitempty"`
	Tasks    []string        `json:"tasks,omitempty"`
	Children []string        `json:"children,omitempty"`
	Signal   int             `json:"signal,omitempty"`
	TimedOut bool            `json:"timed_out,omitempty"`
	// TookMs is how long a step's attempts ran, backoff included (steps
	// only).
	TookMs float64 `json:"took_ms,omitempty"`
}

// SignalPayload is the payload of SignalReceived.
type SignalPayload struct {
	Name string          `json:"name"`
	Data json.RawMessage `json:"data,omitempty"`
}

// EndPayload is the payload of Completed, Failed, Cancelled,
// CancelRequested and Retried.
type EndPayload struct {
	Output json.RawMessage `json:"output,omitempty"`
	Error  string          `json:"error,omitempty"`
	Reason string          `json:"reason,omitempty"`
	Pos    int             `json:"pos,omitempty"`
	// Step is the run's last step when it completed just before the run
	// ended (completed, failed or cancelled): it is recorded by the end
	// event, one synced write instead of two, and folds as a
	// step_completed before it.
	Step *EntryPayload `json:"step,omitempty"`
}

// RegisteredPayload is the payload of Registered.
type RegisteredPayload struct {
	Version int    `json:"version"`
	Queue   string `json:"queue"`
}

// Status is a run's place in its lifecycle.
type Status string

// Run statuses.
const (
	StatusRunning   Status = "running"
	StatusSleeping  Status = "sleeping"
	StatusWaiting   Status = "waiting"
	StatusCompleted Status = "completed"
	StatusFailed    Status = "failed"
	StatusCancelled Status = "cancelled"
)

// Terminal reports whether a run in this status is over.
func (s Status) Terminal() bool {
	return s == StatusCompleted || s == StatusFailed || s == StatusCancelled
}

// Valid reports whether s is a known status.
func (s Status) Valid() bool {
	switch s {
	case StatusRunning, StatusSleeping, StatusWaiting, StatusCompleted, StatusFailed, StatusCancelled:
		return true
	}
	return false
}

// Entry kinds of the journal.
const (
	KindStep   = "step"
	KindSleep  = "sleep"
	KindSignal = "signal"
	KindTask   = "task"
	KindChild  = "child"
)

// Entry is one position of a run's journal.
type Entry struct {
	Pos      int             `json:"pos"`
	Kind     string          `json:"kind"`
	Name     string          `json:"name"`
	Status   string          `json:"status"` // completed, failed, pending
	Result   json.RawMessage `json:"result,omitempty"`
	Error    string          `json:"error,omitempty"`
	Attempts int             `json:"attempts,omitempty"`
	Until    *time.Time      `json:"until,omitempty"`
	Tasks    []string        `json:"tasks,omitempty"`
	Children []string        `json:"children,omitempty"`
	Signal   int             `json:"signal,omitempty"`
	TimedOut bool            `json:"timed_out,omitempty"`
	TookMs   float64         `json:"took_ms,omitempty"` // a step's attempts, backoff included
	Time     time.Time       `json:"time"`
}

// Entry statuses.
const (
	EntryCompleted = "completed"
	EntryFailed    = "failed"
	EntryPending   = "pending"
)

// Signal is a signal received by a run.
type Signal struct {
	Index int             `json:"index"`
	Name  string          `json:"name"`
	Data  json.RawMessage `json:"data,omitempty"`
	Time  time.Time       `json:"time"`
	Used  bool            `json:"used"`
}

// Run is a workflow run folded from its events.
type Run struct {
	RunID           string          `json:"run_id"`
	Workflow        string          `json:"workflow"`
	Version         int             `json:"version"`
	Queue           string          `json:"queue"`
	Status          Status          `json:"status"`
	Input           json.RawMessage `json:"input"`
	Output          json.RawMessage `json:"output"`
	Error           string          `json:"error,omitempty"`
	Parent          string          `json:"parent,omitempty"`
	ParentPos       int             `json:"parent_pos,omitempty"`
	CancelRequested bool            `json:"cancel_requested,omitempty"`
	Journal         []Entry         `json:"journal"`
	Signals         []Signal        `json:"signals,omitempty"`
	Started         time.Time       `json:"started"`
	Updated         time.Time       `json:"updated"`
	Events          int             `json:"events"`
}

// clone copies a run deeply enough for the command runner.
func (r *Run) clone() *Run {
	if r == nil {
		return nil
	}
	c := *r
	c.Journal = slices.Clone(r.Journal)
	c.Signals = slices.Clone(r.Signals)
	return &c
}

// status derives the status of a run that is not over from its journal.
func (r *Run) status() Status {
	if r.Status.Terminal() {
		return r.Status
	}
	for _, e := range r.Journal {
		if e.Status == EntryPending {
			if e.Kind == KindSleep {
				return StatusSleeping
			}
			return StatusWaiting
		}
	}
	return StatusRunning
}

// fold applies one event to a run.
func fold(r *Run, rec events.Recorded) (*Run, error) {
	typ := rec.Type
	if typ == Pruned {
		return nil, nil // a tombstone: the run's events go to an archive
	}
	if r == nil {
		if typ != Started {
			return nil, fmt.Errorf("run %s: first event is %s, not %s: %w", rec.AggregateID, typ, Started, events.ErrBadEvent)
		}
		var p StartedPayload
		if err := rec.DecodePayload(&p); err != nil {
			return nil, err
		}
		return &Run{RunID: rec.AggregateID, Workflow: p.Workflow, Version: p.Version, Queue: p.Queue, Input: p.Input,
			Parent: p.Parent, ParentPos: p.ParentPos, Status: StatusRunning, Started: rec.Time, Updated: rec.Time, Events: 1}, nil
	}
	r.Updated = rec.Time
	r.Events++
	switch typ {
	case StepCompleted, StepFailed, TimerSet, TimerFired, SignalWaiting, SignalConsumed, TaskAwaited, TaskEnded, ChildStarted, ChildEnded:
		var p EntryPayload
		if err := rec.DecodePayload(&p); err != nil {
			return nil, err
		}
		if err := r.applyEntry(typ, p, rec.Time); err != nil {
			return nil, fmt.Errorf("run %s: %w: %w", r.RunID, events.ErrBadEvent, err)
		}
	case SignalReceived:
		var p SignalPayload
		if err := rec.DecodePayload(&p); err != nil {
			return nil, err
		}
		r.Signals = append(r.Signals, Signal{Index: len(r.Signals), Name: p.Name, Data: p.Data, Time: rec.Time})
	case CancelRequested:
		r.CancelRequested = true
	case Completed, Failed, Cancelled:
		var p EndPayload
		if err := rec.DecodePayload(&p); err != nil {
			return nil, err
		}
		if p.Step != nil {
			if err := r.applyEntry(StepCompleted, *p.Step, rec.Time); err != nil {
				return nil, fmt.Errorf("run %s: %w: %w", r.RunID, events.ErrBadEvent, err)
			}
		}
		r.Output, r.Error = p.Output, p.Error
		r.Status = map[string]Status{Completed: StatusCompleted, Failed: StatusFailed, Cancelled: StatusCancelled}[typ]
		if typ == Cancelled && r.Error == "" {
			r.Error = p.Reason
		}
		return r, nil
	case Retried:
		var p EndPayload
		if err := rec.DecodePayload(&p); err != nil {
			return nil, err
		}
		if p.Pos < len(r.Journal) {
			for _, e := range r.Journal[p.Pos:] {
				if e.Kind == KindSignal && e.Status == EntryCompleted && !e.TimedOut && e.Signal < len(r.Signals) {
					r.Signals[e.Signal].Used = false
				}
			}
			r.Journal = r.Journal[:p.Pos]
		}
		r.Status, r.Error, r.Output, r.CancelRequested = StatusRunning, "", nil, false
	case Woken:
	default:
		// An event type this version does not know: kept in the count,
		// otherwise ignored.
	}
	r.Status = r.status()
	return r, nil
}

// entryKind maps a journal event type to the kind of entry it opens or
// closes.
var entryKind = map[string]string{
	StepCompleted: KindStep, StepFailed: KindStep,
	TimerSet: KindSleep, TimerFired: KindSleep,
	SignalWaiting: KindSignal, SignalConsumed: KindSignal,
	TaskAwaited: KindTask, TaskEnded: KindTask,
	ChildStarted: KindChild, ChildEnded: KindChild,
}

// applyEntry records a journal event: an event that opens an entry
// appends it at the journal's end; one that closes an entry completes it.
func (r *Run) applyEntry(typ string, p EntryPayload, at time.Time) error {
	kind := entryKind[typ]
	switch typ {
	case StepCompleted, StepFailed, TimerSet, SignalWaiting, TaskAwaited, ChildStarted:
		if p.Pos != len(r.Journal) {
			return fmt.Errorf("%s at position %d, the journal has %d entries", typ, p.Pos, len(r.Journal))
		}
		e := Entry{Pos: p.Pos, Kind: kind, Name: p.Name, Status: EntryPending, Until: p.Until, Tasks: p.Tasks, Children: p.Children, Time: at}
		switch typ {
		case StepCompleted:
			e.Status, e.Result, e.Attempts, e.TookMs = EntryCompleted, p.Result, p.Attempts, p.TookMs
		case StepFailed:
			e.Status, e.Error, e.Attempts, e.TookMs = EntryFailed, p.Error, p.Attempts, p.TookMs
		}
		r.Journal = append(r.Journal, e)
		return nil
	}
	if p.Pos < 0 || p.Pos >= len(r.Journal) || r.Journal[p.Pos].Kind != kind || r.Journal[p.Pos].Status != EntryPending {
		return fmt.Errorf("%s at position %d closes no open %s entry", typ, p.Pos, kind)
	}
	e := &r.Journal[p.Pos]
	e.Status, e.Result, e.Error, e.Time = EntryCompleted, p.Result, p.Error, at
	if p.Error != "" {
		e.Status = EntryFailed
	}
	if typ == SignalConsumed {
		e.Signal, e.TimedOut = p.Signal, p.TimedOut
		if !p.TimedOut {
			if p.Signal < 0 || p.Signal >= len(r.Signals) {
				return fmt.Errorf("signal %d was never received", p.Signal)
			}
			r.Signals[p.Signal].Used = true
		}
	}
	return nil
}

// nextSignal returns the oldest unused signal named name.
func (r *Run) nextSignal(name string) (Signal, bool) {
	for _, s := range r.Signals {
		if s.Name == name && !s.Used {
			return s, true
		}
	}
	return Signal{}, false
}

// View is the caller's view of a run (workflow show): the run with its
// steps listed in journal order.
type View struct {
	*Run
	// Steps lists the run's steps (kind step) in journal order.
	Steps []StepView `json:"steps"`
}

// StepView is one step of a View.
type StepView struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
}

// ViewOf builds the view of a run.
func ViewOf(r *Run) *View {
	v := &View{Run: r, Steps: []StepView{}}
	for _, e := range r.Journal {
		if e.Kind == KindStep {
			v.Steps = append(v.Steps, StepView{Name: e.Name, Status: e.Status, Error: e.Error})
		}
	}
	if v.Output == nil {
		v.Output = json.RawMessage("null")
	}
	if v.Journal == nil {
		v.Journal = []Entry{}
	}
	return v
}

// runIDOf returns the run id of a run event's subject.
func runIDOf(subject string) (string, bool) {
	rest, ok := strings.CutPrefix(subject, "trellis.workflows.run.")
	if !ok {
		return "", false
	}
	id, _, ok := strings.Cut(rest, ".")
	return id, ok
}
