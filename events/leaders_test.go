package events_test

import (
	"context"
	"testing"
	"time"

	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
)

// TestElectionResendsSilentAttempt: an append whose attempt went to a
// stream leader that then fell silent is sent again as soon as the stream
// elects a new leader, not after AttemptTimeout (an hour here: were the
// attempt waiting it out, the append would still wait when the test's
// minute is up), and is stored once. In the chaos harness's
// isolate-leader runs the first completions came about 1.2 s after the
// election: the pools' outcome appends waited out their 2 s attempts.
// The same for a call of several events (the group commit's batch).
func TestElectionResendsSilentAttempt(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	proxy := startSilentProxy(t, b.Server.Addr().String(), "trellis.queue.", 0)
	_, store := storeVia(t, proxy.url(), events.StoreConfig{RequestTimeout: time.Hour, AttemptTimeout: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// A first append: the store learns the stream and hears elections.
	first := env(t, "added", events.NewID(time.Now()))
	if _, err := store.Append(ctx, "trellis.queue.default."+first.AggregateID+".added", first,
		events.Expect{Filter: "trellis.queue.*." + first.AggregateID + ".>"}, ""); err != nil {
		t.Fatal(err)
	}
	// elect makes the proxy swallow the next publish to the stream (set
	// before the append starts, so the append cannot slip past it), then,
	// in the background, waits until it is swallowed and announces a
	// leader of another stream and one of the queue stream. The returned
	// channel is closed when that is done; the test waits for it.
	elect := func(swallowedBefore int) <-chan struct{} {
		proxy.mu.Lock()
		proxy.drop = 1
		proxy.mu.Unlock()
		done := make(chan struct{})
		go func() {
			defer close(done)
			deadline := time.Now().Add(time.Minute)
			for proxy.swallowed() == swallowedBefore {
				if time.Now().After(deadline) {
					t.Error("no attempt reached the proxy")
					return
				}
				time.Sleep(10 * time.Millisecond)
			}
			for _, stream := range []string{events.StreamVine, events.StreamQueue} {
				if err := b.Conn.Publish("$JS.EVENT.ADVISORY.STREAM.LEADER_ELECTED."+stream, []byte(`{}`)); err != nil {
					t.Error(err)
				}
			}
		}()
		return done
	}

	e := env(t, "added", events.NewID(time.Now()))
	expect := events.Expect{Filter: "trellis.queue.*." + e.AggregateID + ".>"}
	elected := elect(0)
	a, err := store.Append(ctx, "trellis.queue.default."+e.AggregateID+".added", e, expect, "")
	<-elected
	if err != nil {
		t.Fatalf("append after a silent attempt and an election: %v", err)
	}
	recs, _, err := b.Store.Load(ctx, events.StreamQueue, expect.Filter)
	if err != nil || len(recs) != 1 || recs[0].Seq != a.Seq {
		t.Fatalf("stored %d events (%v), want 1 at #%d", len(recs), err, a.Seq)
	}

	var ps []events.Pending
	for i := 0; i < 20; i++ {
		e := env(t, "added", events.NewID(time.Now()))
		ps = append(ps, events.Pending{Subject: "trellis.queue.default." + e.AggregateID + ".added", Envelope: e,
			Expect: events.Expect{Filter: "trellis.queue.*." + e.AggregateID + ".>"}})
	}
	elected = elect(1)
	res := store.AppendAll(ctx, ps)
	<-elected
	for i, r := range res {
		if r.Err != nil {
			t.Fatalf("event %d after a silent attempt and an election: %v", i, r.Err)
		}
		recs, _, err := b.Store.Load(ctx, events.StreamQueue, ps[i].Expect.Filter)
		if err != nil || len(recs) != 1 || recs[0].Seq != r.Seq {
			t.Fatalf("event %d: stored %d times (%v), want once at #%d", i, len(recs), err, r.Seq)
		}
	}
}

// TestCloseUnsubscribesLeaderElections: the subscription to leader
// elections a store makes on its first append is gone after Close, and
// stays gone (a later append does not subscribe again); Close is
// idempotent, also after the connection closed.
func TestCloseUnsubscribesLeaderElections(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	nc, store := storeVia(t, b.Server.ClientURL(), events.StoreConfig{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	appendOne := func() {
		t.Helper()
		e := env(t, "added", events.NewID(time.Now()))
		if _, err := store.Append(ctx, "trellis.queue.default."+e.AggregateID+".added", e,
			events.Expect{Filter: "trellis.queue.*." + e.AggregateID + ".>"}, ""); err != nil {
			t.Fatal(err)
		}
	}
	appendOne()
	open := nc.NumSubscriptions()
	if err := store.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if got := nc.NumSubscriptions(); got != open-1 {
		t.Fatalf("%d subscriptions after Close, want %d (the leader elections' one gone)", got, open-1)
	}
	if err := store.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	appendOne()
	if got := nc.NumSubscriptions(); got != open-1 {
		t.Fatalf("%d subscriptions after an append after Close, want %d", got, open-1)
	}
	nc.Close()
	if err := store.Close(); err != nil {
		t.Fatalf("close after the connection closed: %v", err)
	}
}
