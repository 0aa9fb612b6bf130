package events_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/taskqueue"
)

// twoAggregates returns an event on an existing aggregate (checked against
// its last sequence) and the creation of a new one.
func twoAggregates(t *testing.T, b *eventstest.Bundle) (events.Pending, events.Pending) {
	t.Helper()
	ctx := context.Background()
	a := events.NewID(time.Now())
	first, err := b.Store.Append(ctx, taskqueue.Subject("at", a, "added"), env(t, "added", a), events.Expect{Filter: taskqueue.Filter(a)}, "")
	if err != nil {
		t.Fatal(err)
	}
	c := events.NewID(time.Now())
	link := events.Pending{Subject: taskqueue.Subject("at", a, "linked"), Envelope: env(t, "linked", a),
		Expect: events.Expect{Filter: taskqueue.Filter(a), LastSeq: first.Seq}}
	add := events.Pending{Subject: taskqueue.Subject("at", c, "added"), Envelope: env(t, "added", c),
		Expect: events.Expect{Filter: taskqueue.Filter(c)}}
	return link, add
}

// An atomic batch over two aggregates stores both events, each at the
// sequence reported; a stale check on either refuses the whole batch and
// stores nothing.
func TestAppendAtomicChecksEveryAggregate(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	ctx := context.Background()
	link, add := twoAggregates(t, b)
	acks, err := b.Store.AppendAtomic(ctx, []events.Pending{link, add})
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range []events.Pending{link, add} {
		got, err := b.Store.Get(ctx, events.StreamQueue, acks[i].Seq)
		if err != nil || got.ID != p.Envelope.ID {
			t.Fatalf("event %d at #%d holds %s (%v); want %s", i, acks[i].Seq, got.ID, err, p.Envelope.ID)
		}
	}

	// The second event's check is stale (its aggregate exists now): the
	// first, whose check holds, is not stored either.
	link2, _ := twoAggregates(t, b)
	stale := events.Pending{Subject: add.Subject, Envelope: env(t, "added", add.Envelope.AggregateID), Expect: add.Expect}
	if _, err := b.Store.AppendAtomic(ctx, []events.Pending{link2, stale}); !errors.Is(err, events.ErrWrongLastSequence) {
		t.Fatalf("batch with a stale second check: %v; want ErrWrongLastSequence", err)
	}
	recs, _, err := b.Store.Load(ctx, events.StreamQueue, link2.Expect.Filter)
	if err != nil || len(recs) != 1 {
		t.Fatalf("aggregate of the refused batch's first event holds %d events (%v); want only its own first", len(recs), err)
	}

	// An unchecked event rides along with a checked first one.
	link3, add3 := twoAggregates(t, b)
	add3.Expect = events.Expect{None: true}
	if _, err := b.Store.AppendAtomic(ctx, []events.Pending{link3, add3}); err != nil {
		t.Fatalf("batch with an unchecked second event: %v", err)
	}
	// The first event must carry a check (lost-ack recovery looks for it).
	if _, err := b.Store.AppendAtomic(ctx, []events.Pending{add3, link3}); err == nil {
		t.Fatal("batch whose first event has no check was accepted")
	}
}

// A batch holding a message id the stream already stores is refused whole
// with ErrDuplicateMsgID.
func TestAppendAtomicRepeatedMessageID(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	ctx := context.Background()
	link, add := twoAggregates(t, b)
	add.MsgID = "idem:at:key"
	if _, err := b.Store.AppendAtomic(ctx, []events.Pending{link, add}); err != nil {
		t.Fatal(err)
	}
	link2, add2 := twoAggregates(t, b)
	add2.MsgID = "idem:at:key"
	if _, err := b.Store.AppendAtomic(ctx, []events.Pending{link2, add2}); !errors.Is(err, events.ErrDuplicateMsgID) {
		t.Fatalf("batch repeating a stored message id: %v; want ErrDuplicateMsgID", err)
	}
	recs, _, err := b.Store.Load(ctx, events.StreamQueue, add2.Expect.Filter)
	if err != nil || len(recs) != 0 {
		t.Fatalf("refused batch stored %d events (%v)", len(recs), err)
	}
}

// A batch whose acknowledgement is lost is found stored and reported as a
// duplicate at its original sequences; nothing is stored twice.
func TestAppendAtomicLostAcknowledgement(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	proxy := eventstest.StartProxy(t, b.Server.Addr().String())
	nc, err := nats.Connect(proxy.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	store, err := events.NewStore(nc, events.StoreConfig{RequestTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := store.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	link, add := twoAggregates(t, b)
	proxy.HoldReplies(time.Second)
	acks, err := store.AppendAtomic(ctx, []events.Pending{link, add})
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range []events.Pending{link, add} {
		if !acks[i].Duplicate {
			t.Fatalf("event %d = %+v; want found stored by the batch whose ack was lost", i, acks[i])
		}
		got, err := b.Store.Get(ctx, events.StreamQueue, acks[i].Seq)
		if err != nil || got.ID != p.Envelope.ID {
			t.Fatalf("event %d reported at #%d, which holds %s (%v)", i, acks[i].Seq, got.ID, err)
		}
	}
	recs, _, err := b.Store.Load(ctx, events.StreamQueue, add.Expect.Filter)
	if err != nil || len(recs) != 1 {
		t.Fatalf("new aggregate holds %d events (%v); want 1", len(recs), err)
	}
}
