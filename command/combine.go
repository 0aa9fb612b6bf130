package command

import (
	"context"
	"errors"
	"fmt"

	"github.com/trellis/trellis/events"
)

// Combining commands on one aggregate.
//
// Commands on one aggregate are serial by nature: each must see the state
// the previous one left. When several arrive at once (eight agents claiming
// tasks of one graph, many observations on one branch), Submit lets the
// first become the leader of a round: it takes every command waiting for
// that aggregate, decides them one after the other on the state each
// leaves, and appends their events together (an atomic chain: one synced
// write, the first event checked against the aggregate's last sequence).
// Each caller gets its own outcome: the state after its own event, or the
// error its decision returned. A lost race decides the whole round again
// on the caught-up state.

// Hooks adapt a round to a domain. Both run under the aggregate's lock.
type Hooks[S any] struct {
	// Prepare returns the state a round starts from (default Current). A
	// domain may record what the log does not know yet (a VINE file edited
	// by hand) before the round decides.
	Prepare func(ctx context.Context, id string) (State[S], error)
	// Finish runs after a round that appended (or that only refused, with
	// appended false), with the state the round left (the VINE file is
	// written once per round).
	Finish func(ctx context.Context, st State[S], appended bool) error
}

// Command is one caller's command for Submit.
type Command[S any] struct {
	// Actor is recorded on the command's event.
	Actor string
	// Decide decides against the state the previous commands of the round
	// left. It must not change that state.
	Decide func(S) (Decision, error)
}

// maxRound bounds the commands one round decides.
const maxRound = 128

// submitted is a command waiting for, or in, a round.
type submitted[S any] struct {
	cmd  Command[S]
	done chan struct{}
	st   State[S]
	err  error
}

// aggQueue is the commands waiting on one aggregate and whether a leader
// is running a round for it.
type aggQueue[S any] struct {
	waiting []*submitted[S]
	leading bool
}

// Submit runs cmd on aggregate id, combined with the commands other
// callers submit for that aggregate at the same time (see above). It
// returns the state after cmd's event; or cmd's own refusal with the state
// it was refused on; or an error of the round (a conflict after
// MaxAttempts lost races, the store's error, a hook's error). hooks may be
// nil; a round runs its leader's hooks, so every caller of one aggregate
// kind must pass the same ones.
func (r *Runner[S]) Submit(ctx context.Context, id string, cmd Command[S], hooks *Hooks[S]) (State[S], error) {
	// The actor is the caller's, decided here: the round appends with its
	// leader's context.
	cmd.Actor = events.ActorFor(ctx, cmd.Actor)
	s := &submitted[S]{cmd: cmd, done: make(chan struct{})}
	r.qmu.Lock()
	q := r.queues[id]
	if q == nil {
		q = &aggQueue[S]{}
		r.queues[id] = q
	}
	q.waiting = append(q.waiting, s)
	lead := !q.leading
	q.leading = true
	r.qmu.Unlock()
	if lead {
		// The leader works for every caller of its rounds: its own
		// cancellation must not fail theirs.
		r.lead(context.WithoutCancel(ctx), id, q, hooks)
	}
	select {
	case <-s.done:
		return s.st, s.err
	case <-ctx.Done():
		// Still waiting or in a round: the outcome is unknown to this
		// caller, as with any append whose answer it stops waiting for.
		return State[S]{ID: id}, ctx.Err()
	}
}

// lead runs the next round (the leader's own command is in it), each
// round bounded by the append timeout. When commands still wait after it,
// a goroutine leads on for them: a leader's call returns once its own
// command is decided, however busy the aggregate stays. Every round of a
// run of leadership uses the first leader's hooks.
func (r *Runner[S]) lead(base context.Context, id string, q *aggQueue[S], hooks *Hooks[S]) {
	r.qmu.Lock()
	n := min(len(q.waiting), maxRound)
	round := q.waiting[:n:n]
	q.waiting = append([]*submitted[S](nil), q.waiting[n:]...)
	r.qmu.Unlock()
	ctx, cancel := context.WithTimeout(base, r.store.Config().AppendTimeout)
	r.round(ctx, id, round, hooks)
	cancel()
	for _, s := range round {
		close(s.done)
	}
	r.qmu.Lock()
	defer r.qmu.Unlock()
	if len(q.waiting) == 0 {
		q.leading = false
		delete(r.queues, id)
		return
	}
	go r.lead(base, id, q, hooks)
}

