package events

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Read calls fn for every event of stream matching filter (all subjects when
// empty) from sequence from (1 when 0) up to the stream's last sequence at
// the time of the call, in order. It stops at the first error fn returns.
// A message that is not an envelope is passed on empty (no type, no
// aggregate), so readers can skip it.
func (s *Store) Read(ctx context.Context, stream, filter string, from uint64, fn func(Recorded) error) error {
	last, err := s.LastSeq(ctx, stream)
	if err != nil {
		return err
	}
	if from == 0 {
		from = 1
	}
	if last < from {
		return nil
	}
	cons, err := s.orderedConsumer(ctx, stream, filter, from)
	if err != nil {
		return err
	}
	for {
		batch, err := cons.Fetch(256, jetstream.FetchMaxWait(s.cfg.RequestTimeout))
		if err != nil {
			return fmt.Errorf("read %s: %w", stream, err)
		}
		n := 0
		for msg := range batch.Messages() {
			n++
			meta, err := msg.Metadata()
			if err != nil {
				return fmt.Errorf("read %s: %w", stream, err)
			}
			rec, err := Decode(stream, msg.Subject(), meta.Sequence.Stream, msg.Data())
			if err != nil {
				// Not an envelope: passed on empty (see Subscribe).
				rec = Recorded{Stream: stream, Subject: msg.Subject(), Seq: meta.Sequence.Stream}
			} else if err := s.Resolve(ctx, &rec); err != nil {
				return err
			}
			if rec.Seq > last {
				return nil
			}
			if err := fn(rec); err != nil {
				return err
			}
			if rec.Seq == last || meta.NumPending == 0 {
				return nil
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) {
			return fmt.Errorf("read %s: %w", stream, err)
		}
		if n == 0 {
			return nil
		}
	}
}

func (s *Store) orderedConsumer(ctx context.Context, stream, filter string, from uint64) (jetstream.Consumer, error) {
	cfg := jetstream.OrderedConsumerConfig{
		DeliverPolicy: jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:   from,
	}
	if filter != "" {
		cfg.FilterSubjects = []string{filter}
	}
	cons, err := s.js.OrderedConsumer(ctx, stream, cfg)
	if err != nil {
		return nil, fmt.Errorf("ordered consumer on %s: %w", stream, err)
	}
	return cons, nil
}

// Subscription is a live feed of a stream started by Subscribe.
type Subscription struct {
	cc jetstream.ConsumeContext
}

// Stop ends the feed and waits (up to 5 s) until it has closed.
func (s *Subscription) Stop() {
	s.cc.Stop()
	select {
	case <-s.cc.Closed():
	case <-time.After(5 * time.Second):
	}
}

// Subscribe delivers every event of stream from sequence from (1 when 0) on,
// in order, to fn, and keeps delivering new events until Stop. The feed
// survives reconnects (an ordered consumer recreates itself). A decode
// error or an error from fn is passed to onErr and the event is skipped by
// the feed: fn must make its own state durable before returning.
func (s *Store) Subscribe(ctx context.Context, stream string, from uint64, fn func(Recorded) error, onErr func(error)) (*Subscription, error) {
	if from == 0 {
		from = 1
	}
	cons, err := s.orderedConsumer(ctx, stream, "", from)
	if err != nil {
		return nil, err
	}
	cc, err := cons.Consume(func(msg jetstream.Msg) {
		meta, err := msg.Metadata()
		if err != nil {
			onErr(fmt.Errorf("subscribe %s: %w", stream, err))
			return
		}
		rec, err := Decode(stream, msg.Subject(), meta.Sequence.Stream, msg.Data())
		if err != nil {
			// Not an envelope (published from outside Trellis): report it
			// and pass it on empty, so readers still move past its sequence.
			onErr(fmt.Errorf("%w: %w", ErrBadEvent, err))
			rec = Recorded{Stream: stream, Subject: msg.Subject(), Seq: meta.Sequence.Stream}
		} else if err := s.resolveFeed(&rec); err != nil {
			// A payload that cannot be fetched back: the event cannot be
			// folded; report it as bad rather than stop every reader.
			onErr(fmt.Errorf("%w: %w", ErrBadEvent, err))
			rec = Recorded{Stream: stream, Subject: msg.Subject(), Seq: meta.Sequence.Stream}
		}
		if err := fn(rec); err != nil {
			onErr(err)
		}
	}, jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
		onErr(fmt.Errorf("subscribe %s: %w", stream, err))
	}))
	if err != nil {
		return nil, fmt.Errorf("subscribe %s: %w", stream, err)
	}
	return &Subscription{cc: cc}, nil
}

// resolveFeed resolves a large payload for a live feed, retrying while the
// server cannot answer (a feed has no caller to report to).
func (s *Store) resolveFeed(rec *Recorded) error {
	if rec.PayloadRef == nil {
		return nil
	}
	for attempt := 0; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.RequestTimeout)
		err := s.Resolve(ctx, rec)
		cancel()
		if err == nil || errors.Is(err, ErrBlob) || attempt >= 10 {
			return err
		}
		time.Sleep(time.Duration(attempt+1) * 100 * time.Millisecond)
	}
}

// HeaderRecord is a message read without its payload.
type HeaderRecord struct {
	Subject string
	Seq     uint64
	Header  nats.Header
}

// LastHeadersPerSubject calls fn with the headers of the last message of
// every subject matching filters (a "last value per subject" read that
// leaves the payloads on the server), in stream order.
func (s *Store) LastHeadersPerSubject(ctx context.Context, stream string, filters []string, fn func(HeaderRecord) error) error {
	cons, err := s.js.OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{
		DeliverPolicy:  jetstream.DeliverLastPerSubjectPolicy,
		FilterSubjects: filters,
		HeadersOnly:    true,
	})
	if err != nil {
		return fmt.Errorf("last per subject on %s: %w", stream, err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return fmt.Errorf("last per subject on %s: %w", stream, err)
	}
	remaining := info.NumPending
	for remaining > 0 {
		batch, err := cons.Fetch(int(min(remaining, 512)), jetstream.FetchMaxWait(s.cfg.RequestTimeout))
		if err != nil {
			return fmt.Errorf("last per subject on %s: %w", stream, err)
		}
		n := 0
		for msg := range batch.Messages() {
			n++
			meta, err := msg.Metadata()
			if err != nil {
				return err
			}
			if err := fn(HeaderRecord{Subject: msg.Subject(), Seq: meta.Sequence.Stream, Header: msg.Headers()}); err != nil {
				return err
			}
			remaining = meta.NumPending
		}
		if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) {
			return fmt.Errorf("last per subject on %s: %w", stream, err)
		}
		if n == 0 {
			break
		}
	}
	return nil
}
