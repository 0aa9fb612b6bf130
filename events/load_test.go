package events_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/taskqueue"
)

// appendTaskEvents appends n events to task id's aggregate and returns
// their sequences.
func appendTaskEvents(t testing.TB, store *events.Store, id string, n int, last uint64) []uint64 {
	t.Helper()
	ctx := context.Background()
	var seqs []uint64
	for i := 0; i < n; i++ {
		e := events.Envelope{ID: events.NewID(time.Now()), Type: fmt.Sprintf("e%d", i), AggregateID: id, Time: time.Now().UTC(), Schema: 1, Payload: []byte(`{}`)}
		a, err := store.Append(ctx, taskqueue.Subject("q", id, e.Type), e, events.Expect{Filter: taskqueue.Filter(id), LastSeq: last}, "")
		if err != nil {
			t.Fatal(err)
		}
		last = a.Seq
		seqs = append(seqs, a.Seq)
	}
	return seqs
}

// TestLoadFromReadsExactlyTheAggregate: loads stop at the aggregate's last
// event however many events of others lie between and after its own, for
// aggregates of one event and of many.
func TestLoadFromReadsExactlyTheAggregate(t *testing.T) {
	bundle := eventstest.Start(t)
	ctx := context.Background()
	store := bundle.Store
	stream := events.StreamQueue
	for _, n := range []int{1, 2, 8, 9, 30} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			id := events.NewID(time.Now())
			var seqs []uint64
			var last uint64
			for i := 0; i < n; i++ {
				// Another aggregate's events between each of this one's.
				appendTaskEvents(t, store, events.NewID(time.Now()), 2, 0)
				s := appendTaskEvents(t, store, id, 1, last)
				last = s[0]
				seqs = append(seqs, last)
			}
			appendTaskEvents(t, store, events.NewID(time.Now()), 50, 0) // a backlog after it
			for _, from := range []uint64{0, 1, seqs[0], seqs[0] + 1, seqs[n/2], seqs[n-1], seqs[n-1] + 1} {
				recs, lastSeq, err := store.LoadFrom(ctx, stream, taskqueue.Filter(id), from)
				if err != nil {
					t.Fatal(err)
				}
				var want []uint64
				for _, s := range seqs {
					if s >= from {
						want = append(want, s)
					}
				}
				if len(recs) != len(want) {
					t.Fatalf("from %d: %d events, want %d", from, len(recs), len(want))
				}
				for i, r := range recs {
					if r.Seq != want[i] || r.AggregateID != id {
						t.Fatalf("from %d: event %d is #%d of %s, want #%d of %s", from, i, r.Seq, r.AggregateID, want[i], id)
					}
				}
				wantLast := uint64(0)
				if len(want) > 0 {
					wantLast = want[len(want)-1]
				}
				if lastSeq != wantLast {
					t.Fatalf("from %d: last %d, want %d", from, lastSeq, wantLast)
				}
			}
		})
	}
	recs, last, err := store.Load(ctx, stream, taskqueue.Filter(events.NewID(time.Now())))
	if err != nil || len(recs) != 0 || last != 0 {
		t.Fatalf("unknown aggregate: %d events, last %d, %v", len(recs), last, err)
	}
}

// BenchmarkLoadBehindBacklog: catching up a task that has nothing new,
// with 20,000 other events stored after it (a queue's backlog), and
// folding it cold. Before loads stopped at the aggregate's last event,
// both read the whole backlog.
func BenchmarkLoadBehindBacklog(b *testing.B) {
	bundle := eventstest.Start(b)
	ctx := context.Background()
	id := events.NewID(time.Now())
	seqs := appendTaskEvents(b, bundle.Store, id, 2, 0)
	for i := 0; i < 200; i++ {
		for _, r := range bundle.Store.AppendAll(ctx, backlog(100)) {
			if r.Err != nil {
				b.Fatal(r.Err)
			}
		}
	}
	b.Run("catch-up", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			recs, _, err := bundle.Store.LoadFrom(ctx, events.StreamQueue, taskqueue.Filter(id), seqs[1]+1)
			if err != nil || len(recs) != 0 {
				b.Fatalf("catch-up: %d events, %v", len(recs), err)
			}
		}
	})
	b.Run("cold", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			recs, _, err := bundle.Store.Load(ctx, events.StreamQueue, taskqueue.Filter(id))
			if err != nil || len(recs) != 2 {
				b.Fatalf("load: %d events, %v", len(recs), err)
			}
		}
	})
}

// backlog returns n task_added-like events of n new tasks.
func backlog(n int) []events.Pending {
	out := make([]events.Pending, n)
	for i := range out {
		id := events.NewID(time.Now())
		out[i] = events.Pending{
			Subject:  taskqueue.Subject("q", id, "added"),
			Envelope: events.Envelope{ID: events.NewID(time.Now()), Type: "added", AggregateID: id, Time: time.Now().UTC(), Schema: 1, Payload: []byte(`{}`)},
		}
	}
	return out
}
