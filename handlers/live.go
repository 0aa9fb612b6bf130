package handlers

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/command"
	"github.com/trellis/trellis/events"
)

// liveBuffer is how many items a live feed holds for a reader that is
// behind; a reader further behind is told it lagged (and resumes from its
// positions).
const liveBuffer = 2048

// LiveItem is what a live feed delivers: an event, or the marker that
// every stream's backlog (tail, since, after) has been delivered and what
// follows is live.
type LiveItem struct {
	Event *trellis.LiveEvent
	Ready bool
}

// LiveFeed is an open live feed of the log: one ordered consumer per
// stream, filtered, delivering into one buffer. Events of one stream come
// in stream order.
type LiveFeed struct {
	req    trellis.LiveRequest
	items  chan LiveItem
	lagged chan struct{}

	mu       sync.Mutex
	start    map[string]uint64 // per stream: the last sequence before the feed's first
	scanned  map[string]uint64 // per stream: the last sequence looked at
	backlog  map[string]uint64 // per stream still replaying: the last sequence of its backlog
	isLagged bool
	ccs      []jetstream.ConsumeContext
}

// OpenLive opens a live feed (see trellis.LiveRequest). Close it when done.
func (s *Service) OpenLive(ctx context.Context, req trellis.LiveRequest) (*LiveFeed, error) {
	if err := req.Normalize(); err != nil {
		return nil, err
	}
	f := &LiveFeed{req: req, items: make(chan LiveItem, liveBuffer), lagged: make(chan struct{}),
		start: map[string]uint64{}, scanned: map[string]uint64{}, backlog: map[string]uint64{}}
	type plan struct {
		stream string
		from   uint64
	}
	var plans []plan
	for _, stream := range req.Streams {
		last, err := s.store.LastSeq(ctx, stream)
		if err != nil {
			return nil, command.StoreError("live feed", err)
		}
		from := last + 1
		switch after, ok := req.After[stream]; {
		case ok:
			from = min(after, last) + 1
		case !req.Since.IsZero():
			before, err := s.store.SeqAtTime(ctx, stream, req.Since.Add(-time.Nanosecond))
			if err != nil {
				return nil, command.StoreError("live feed", err)
			}
			from = before + 1
		case req.Tail > 0:
			from = uint64(max(int64(last)-int64(req.Tail)+1, 1))
		}
		f.start[stream], f.scanned[stream] = from-1, from-1
		if from <= last {
			f.backlog[stream] = last
		}
		plans = append(plans, plan{stream, from})
	}
	if len(f.backlog) == 0 {
		f.items <- LiveItem{Ready: true}
	}
	for _, p := range plans {
		cons, err := s.store.JetStream().OrderedConsumer(ctx, p.stream, jetstream.OrderedConsumerConfig{
			DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: p.from})
		if err != nil {
			f.Close()
			return nil, command.StoreError("live feed", fmt.Errorf("ordered consumer on %s: %w", p.stream, err))
		}
		stream := p.stream
		cc, err := cons.Consume(func(msg jetstream.Msg) { f.deliver(stream, msg) })
		if err != nil {
			f.Close()
			return nil, command.StoreError("live feed", fmt.Errorf("consume %s: %w", p.stream, err))
		}
		f.mu.Lock()
		f.ccs = append(f.ccs, cc)
		f.mu.Unlock()
	}
	return f, nil
}

// deliver filters one message into the buffer.
func (f *LiveFeed) deliver(stream string, msg jetstream.Msg) {
	meta, err := msg.Metadata()
	if err != nil {
		return
	}
	seq := meta.Sequence.Stream
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.isLagged || seq <= f.scanned[stream] {
		return
	}
	if rec, err := events.Decode(stream, msg.Subject(), seq, msg.Data()); err == nil && f.matches(rec) {
		f.push(LiveItem{Event: f.event(rec)})
	}
	f.scanned[stream] = seq
	if last, ok := f.backlog[stream]; ok && (seq >= last || meta.NumPending == 0) {
		delete(f.backlog, stream)
		if len(f.backlog) == 0 {
			f.push(LiveItem{Ready: true})
		}
	}
}

// push adds an item without blocking the consumer; a full buffer ends the
// feed as lagged. Called with mu held.
func (f *LiveFeed) push(it LiveItem) {
	if f.isLagged {
		return
	}
	select {
	case f.items <- it:
	default:
		f.isLagged = true
		close(f.lagged)
	}
}

// matches applies the request's filters.
func (f *LiveFeed) matches(rec events.Recorded) bool {
	r := f.req
	return rec.Type != "" && (len(r.Types) == 0 || slices.Contains(r.Types, rec.Type)) &&
		(r.Actor == "" || rec.Actor == r.Actor) && (r.Aggregate == "" || rec.AggregateID == r.Aggregate)
}

// event converts a recorded event for the feed.
func (f *LiveFeed) event(rec events.Recorded) *trellis.LiveEvent {
	e := &trellis.LiveEvent{Stream: rec.Stream, Seq: rec.Seq, Subject: rec.Subject, ID: rec.ID, Type: rec.Type,
		AggregateID: rec.AggregateID, Time: rec.Time, Actor: rec.Actor, PayloadBytes: len(rec.Payload)}
	switch {
	case rec.PayloadRef != nil:
		e.PayloadBytes, e.PayloadOmitted = int(rec.PayloadRef.Size), true
	case !f.req.Payloads || len(rec.Payload) > trellis.MaxLivePayloadBytes:
		e.PayloadOmitted = len(rec.Payload) > 0
	default:
		e.Payload = rec.Payload
	}
	return e
}

// Items delivers the feed: events, and once the Ready marker.
func (f *LiveFeed) Items() <-chan LiveItem { return f.items }

// Lagged is closed when the reader fell more than the buffer behind; the
// feed delivers nothing more and the reader should open a new one after
// the positions of the last events it received.
func (f *LiveFeed) Lagged() <-chan struct{} { return f.lagged }

// Start returns, per stream, the last sequence before the feed's first.
func (f *LiveFeed) Start() map[string]uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]uint64, len(f.start))
	for k, v := range f.start {
		out[k] = v
	}
	return out
}

// Positions returns, per stream, the last sequence the feed has looked at,
// and true, when every event matching up to there has been taken from
// Items (a reader that has written everything it took may resume after
// these positions without missing anything); false while items wait.
func (f *LiveFeed) Positions() (map[string]uint64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.items) > 0 || f.isLagged {
		return nil, false
	}
	out := make(map[string]uint64, len(f.scanned))
	for k, v := range f.scanned {
		out[k] = v
	}
	return out, true
}

// Close stops the feed's consumers.
func (f *LiveFeed) Close() {
	f.mu.Lock()
	ccs := f.ccs
	f.ccs = nil
	f.mu.Unlock()
	for _, cc := range ccs {
		cc.Stop()
	}
}
