package events

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// AppendChain appends several events of ONE aggregate, all or nothing, as
// one atomic batch: the first carries the aggregate's check (ps[0].Expect)
// and the rest follow it (their Expect is ignored), since nothing can come
// between the events of an atomic batch. It returns each event's sequence.
// A stale check fails the whole chain with ErrWrongLastSequence; when the
// acknowledgement is lost, the chain is looked up by its first event's id
// and reported as stored (Duplicate) if it is there. A single event is an
// ordinary checked append.
func (s *Store) AppendChain(ctx context.Context, ps []Pending) ([]Appended, error) {
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
	if tr, ok := s.streamTraits(streamOf(ps[0].Subject)); !ok || !tr.atomic {
		return nil, fmt.Errorf("append %s: a chain of %d events needs a stream with atomic batches", ps[0].Subject, len(ps))
	}
	if len(ps) > s.cfg.BatchMax {
		return nil, fmt.Errorf("append %s: a chain of %d events is over the batch bound of %d", ps[0].Subject, len(ps), s.cfg.BatchMax)
	}
	msgs := make([]*nats.Msg, len(ps))
	var first *request
	for i, p := range ps {
		if i > 0 {
			p.Expect = Expect{None: true}
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
	for {
		actx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
		last, err := PublishBatch(actx, s.nc, msgs)
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
		stale := refused && (be.ErrCode == int(jetstream.JSErrCodeStreamWrongLastSequence) || be.ErrCode == int(jetstream.JSErrCodeStreamWrongLastSequenceConstant))
		// Stale, repeated or unanswered: an earlier attempt may be stored.
		if seq, ok := s.findOwn(ctx, first.p.Subject, first.p.Expect, first.p.Envelope.ID); ok {
			for i := range out {
				out[i] = Appended{Seq: seq + uint64(i), Duplicate: true}
			}
			return out, nil
		}
		switch {
		case stale:
			return nil, fmt.Errorf("append %s: %w", ps[0].Subject, ErrWrongLastSequence)
		case refused:
			return nil, fmt.Errorf("append %s: %w", ps[0].Subject, err)
		case ctx.Err() != nil:
			return nil, fmt.Errorf("append %s: %w (last error: %v)", ps[0].Subject, ctx.Err(), err)
		}
		// No answer and not stored: send the same chain again (its
		// message ids make a chain stored meanwhile a duplicate).
		t := time.NewTimer(100 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("append %s: %w (last error: %v)", ps[0].Subject, ctx.Err(), err)
		case <-t.C:
		}
	}
}

func streamOf(subject string) string {
	spec, err := StreamFor(subject)
	if err != nil {
		return ""
	}
	return spec.Name
}
