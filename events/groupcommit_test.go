package events_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/taskqueue"
)

// fresh returns n pending creations of new aggregates on the queue stream.
func fresh(t *testing.T, n int) []events.Pending {
	t.Helper()
	ps := make([]events.Pending, n)
	for i := range ps {
		id := events.NewID(time.Now())
		ps[i] = events.Pending{Subject: taskqueue.Subject("gc", id, "added"), Envelope: env(t, "added", id), Expect: events.Expect{Filter: taskqueue.Filter(id)}}
	}
	return ps
}

// checkStored asserts each result is stored at the sequence that holds
// exactly its event, once.
func checkStored(t *testing.T, b *eventstest.Bundle, ps []events.Pending, res []events.AppendResult) {
	t.Helper()
	ctx := context.Background()
	for i, r := range res {
		if r.Err != nil {
			t.Fatalf("event %d: %v", i, r.Err)
		}
		got, err := b.Store.Get(ctx, events.StreamQueue, r.Seq)
		if err != nil || got.ID != ps[i].Envelope.ID {
			t.Fatalf("event %d reported at #%d, which holds %s (%v); want %s", i, r.Seq, got.ID, err, ps[i].Envelope.ID)
		}
		recs, _, err := b.Store.Load(ctx, events.StreamQueue, ps[i].Expect.Filter)
		if err != nil || len(recs) != 1 {
			t.Fatalf("aggregate of event %d holds %d events (%v); want 1", i, len(recs), err)
		}
	}
}

// Appends waiting together are committed as one atomic batch, each at its
// own sequence; on a durable server (fsync on every write), so the
// coalesced sync path runs.
func TestGroupCommitBatchesWaitingAppends(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t, eventstest.Options{Durable: true})
	ps := fresh(t, 40)
	res := b.Store.AppendAll(context.Background(), ps)
	checkStored(t, b, ps, res)
	if st := b.Store.GroupCommitStats(); st.Batches != 1 || st.BatchedEvents != 40 || st.Fallbacks != 0 {
		t.Fatalf("stats = %+v; want one batch of 40", st)
	}
	// Below the batch minimum the events go one by one.
	few := fresh(t, events.DefaultBatchMin(1)-1)
	checkStored(t, b, few, b.Store.AppendAll(context.Background(), few))
	if st := b.Store.GroupCommitStats(); st.Batches != 1 || st.Singles != uint64(len(few)) {
		t.Fatalf("stats = %+v; want %d singles", st, len(few))
	}
}

// One stale event in a group fails alone; its neighbours are stored.
func TestGroupCommitStaleEventFailsAlone(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	ctx := context.Background()
	existing := fresh(t, 1)
	if r := b.Store.AppendAll(ctx, existing); r[0].Err != nil {
		t.Fatal(r[0].Err)
	}
	// A second creation of the existing aggregate is stale.
	id := existing[0].Envelope.AggregateID
	stale := events.Pending{Subject: taskqueue.Subject("gc", id, "claimed"), Envelope: env(t, "claimed", id), Expect: events.Expect{Filter: taskqueue.Filter(id)}}
	ps := append(fresh(t, 20), stale)
	ps = append(ps, fresh(t, 10)...)
	res := b.Store.AppendAll(ctx, ps)
	if !errors.Is(res[20].Err, events.ErrWrongLastSequence) {
		t.Fatalf("stale event: %v; want ErrWrongLastSequence", res[20].Err)
	}
	others := append(append([]events.Pending{}, ps[:20]...), ps[21:]...)
	otherRes := append(append([]events.AppendResult{}, res[:20]...), res[21:]...)
	checkStored(t, b, others, otherRes)
	if st := b.Store.GroupCommitStats(); st.Fallbacks != 1 {
		t.Fatalf("stats = %+v; want the refused batch counted", st)
	}
	// Sent again one by one, the call's other events keep its order.
	for i := 1; i < len(otherRes); i++ {
		if otherRes[i].Seq <= otherRes[i-1].Seq {
			t.Fatalf("after the refused batch, event %d was stored at #%d, before event %d at #%d", i, otherRes[i].Seq, i-1, otherRes[i-1].Seq)
		}
	}
}

// Two events of one aggregate never share a batch (the second would fail
// its check inside it and refuse the whole batch): the second waits for
// the next round and fails alone.
func TestGroupCommitOneEventPerAggregateInABatch(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	ps := fresh(t, 20)
	id := ps[0].Envelope.AggregateID
	twin := events.Pending{Subject: taskqueue.Subject("gc", id, "claimed"), Envelope: env(t, "claimed", id), Expect: events.Expect{Filter: taskqueue.Filter(id)}}
	res := b.Store.AppendAll(context.Background(), append(ps, twin))
	checkStored(t, b, ps, res[:20])
	if !errors.Is(res[20].Err, events.ErrWrongLastSequence) {
		t.Fatalf("second event of one aggregate: %v; want ErrWrongLastSequence", res[20].Err)
	}
	if st := b.Store.GroupCommitStats(); st.Batches != 1 || st.Fallbacks != 0 {
		t.Fatalf("stats = %+v; want one clean batch", st)
	}
}

