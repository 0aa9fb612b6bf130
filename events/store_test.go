package events_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/taskqueue"
)

func env(t *testing.T, typ, agg string) events.Envelope {
	t.Helper()
	e, err := events.NewEnvelope(time.Now(), typ, agg, "tester", 1, map[string]string{"k": typ})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestAppendChecksWholeAggregate: the expected-last-sequence check covers
// every subject of the aggregate, so two events decided on the same state
// cannot both be appended, even on different subjects.
func TestAppendChecksWholeAggregate(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	ctx := context.Background()
	id := events.NewID(time.Now())
	filter := taskqueue.Filter(id)
	a, err := b.Store.Append(ctx, taskqueue.Subject("q", id, "added"), env(t, "added", id), events.Expect{Filter: filter}, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Store.Append(ctx, taskqueue.Subject("q", id, "completed"), env(t, "completed", id), events.Expect{Filter: filter, LastSeq: a.Seq}, ""); err != nil {
		t.Fatal(err)
	}
	_, err = b.Store.Append(ctx, taskqueue.Subject("q", id, "failed"), env(t, "failed", id), events.Expect{Filter: filter, LastSeq: a.Seq}, "")
	if !errors.Is(err, events.ErrWrongLastSequence) {
		t.Fatalf("stale append on another subject: %v; want ErrWrongLastSequence", err)
	}
	// Creating an existing aggregate again is also stale.
	_, err = b.Store.Append(ctx, taskqueue.Subject("q", id, "added"), env(t, "added", id), events.Expect{Filter: filter}, "")
	if !errors.Is(err, events.ErrWrongLastSequence) {
		t.Fatalf("second create: %v; want ErrWrongLastSequence", err)
	}
}

// TestAppendIsIdempotent: a retried append with the same event id is
// stored once and reports the original sequence.
func TestAppendIsIdempotent(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	ctx := context.Background()
	id := events.NewID(time.Now())
	e := env(t, "added", id)
	first, err := b.Store.Append(ctx, taskqueue.Subject("q", id, "added"), e, events.Expect{Filter: taskqueue.Filter(id)}, "")
	if err != nil {
		t.Fatal(err)
	}
	again, err := b.Store.Append(ctx, taskqueue.Subject("q", id, "added"), e, events.Expect{Filter: taskqueue.Filter(id)}, "")
	if err != nil {
		t.Fatalf("retried append: %v", err)
	}
	if !again.Duplicate || again.Seq != first.Seq {
		t.Fatalf("retry = %+v; want duplicate of #%d", again, first.Seq)
	}
	recs, _, err := b.Store.Load(ctx, events.StreamQueue, taskqueue.Filter(id))
	if err != nil || len(recs) != 1 {
		t.Fatalf("stored %d events (%v); want 1", len(recs), err)
	}
}

// TestLoadPagesLargeAggregates: an aggregate with more events than one
// direct-get batch loads completely and in order, and other aggregates'
// events are not mixed in.
func TestLoadPagesLargeAggregates(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	ctx := context.Background()
	id, other := events.NewID(time.Now()), events.NewID(time.Now().Add(time.Millisecond))
	var last uint64
	for i := 0; i < 1300; i++ {
		a, err := b.Store.Append(ctx, taskqueue.Subject("q", id, fmt.Sprintf("e%d", i)), env(t, fmt.Sprintf("e%d", i), id), events.Expect{Filter: taskqueue.Filter(id), LastSeq: last}, "")
		if err != nil {
			t.Fatal(err)
		}
		last = a.Seq
		if i%100 == 0 {
			if _, err := b.Store.Append(ctx, taskqueue.Subject("q", other, fmt.Sprintf("x%d", i)), env(t, "x", other), events.Expect{Filter: taskqueue.Filter(other), LastSeq: 0}, ""); err != nil && !errors.Is(err, events.ErrWrongLastSequence) {
				t.Fatal(err)
			}
		}
	}
	recs, lastSeq, err := b.Store.Load(ctx, events.StreamQueue, taskqueue.Filter(id))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1300 || lastSeq != last {
		t.Fatalf("loaded %d events up to #%d; want 1300 up to #%d", len(recs), lastSeq, last)
	}
	for i, r := range recs {
		if r.Type != fmt.Sprintf("e%d", i) || r.AggregateID != id || r.Stream != events.StreamQueue {
			t.Fatalf("event %d = %s of %s", i, r.Type, r.AggregateID)
		}
	}
	none, seq, err := b.Store.Load(ctx, events.StreamQueue, taskqueue.Filter(events.NewID(time.Now())))
	if err != nil || len(none) != 0 || seq != 0 {
		t.Fatalf("unknown aggregate: %d events, #%d, %v", len(none), seq, err)
	}
}

// TestReadAndSubscribe: Read stops at the stream's end at call time;
// Subscribe keeps delivering new events in order.
func TestReadAndSubscribe(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	ctx := context.Background()
	for i := 0; i < 10; i++ {
		id := events.NewID(time.Now())
		if _, err := b.Store.Append(ctx, taskqueue.Subject("q", id, "added"), env(t, "added", id), events.Expect{Filter: taskqueue.Filter(id)}, ""); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	if err := b.Store.Read(ctx, events.StreamQueue, "", 4, func(r events.Recorded) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n != 7 {
		t.Fatalf("read %d events from #4; want 7", n)
	}
	got := make(chan uint64, 100)
	sub, err := b.Store.Subscribe(ctx, events.StreamQueue, 9, func(r events.Recorded) error { got <- r.Seq; return nil }, func(err error) { t.Error(err) })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Stop()
	id := events.NewID(time.Now())
	if _, err := b.Store.Append(ctx, taskqueue.Subject("q", id, "added"), env(t, "added", id), events.Expect{Filter: taskqueue.Filter(id)}, ""); err != nil {
		t.Fatal(err)
	}
	for _, want := range []uint64{9, 10, 11} {
		select {
		case seq := <-got:
			if seq != want {
				t.Fatalf("subscription delivered #%d; want #%d", seq, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("subscription did not deliver #%d", want)
		}
	}
}

func TestStreamForAndTokens(t *testing.T) {
	t.Parallel()
	if s, err := events.StreamFor("trellis.queue.q.x.added"); err != nil || s.Name != events.StreamQueue {
		t.Fatalf("StreamFor = %v, %v", s, err)
	}
	if _, err := events.StreamFor("other.queue.x"); err == nil {
		t.Fatal("StreamFor accepted a foreign subject")
	}
	for tok, ok := range map[string]bool{"abc": true, "": false, "a.b": false, "a*": false, "a>": false, "a b": false} {
		if events.ValidToken(tok) != ok {
			t.Errorf("ValidToken(%q) != %v", tok, ok)
		}
	}
}
