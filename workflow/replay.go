package workflow

import (
	"context"
	"fmt"

	"github.com/trellis/trellis/events"
)

// History is one recorded run: its events in log order.
type History struct {
	RunID  string
	Events []events.Recorded
}

// Histories groups run events (from the log, or an audit export) by run,
// in the order the runs began; events of other subjects are skipped.
func Histories(recs []events.Recorded) []History {
	var order []string
	by := map[string][]events.Recorded{}
	for _, r := range recs {
		id, ok := runIDOf(r.Subject)
		if !ok {
			continue
		}
		if _, seen := by[id]; !seen {
			order = append(order, id)
		}
		by[id] = append(by[id], r)
	}
	out := make([]History, 0, len(order))
	for _, id := range order {
		out = append(out, History{RunID: id, Events: by[id]})
	}
	return out
}

// Divergence is where current code leaves a recorded run's journal.
type Divergence struct {
	RunID    string `json:"run_id"`
	Workflow string `json:"workflow"`
	Version  int    `json:"version"`
	// Err is the first divergence (a *NondeterminismError), or a replay
	// that could not start (the history does not fold).
	Err error `json:"-"`
	// Message is Err's text.
	Message string `json:"message"`
}

// Replay replays a recorded run against fn (the current code of the run's
// workflow) without running anything: every primitive returns what the
// journal recorded, and the replay stops where the journal ends or an
// entry is still open. It returns nil when the code follows the journal,
// else the first divergence. Only runs of name are replayed (nil for
// others).
func Replay[I, O any](name string, fn Func[I, O], h History) *Divergence {
	var r *Run
	var err error
	for _, rec := range h.Events {
		if r, err = fold(r, rec); err != nil {
			return &Divergence{RunID: h.RunID, Err: err, Message: err.Error()}
		}
	}
	if r == nil || r.Workflow != name {
		return nil
	}
	e := &Engine{cfg: Config{}.withDefaults(), registry: map[string]map[int]registered{}}
	if err := Register(e, name, max(r.Version, 1), fn); err != nil {
		return &Divergence{RunID: r.RunID, Workflow: r.Workflow, Version: r.Version, Err: err, Message: err.Error()}
	}
	reg, _ := e.lookup(name, max(r.Version, 1))
	ctx := context.Background()
	c := &Context{e: e, ctx: ctx, taskCtx: ctx, replay: true}
	c.st.ID, c.st.Value = r.RunID, r
	var fnErr error
	finished := c.exec(func() { _, fnErr = reg.run(c, r.Input) })
	div := func(err error) *Divergence {
		return &Divergence{RunID: r.RunID, Workflow: r.Workflow, Version: r.Version, Err: err, Message: err.Error()}
	}
	if !finished {
		if c.why == stopNondeterm {
			return div(c.diverged)
		}
		return nil
	}
	if c.panicked != nil {
		return div(c.panicked)
	}
	// The code finished: it must have used the whole journal (the
	// compensations of a failed run come after it).
	if c.pos < len(r.Journal) && r.Status != StatusFailed && r.Status != StatusCancelled {
		en := r.Journal[c.pos]
		return div(fmt.Errorf("nondeterministic: the code returned (%v) at journal position %d, but the run recorded %s %q there", fnErr, c.pos, en.Kind, en.Name))
	}
	return nil
}