// A message id already stored (an idempotency key repeated) is reported as
// a duplicate of the original; the rest of its group is stored.
func TestGroupCommitRepeatedMessageID(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	ctx := context.Background()
	first := fresh(t, 1)
	first[0].MsgID = "idem:gc:key"
	orig := b.Store.AppendAll(ctx, first)
	if orig[0].Err != nil {
		t.Fatal(orig[0].Err)
	}
	again := fresh(t, 1)
	again[0].MsgID = "idem:gc:key"
	ps := append(fresh(t, 15), again[0])
	res := b.Store.AppendAll(ctx, ps)
	if res[15].Err != nil || !res[15].Duplicate || res[15].Seq != orig[0].Seq {
		t.Fatalf("repeated message id = %+v; want a duplicate of #%d", res[15], orig[0].Seq)
	}
	checkStored(t, b, ps[:15], res[:15])
}

// A batch whose acknowledgement is lost (held past the request timeout
// while the server commits it) is found stored: every event reports its
// original sequence as a duplicate and the stream holds each once.
func TestGroupCommitLostAcknowledgement(t *testing.T) {
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
	ps := fresh(t, 30)
	proxy.HoldReplies(time.Second)
	res := store.AppendAll(ctx, ps)
	checkStored(t, b, ps, res)
	for i, r := range res {
		if !r.Duplicate {
			t.Fatalf("event %d = %+v; want found stored by the batch whose ack was lost", i, r)
		}
	}
	if st := store.GroupCommitStats(); st.Fallbacks != 1 || st.Batches != 0 {
		t.Fatalf("stats = %+v; want one batch whose ack was lost", st)
	}
}

// Many concurrent appenders on a durable server: every event is stored
// exactly once at the sequence reported, whatever mix of batches and
// single writes the committer chose.
func TestGroupCommitConcurrentAppenders(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t, eventstest.Options{Durable: true})
	ctx := context.Background()
	const workers, each = 32, 10
	var mu sync.Mutex
	var all []events.Pending
	var results []events.AppendResult
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				p := fresh(t, 1)
				a, err := b.Store.Append(ctx, p[0].Subject, p[0].Envelope, p[0].Expect, "")
				mu.Lock()
				all = append(all, p[0])
				results = append(results, events.AppendResult{Appended: a, Err: err})
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	checkStored(t, b, all, results)
	st := b.Store.GroupCommitStats()
	if st.BatchedEvents+st.Singles != workers*each {
		t.Fatalf("stats = %+v; want %d events committed", st, workers*each)
	}
	t.Logf("group commit: %+v", st)
}

// An event whose payload is over the store's bound is refused up front;
// its group is unaffected.
func TestGroupCommitOversizedEvent(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	store, err := events.NewStore(b.Conn, events.StoreConfig{MaxPayloadBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	ps := fresh(t, 3)
	big, err := events.NewEnvelope(time.Now(), "added", ps[1].Envelope.AggregateID, "t", 1, map[string]string{"x": string(make([]byte, 2<<20))})
	if err != nil {
		t.Fatal(err)
	}
	ps[1].Envelope = big
	res := store.AppendAll(context.Background(), ps)
	if !errors.Is(res[1].Err, events.ErrPayloadTooLarge) {
		t.Fatalf("oversized: %v; want ErrPayloadTooLarge", res[1].Err)
	}
	checkStored(t, b, []events.Pending{ps[0], ps[2]}, []events.AppendResult{res[0], res[2]})
}

// The events of one AppendAll call are stored in the call's order, sent
// one by one (below the batch minimum, several singles may be in flight)
// or batched.
func TestGroupCommitKeepsCallOrder(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t, eventstest.Options{})
	for _, n := range []int{events.DefaultBatchMin(1) - 1, 40} {
		for round := 0; round < 20; round++ {
			ps := fresh(t, n)
			res := b.Store.AppendAll(context.Background(), ps)
			checkStored(t, b, ps, res)
			for i := 1; i < len(res); i++ {
				if res[i].Seq <= res[i-1].Seq {
					t.Fatalf("%d events: event %d stored at #%d, before event %d at #%d", n, i, res[i].Seq, i-1, res[i-1].Seq)
				}
			}
		}
	}
}
