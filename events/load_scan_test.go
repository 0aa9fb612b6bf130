package events_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/taskqueue"
)

// TestLoadAsksForNoMoreThanMatch: a load never asks the server for more
// events than the aggregate holds. A direct-get batch larger than what
// matches makes the server look for the rest message by message through
// the stream's whole tail, so every load of a task cost as much as the
// stream after it, and a worker pool slowed down as its stream grew (the
// pool's rate fell with every level of bench workers); a load from after
// the aggregate's last event (a cached task caught up, as every
// heartbeat does) asks for none. The events loaded are every event, in
// order, from any sequence on.
func TestLoadAsksForNoMoreThanMatch(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	id := events.NewID(time.Now())
	var seqs []uint64
	last := uint64(0)
	for i := 0; i < 3; i++ {
		a, err := b.Store.Append(ctx, taskqueue.Subject("q", id, fmt.Sprintf("e%d", i)), env(t, fmt.Sprintf("e%d", i), id), events.Expect{Filter: taskqueue.Filter(id), LastSeq: last}, "")
		if err != nil {
			t.Fatal(err)
		}
		last = a.Seq
		seqs = append(seqs, a.Seq)
		// Other tasks' events after each of this one's.
		for j := 0; j < 50; j++ {
			other := events.NewID(time.Now())
			if _, err := b.Store.Append(ctx, taskqueue.Subject("q", other, "x"), env(t, "x", other), events.Expect{Filter: taskqueue.Filter(other)}, ""); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Watch the loads' requests: once a flush returns, the requests sent
	// before it are in the channel.
	requests := make(chan *nats.Msg, 64)
	sub, err := b.Conn.ChanSubscribe("$JS.API.DIRECT.GET."+events.StreamQueue, requests)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := b.Conn.Flush(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		from uint64
		want int
	}{{1, 3}, {seqs[0], 3}, {seqs[0] + 1, 2}, {seqs[1] + 1, 1}, {seqs[2] + 1, 0}} {
		recs, _, err := b.Store.LoadFrom(ctx, events.StreamQueue, taskqueue.Filter(id), c.from)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != c.want {
			t.Fatalf("load from #%d: %d events, want %d", c.from, len(recs), c.want)
		}
		for i, r := range recs {
			if r.Type != fmt.Sprintf("e%d", 3-c.want+i) {
				t.Fatalf("load from #%d: event %d is %s", c.from, i, r.Type)
			}
		}
		if err := b.Conn.Flush(); err != nil {
			t.Fatal(err)
		}
		var asked []int
		total := 0
		for len(requests) > 0 {
			var req struct {
				Batch int    `json:"batch"`
				Next  string `json:"next_by_subj"`
			}
			if err := json.Unmarshal((<-requests).Data, &req); err != nil {
				t.Fatal(err)
			}
			if req.Next != "" {
				asked, total = append(asked, req.Batch), total+req.Batch
			}
		}
		// A load from later on that finds nothing new asks for no event
		// at all (the server would look through the stream's tail).
		switch {
		case c.want == 0 && len(asked) > 0:
			t.Fatalf("load from #%d, after the aggregate's last event, asked the server for %v events (want none)", c.from, asked)
		case c.want > 0 && (len(asked) == 0 || total > c.want):
			t.Fatalf("load from #%d of %d events asked the server for %v events", c.from, c.want, asked)
		}
	}
}
