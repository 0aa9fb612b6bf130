package taskqueue

import (
	"context"
	"errors"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/command"
	"github.com/trellis/trellis/events"
)

// taskKind is the queue task aggregate: every event of trellis.queue.*.<id>,
// folded by Apply. Appends are checked on the task's own queue
// (the same subjects without a wildcard in the middle).
var taskKind = command.Kind[*trellis.Task]{
	Name:   "task",
	Stream: events.StreamQueue,
	Filter: Filter,
	Fold:   Apply,
	Clone:  (*trellis.Task).Clone,
	Schema: Schema,
}

// taskState is a task as a command starts from.
type taskState = command.State[*trellis.Task]

// decision is what a command decided against a task's current state: one
// event to append.
type decision struct {
	typ     string
	payload any
}

// decide runs a queue-task command through the command runner: decide
// against st, append with the task's expected last sequence, decide again
// on a lost race or on a refusal from a state that may be stale. It
// returns the new state.
func (q *Handler) decide(ctx context.Context, st taskState, actor string, fn func(*trellis.Task) (decision, error)) (taskState, error) {
	var refusal error // the decision's own refusal, returned as it is
	next, err := q.tasks.Run(ctx, st, actor, func(t *trellis.Task) (command.Decision, error) {
		if t == nil {
			// Pruned meanwhile: the state reloaded after a failed check
			// ends at the task's tombstone.
			refusal = errPruned(st.ID)
			return command.Decision{}, refusal
		}
		d, err := fn(t)
		refusal = err
		if err != nil {
			return command.Decision{}, err
		}
		return command.Decision{Subject: TaskSubject(t, d.typ), Type: d.typ, Payload: d.payload,
			Check: FilterIn(t.Queue, t.TaskID)}, nil
	})
	if errors.Is(err, command.ErrConflict) {
		return next, trellis.Errorf(trellis.CodeConflict, "task %s keeps changing concurrently; try again", st.ID)
	}
	var te *trellis.Error
	if err != nil && (refusal == nil || !errors.Is(err, refusal)) && !errors.As(err, &te) {
		return next, command.StoreError("append", err)
	}
	return next, err
}