// round decides and appends one round under the aggregate's lock.
func (r *Runner[S]) round(ctx context.Context, id string, cmds []*submitted[S], hooks *Hooks[S]) {
	unlock := r.Lock(id)
	defer unlock()
	fail := func(err error) {
		for _, s := range cmds {
			if s.err == nil {
				s.err = err
			}
		}
	}
	var st State[S]
	var err error
	if hooks != nil && hooks.Prepare != nil {
		st, err = hooks.Prepare(ctx, id)
	} else {
		st, err = r.Current(ctx, id)
	}
	if err != nil {
		fail(err)
		return
	}
	st, appended, err := r.decideRound(ctx, st, cmds)
	if err != nil {
		fail(err)
		return
	}
	if hooks != nil && hooks.Finish != nil {
		if err := hooks.Finish(ctx, st, appended); err != nil {
			fail(err)
		}
	}
}

// decideRound decides every command on the state the previous ones leave
// and appends their events as one chain, deciding again when the chain
// loses a race. It records each command's outcome and returns the state
// after the round.
func (r *Runner[S]) decideRound(ctx context.Context, st State[S], cmds []*submitted[S]) (State[S], bool, error) {
	for attempt := 1; ; attempt++ {
		if err := r.learnHead(ctx, &st); err != nil {
			return st, false, err
		}
		cur := st
		prev := st.Head
		var heads []string
		var chain []events.Pending
		var owners []*submitted[S]
		var states []S
		refusedStale := false
		for _, s := range cmds {
			s.st, s.err = State[S]{}, nil
			d, err := s.cmd.Decide(cur.Value)
			if err != nil {
				if !st.Fresh {
					refusedStale = true
					break
				}
				// The refused command learns the state it was refused on
				// (its sequence is the round's starting one).
				s.st, s.err = State[S]{ID: st.ID, Value: r.clone(cur.Value), Seq: st.Seq, Fresh: true}, err
				continue
			}
			env, err := events.NewEnvelope(r.at(d), d.Type, st.ID, s.cmd.Actor, r.kind.Schema, d.Payload)
			if err != nil {
				s.err = err
				continue
			}
			env.Prev = prev
			next, err := r.kind.Fold(r.clone(cur.Value), events.Recorded{Envelope: env, Stream: r.kind.Stream, Subject: d.Subject})
			if err != nil {
				s.err = fmt.Errorf("fold the decided %s event: %w", d.Type, err)
				continue
			}
			chain = append(chain, events.Pending{Subject: d.Subject, Envelope: env, Expect: r.expect(st, d), MsgID: d.MsgID, Header: d.Header})
			owners = append(owners, s)
			states = append(states, next)
			prev = events.Hash(env)
			heads = append(heads, prev)
			cur.Value = next
		}
		if refusedStale {
			// A refusal on a state that may be behind the log: catch up
			// and decide the round again before refusing anything.
			var err error
			if st, err = r.catchUp(ctx, st); err != nil {
				return st, false, err
			}
			continue
		}
		if len(chain) == 0 {
			return st, false, nil
		}
		acks, err := r.store.AppendChain(ctx, chain)
		if errors.Is(err, events.ErrWrongLastSequence) {
			r.cache.drop(st.ID)
			if attempt >= r.cfg.MaxAttempts {
				return st, false, fmt.Errorf("%s %s: %w after %d attempts", r.kind.Name, st.ID, ErrConflict, attempt)
			}
			if err := sleep(ctx, r.cfg.Backoff(attempt)); err != nil {
				return st, false, err
			}
			if st, err = r.catchUp(ctx, st); err != nil {
				return st, false, err
			}
			continue
		}
		if err != nil {
			return st, false, err
		}
		for i, s := range owners {
			s.st = State[S]{ID: st.ID, Value: states[i], Seq: acks[i].Seq, Fresh: true, Head: heads[i]}
		}
		out := State[S]{ID: st.ID, Value: states[len(states)-1], Seq: acks[len(acks)-1].Seq, Fresh: true, Head: heads[len(heads)-1]}
		r.cache.put(st.ID, r.clone(out.Value), out.Seq, out.Head)
		return out, true, nil
	}
}
