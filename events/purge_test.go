package events_test

import (
	"context"
	"testing"
	"time"

	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
)

// TestPurgeBefore: a purge removes exactly the messages of its filter
// below its bound and counts them; again it removes nothing; a missing
// filter or bound and an unknown stream are refused.
func TestPurgeBefore(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	seqs := map[string][]uint64{}
	for i := 0; i < 3; i++ {
		for _, id := range []string{"a", "b"} {
			var last uint64
			if n := len(seqs[id]); n > 0 {
				last = seqs[id][n-1]
			}
			ack, err := b.Store.Append(ctx, "trellis.queue.q."+id+".note", env(t, "note", id), events.Expect{Filter: "trellis.queue.*." + id + ".>", LastSeq: last}, "")
			if err != nil {
				t.Fatal(err)
			}
			seqs[id] = append(seqs[id], ack.Seq)
		}
	}
	// a's first two events, not its third (the bound), none of b's.
	n, err := b.Store.PurgeBefore(ctx, events.StreamQueue, "trellis.queue.*.a.>", seqs["a"][2])
	if err != nil || n != 2 {
		t.Fatalf("purge = %d, %v; want 2", n, err)
	}
	if n, err := b.Store.PurgeBefore(ctx, events.StreamQueue, "trellis.queue.*.a.>", seqs["a"][2]); err != nil || n != 0 {
		t.Fatalf("purge again = %d, %v; want 0", n, err)
	}
	left := map[uint64]bool{}
	if err := b.Store.Scan(ctx, events.StreamQueue, events.ScanRange{}, func(m events.Message) error {
		left[m.Seq] = true
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, s := range append(seqs["b"], seqs["a"][2]) {
		if !left[s] {
			t.Errorf("#%d was removed", s)
		}
	}
	if len(left) != 4 {
		t.Errorf("%d messages left; want 4", len(left))
	}
	for _, c := range []struct {
		stream, filter string
		seq            uint64
	}{{events.StreamQueue, "", 5}, {events.StreamQueue, "trellis.queue.>", 0}, {"NO_SUCH_STREAM", "x.>", 5}} {
		if _, err := b.Store.PurgeBefore(ctx, c.stream, c.filter, c.seq); err == nil {
			t.Errorf("purge %s %q before %d: no error", c.stream, c.filter, c.seq)
		}
	}
}
