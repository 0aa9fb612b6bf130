package command

import (
	"context"
	"errors"
	"fmt"

	"github.com/trellis/trellis/events"
)

// Commands on several aggregates.
//
// Some commands must change two or more aggregates together: a unique
// key's hold and the task it admits, a claim and the concurrency slot it
// takes, a task and the prerequisites it links to. Atomic runs such a
// command: decide loads each aggregate fresh from the log (Runner.Load),
// decides, and returns one event per aggregate (Runner.Pending), each with
// its own check of that aggregate's last sequence; the events are appended
// as one atomic batch (events.Store.AppendAtomic), so either all are
// stored or none. A lost race on any aggregate decides the whole command
// again on the caught-up states; a refusal is decide's error, returned as
// is (decide sees fresh states, so it is final).

// Atomic runs decide and appends its events as one atomic batch, deciding
// again after a lost race (up to cfg's MaxAttempts, with its Backoff). It
// returns the events' acknowledgements in decide's order, or decide's
// error, or a conflict (wrapping ErrConflict), or the store's error
// (events.ErrDuplicateMsgID among them). An empty decision appends
// nothing.
func Atomic(ctx context.Context, store *events.Store, cfg Config, decide func(ctx context.Context) ([]events.Pending, error)) ([]events.Appended, error) {
	cfg = cfg.withDefaults()
	for attempt := 1; ; attempt++ {
		ps, err := decide(ctx)
		if err != nil || len(ps) == 0 {
			return nil, err
		}
		acks, err := store.AppendAtomic(ctx, ps)
		if errors.Is(err, events.ErrWrongLastSequence) {
			if attempt >= cfg.MaxAttempts {
				return nil, fmt.Errorf("%s: %w after %d attempts", ps[0].Subject, ErrConflict, attempt)
			}
			if err := sleep(ctx, cfg.Backoff(attempt)); err != nil {
				return nil, err
			}
			continue
		}
		return acks, err
	}
}

// Pending turns a decision on st into the event an atomic command appends:
// the envelope (actor, time, chained to the aggregate's previous event)
// and the check of st's aggregate.
func (r *Runner[S]) Pending(ctx context.Context, st State[S], actor string, d Decision) (events.Pending, error) {
	env, err := r.envelope(ctx, &st, d, actor)
	if err != nil {
		return events.Pending{}, err
	}
	return events.Pending{Subject: d.Subject, Envelope: env, Expect: r.expect(st, d), MsgID: d.MsgID, Header: d.Header}, nil
}

// expect is the check of decision d's event on st: the aggregate's filter
// (or the decision's own Check) at st's sequence.
func (r *Runner[S]) expect(st State[S], d Decision) events.Expect {
	filter := r.kind.Filter(st.ID)
	if d.Check != "" {
		filter = d.Check
	}
	return events.Expect{Filter: filter, LastSeq: st.Seq}
}

// Once appends decision d on st once, checked against st's sequence, and
// returns the state after it: no retry, so an aggregate that moved on
// meanwhile answers events.ErrWrongLastSequence (the snapshots that
// aggregates append of themselves are left for the next command then).
func (r *Runner[S]) Once(ctx context.Context, st State[S], actor string, d Decision) (State[S], error) {
	p, err := r.Pending(ctx, st, actor, d)
	if err != nil {
		return st, err
	}
	ack, err := r.store.AppendWithHeaders(ctx, p.Subject, p.Envelope, p.Expect, p.MsgID, p.Header)
	if err != nil {
		return st, err
	}
	return r.Appended(st, p, ack.Seq)
}

// Appended folds an event an atomic command stored at seq into st and
// caches the new state.
func (r *Runner[S]) Appended(st State[S], p events.Pending, seq uint64) (State[S], error) {
	next, err := r.kind.Fold(r.clone(st.Value), events.Recorded{Envelope: p.Envelope, Stream: r.kind.Stream, Subject: p.Subject, Seq: seq})
	if err != nil {
		return st, fmt.Errorf("fold the appended %s event: %w", p.Envelope.Type, err)
	}
	out := State[S]{ID: st.ID, Value: next, Seq: seq, Fresh: true, Head: events.Hash(p.Envelope)}
	r.cache.put(st.ID, r.clone(next), seq, out.Head)
	return out, nil
}
