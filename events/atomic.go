package events

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
)

// ErrDuplicateMsgID reports an atomic batch refused because one of its
// messages carries a message id (an idempotency key's) that the stream
// already holds within its duplicate window: nothing was stored.
var ErrDuplicateMsgID = errors.New("a message id of the batch is already stored")

// AppendAtomic appends events of SEVERAL aggregates all or nothing, as one
// atomic batch on one stream: unlike AppendChain, every event keeps its own
// concurrency check (ps[i].Expect; Expect.None appends that event without
// one), so a command that must change two aggregates together (a unique
// key's hold and the task it admits, a claim and the concurrency slot it
// takes) either changes both or neither. It returns each event's sequence.
//
// A stale check anywhere fails the whole batch with ErrWrongLastSequence; a
// message id the stream holds fails it with ErrDuplicateMsgID. When the
// acknowledgement is lost, the batch is looked up by its first event's id
// (among the events of the first event's aggregate after its expected
// sequence) and reported as stored (Duplicate) if it is there, else sent
// again until ctx ends. The first event must therefore carry a check
// filter (its aggregate). A single event is an ordinary checked append.
func (s *Store) AppendAtomic(ctx context.Context, ps []Pending) ([]Appended, error) {
	return s.appendBatch(ctx, ps, "an atomic batch")
}

// appendBatch appends ps as one atomic batch on one stream, each event with
// its own check (see AppendAtomic); what names the batch in errors.
func (s *Store) appendBatch(ctx context.Context, ps []Pending, what string) ([]Appended, error) {
	if len(ps) == 0 {
		return nil, nil
	}
	if len(ps) == 1 {
		a, err := s.AppendWithHeaders(ctx, ps[0].Subject, ps[0].Envelope, ps[0].Expect, ps[0].MsgID, ps[0].Header)
		if err != nil {
			return nil, err
		}
		return []Appended{a}, nil
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.cfg.AppendTimeout)
		defer cancel()
	}
	stream := streamOf(ps[0].Subject)
	if tr, ok := s.streamTraits(stream); !ok || !tr.atomic {
		return nil, fmt.Errorf("append %s: %s of %d events needs a stream with atomic batches", ps[0].Subject, what, len(ps))
	}
	if len(ps) > s.cfg.BatchMax {
		return nil, fmt.Errorf("append %s: %s of %d events is over the batch bound of %d", ps[0].Subject, what, len(ps), s.cfg.BatchMax)
	}
	if ps[0].Expect.None {
		return nil, fmt.Errorf("append %s: the first event of %s needs a check (it finds a batch whose acknowledgement was lost)", ps[0].Subject, what)
	}
	msgs := make([]*nats.Msg, len(ps))
	var first *request
	for i, p := range ps {
		if streamOf(p.Subject) != stream {
			return nil, fmt.Errorf("append %s: %s must stay on stream %s", p.Subject, what, stream)
		}
		r, err := s.newRequest(ctx, p)
		if err != nil {
			return nil, err
		}
		if i == 0 {
			first = r
		}
		msgs[i] = r.message()
	}
	out := make([]Appended, len(ps))
	for unanswered := false; ; unanswered = true {
		actx, cancel := s.attemptContext(ctx, stream)
		last, err := PublishBatch(actx, s.nc, msgs)
		err = attemptErr(actx, err)
		cancel()
		if err == nil {
			s.stats.batches.Add(1)
			s.stats.batchedEvents.Add(uint64(len(ps)))
			for i := range out {
				out[i] = Appended{Seq: last - uint64(len(ps)-1-i)}
			}
			return out, nil
		}
		var be *BatchError
		refused := errors.As(err, &be)
		// Refused or unanswered after an unanswered attempt: that attempt
		// may be stored (its own message ids would then refuse this one as
		// repeated). A first attempt has nothing to find.
		if unanswered {
			if seq, ok := s.findOwn(ctx, first.p.Subject, first.p.Expect, first.p.Envelope.ID, true); ok {
				for i := range out {
					out[i] = Appended{Seq: seq + uint64(i), Duplicate: true}
				}
				return out, nil
			}
		}
		switch {
		case refused && jsClassOf(be) == jsWrongLastSeq:
			return nil, fmt.Errorf("append %s: %w", ps[0].Subject, ErrWrongLastSequence)
		case refused && jsClassOf(be) == jsBatchDuplicate:
			return nil, fmt.Errorf("append %s: %w: %v", ps[0].Subject, ErrDuplicateMsgID, err)
		case refused && jsClassOf(be) == jsInDoubt:
			// An earlier attempt is still being committed: send it again
			// after a pause; the message ids answer for a stored one.
		case refused:
			return nil, fmt.Errorf("append %s: %w", ps[0].Subject, err)
		case ctx.Err() != nil:
			return nil, fmt.Errorf("append %s: %w (last error: %v)", ps[0].Subject, ctx.Err(), err)
		}
		// No answer and not stored: send the same batch again (its message
		// ids make a batch stored meanwhile a repeat, found above).
		t := time.NewTimer(100 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("append %s: %w (last error: %v)", ps[0].Subject, ctx.Err(), err)
		case <-t.C:
		}
	}
}
