package command

import (
	"context"
	"errors"
	"fmt"
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
	var envs []events.Envelope
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
		env, err := events.NewEnvelope(r.at(d), d.Type, c.State.ID, c.Actor, r.kind.Schema, d.Payload)
		if err != nil {
			out[i] = Outcome[S]{State: c.State, Err: err}
			continue
		}
		filter := r.kind.Filter(c.State.ID)
		if d.Check != "" {
			filter = d.Check
		}
		pending = append(pending, events.Pending{Subject: d.Subject, Envelope: env, Expect: events.Expect{Filter: filter, LastSeq: c.State.Seq}, MsgID: d.MsgID, Header: d.Header})
		idx = append(idx, i)
		envs = append(envs, env)
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
			next, err := r.kind.Fold(r.clone(c.State.Value), events.Recorded{Envelope: envs[j], Stream: r.kind.Stream, Subject: p.Subject, Seq: res.Seq})
			if err != nil {
				out[i] = Outcome[S]{State: c.State, Err: fmt.Errorf("fold the appended %s event: %w", p.Envelope.Type, err)}
				continue
			}
			st := State[S]{ID: c.State.ID, Value: next, Seq: res.Seq, Fresh: true}
			r.cache.put(st.ID, r.clone(next), st.Seq)
			out[i] = Outcome[S]{State: st}
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
