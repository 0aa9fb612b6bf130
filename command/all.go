package command

import (
	"context"
	"errors"
	"sync"

	"github.com/trellis/trellis/events"
)

// Independent is one command of RunAll: a command on its own aggregate.
type Independent[S any] struct {
	// State is the aggregate's state to decide on (for a new aggregate:
	// its id, Fresh).
	State State[S]
	// Actor is recorded on the event.
	Actor string
	// Decide decides against State.Value.
	Decide func(S) (Decision, error)
}

// Outcome is the result of one command of RunAll.
type Outcome[S any] struct {
	State State[S]
	Err   error
}

// RunAll runs commands on distinct aggregates together: each is decided
// on its own state and their events are appended in one call to the
// store (events.Store.AppendAll), so a bulk operation (adding many tasks)
// shares its synced writes. Each command keeps its own check and outcome;
// one that loses a race, or was refused on a state that may be stale, is
// run again on its own (Run). Outcomes are in the order of cmds.
func (r *Runner[S]) RunAll(ctx context.Context, cmds []Independent[S]) []Outcome[S] {
	out := make([]Outcome[S], len(cmds))
	var pending []events.Pending
	var idx []int
	var retry []int
	for i, c := range cmds {
		d, err := c.Decide(c.State.Value)
		if err != nil {
			if c.State.Fresh {
				out[i] = Outcome[S]{State: c.State, Err: err}
			} else {
				retry = append(retry, i)
			}
			continue
		}
		p, err := r.Pending(ctx, c.State, c.Actor, d)
		if err != nil {
			out[i] = Outcome[S]{State: c.State, Err: err}
			continue
		}
		pending = append(pending, p)
		idx = append(idx, i)
	}
	for j, res := range r.store.AppendAll(ctx, pending) {
		i, c, p := idx[j], cmds[idx[j]], pending[j]
		switch {
		case errors.Is(res.Err, events.ErrWrongLastSequence):
			retry = append(retry, i)
		case res.Err != nil:
			out[i] = Outcome[S]{State: c.State, Err: res.Err}
		case res.Duplicate && p.MsgID != "":
			out[i] = Outcome[S]{State: c.State, Err: &DuplicateError{Seq: res.Seq}}
		default:
			st, err := r.Appended(c.State, p, res.Seq)
			out[i] = Outcome[S]{State: st, Err: err}
		}
	}
	var wg sync.WaitGroup
	for _, i := range retry {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := r.Run(ctx, cmds[i].State, cmds[i].Actor, cmds[i].Decide)
			out[i] = Outcome[S]{State: st, Err: err}
		}()
	}
	wg.Wait()
	return out
}
