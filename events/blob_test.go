package events_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/taskqueue"
)

// bigEnvelope returns an event whose payload is larger than one NATS
// message (1 MiB by default).
func bigEnvelope(t *testing.T, agg string, size int) events.Envelope {
	t.Helper()
	text := strings.Repeat("0123456789abcdef", size/16)
	e, err := events.NewEnvelope(time.Now(), "imported", agg, "t", 1, map[string]string{"text": text})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// An event larger than a message is stored with its payload in the blob
// bucket; every read returns the whole payload.
func TestLargePayloadRoundTrip(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	ctx := context.Background()
	id := events.NewID(time.Now())
	e := bigEnvelope(t, id, 3<<20)
	ack, err := b.Store.Append(ctx, taskqueue.Subject("blob", id, "imported"), e, events.Expect{Filter: taskqueue.Filter(id)}, "")
	if err != nil {
		t.Fatalf("append a 3 MiB event: %v", err)
	}
	// On the stream the message is small and names its payload.
	raw, err := b.Store.JetStream().Stream(ctx, events.StreamQueue)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := raw.GetMsg(ctx, ack.Seq)
	if err != nil {
		t.Fatal(err)
	}
	var onStream events.Envelope
	if err := json.Unmarshal(msg.Data, &onStream); err != nil || onStream.PayloadRef == nil || len(msg.Data) > 4096 {
		t.Fatalf("stored message: %d bytes, ref %+v (%v); want a small envelope naming its payload", len(msg.Data), onStream.PayloadRef, err)
	}
	want := e.Payload
	check := func(what string, rec events.Recorded) {
		t.Helper()
		if !bytes.Equal(rec.Payload, want) {
			t.Fatalf("%s: payload of %d bytes; want the %d appended", what, len(rec.Payload), len(want))
		}
	}
	recs, _, err := b.Store.Load(ctx, events.StreamQueue, taskqueue.Filter(id))
	if err != nil || len(recs) != 1 {
		t.Fatalf("load: %d events, %v", len(recs), err)
	}
	check("load", recs[0])
	got, err := b.Store.Get(ctx, events.StreamQueue, ack.Seq)
	if err != nil {
		t.Fatal(err)
	}
	check("get", got)
	var read []events.Recorded
	if err := b.Store.Read(ctx, events.StreamQueue, taskqueue.Filter(id), 0, func(r events.Recorded) error { read = append(read, r); return nil }); err != nil || len(read) != 1 {
		t.Fatalf("read: %d events, %v", len(read), err)
	}
	check("read", read[0])
	fed := make(chan events.Recorded, 1)
	// The feed's callback may still be running when the test ends (Stop
	// does not wait for one in flight, and the server stops under it): its
	// errors are collected, and the first event's checked below.
	feedErrs := make(chan error, 16)
	sub, err := b.Store.Subscribe(ctx, events.StreamQueue, ack.Seq, func(r events.Recorded) error {
		select {
		case fed <- r:
		default:
		}
		return nil
	}, func(err error) {
		select {
		case feedErrs <- err:
		default:
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Stop()
	select {
	case r := <-fed:
		check("subscribe", r)
	case err := <-feedErrs:
		t.Fatalf("feed: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the feed delivered nothing")
	}
	// The same payload again is stored once (content-addressed).
	id2 := events.NewID(time.Now())
	e2 := e
	e2.ID, e2.AggregateID = events.NewID(time.Now()), id2
	if _, err := b.Store.Append(ctx, taskqueue.Subject("blob", id2, "imported"), e2, events.Expect{Filter: taskqueue.Filter(id2)}, ""); err != nil {
		t.Fatal(err)
	}
	obs, err := b.Store.JetStream().ObjectStore(ctx, events.BlobBucket)
	if err != nil {
		t.Fatal(err)
	}
	list, err := obs.List(ctx)
	if err != nil || len(list) != 1 {
		t.Fatalf("blob bucket holds %d objects (%v); want 1", len(list), err)
	}
}

// A payload whose stored bytes no longer match its digest (or are gone)
// is reported, never returned.
func TestLargePayloadTampered(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	ctx := context.Background()
	id := events.NewID(time.Now())
	e := bigEnvelope(t, id, 2<<20)
	ack, err := b.Store.Append(ctx, taskqueue.Subject("blob", id, "imported"), e, events.Expect{Filter: taskqueue.Filter(id)}, "")
	if err != nil {
		t.Fatal(err)
	}
	got, err := b.Store.Get(ctx, events.StreamQueue, ack.Seq)
	if err != nil {
		t.Fatal(err)
	}
	obs, err := b.Store.JetStream().ObjectStore(ctx, events.BlobBucket)
	if err != nil {
		t.Fatal(err)
	}
	name := got.PayloadRef.Digest
	if _, err := obs.PutBytes(ctx, name, []byte(`{"text":"forged"}`)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Store.Load(ctx, events.StreamQueue, taskqueue.Filter(id)); !errors.Is(err, events.ErrBlob) {
		t.Fatalf("load of a forged payload: %v; want ErrBlob", err)
	}
	if err := obs.Delete(ctx, name); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Store.Get(ctx, events.StreamQueue, ack.Seq); !errors.Is(err, events.ErrBlob) {
		t.Fatalf("get of a deleted payload: %v; want ErrBlob", err)
	}
}
