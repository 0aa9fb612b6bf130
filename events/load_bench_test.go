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

// BenchmarkLoadAggregate: loading one task's three events, as every claim
// does (its allocations were dominated by a 512 KiB reply channel).
func BenchmarkLoadAggregate(b *testing.B) {
	bundle := eventstest.Start(b)
	ctx := context.Background()
	id := events.NewID(time.Now())
	var last uint64
	for i := 0; i < 3; i++ {
		e := events.Envelope{ID: events.NewID(time.Now()), Type: fmt.Sprintf("e%d", i), AggregateID: id, Time: time.Now().UTC(), Schema: 1, Payload: []byte(`{}`)}
		a, err := bundle.Store.Append(ctx, taskqueue.Subject("q", id, e.Type), e, events.Expect{Filter: taskqueue.Filter(id), LastSeq: last}, "")
		if err != nil {
			b.Fatal(err)
		}
		last = a.Seq
	}
	spec, err := events.StreamFor(taskqueue.Subject("q", id, "e0"))
	if err != nil {
		b.Fatal(err)
	}
	stream := spec.Name
	b.ReportAllocs()
	for b.Loop() {
		recs, _, err := bundle.Store.Load(ctx, stream, taskqueue.Filter(id))
		if err != nil || len(recs) != 3 {
			b.Fatalf("load: %d events, %v", len(recs), err)
		}
	}
}
