package events_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
)

// TestInDoubtAppendResolvedByDedup: on a 3-replica stream, the same
// append sent twice at once (a client retrying while its first attempt is
// still being committed) makes the server answer the second with 10158
// "duplicate message id is in process". That answer is not a failure: the
// store waits, sends again and lets the duplicate window answer, so both
// calls report the one stored event.
func TestInDoubtAppendResolvedByDedup(t *testing.T) {
	t.Parallel()
	c := eventstest.StartCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stores []*events.Store
	for i := 0; i < 3; i++ {
		nc, err := nats.Connect(c.URL(i))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		s, err := events.NewStore(nc, events.StoreConfig{Replicas: 3, BatchMin: -1})
		if err != nil {
			t.Fatal(err)
		}
		stores = append(stores, s)
	}
	if err := stores[0].Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	const n = 60
	for i := 0; i < n; i++ {
		e := env(t, "added", events.NewID(time.Now()))
		subject := "trellis.queue.default." + e.AggregateID + ".added"
		expect := events.Expect{Filter: "trellis.queue.*." + e.AggregateID + ".>"}
		res := make([]events.Appended, len(stores))
		errs := make([]error, len(stores))
		var wg sync.WaitGroup
		for j, s := range stores {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res[j], errs[j] = s.Append(ctx, subject, e, expect, "")
			}()
		}
		wg.Wait()
		for j := range stores {
			if errs[j] != nil {
				t.Fatalf("append %d, sender %d: %v", i, j, errs[j])
			}
			if res[j].Seq != res[0].Seq {
				t.Fatalf("append %d: sender %d got #%d, sender 0 #%d", i, j, res[j].Seq, res[0].Seq)
			}
		}
		recs, _, err := stores[0].Load(ctx, events.StreamQueue, expect.Filter)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != 1 {
			t.Fatalf("append %d stored %d times", i, len(recs))
		}
	}
}
