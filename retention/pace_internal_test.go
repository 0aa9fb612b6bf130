package retention

import (
	"context"
	"testing"
	"time"

	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
)

// TestPaceCountsOnlyRemovals: asking again for sequences removed before
// (each prune first walks the last record again) takes no slot of the
// pace; each sequence that is removed takes one, and the stream's last
// message is left.
func TestPaceCountsOnlyRemovals(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var seqs []uint64
	for i := 0; i < 6; i++ {
		ack, err := b.Store.JetStream().Publish(ctx, "trellis.queue.paced.x.note", []byte(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, ack.Sequence)
	}
	stream, err := b.Store.JetStream().Stream(ctx, events.StreamQueue)
	if err != nil {
		t.Fatal(err)
	}
	tail := seqs[len(seqs)-1]
	p := newPacer(1000)
	n, err := deleteSeqs(ctx, stream, seqs[:3], tail, p)
	if err != nil || n != 3 || p.taken != 3 {
		t.Fatalf("first walk: removed %d (%v), %d slots; want 3 and 3", n, err, p.taken)
	}
	// Again, with the rest and the tail: the three removed before take
	// no slot, the tail stays.
	n, err = deleteSeqs(ctx, stream, seqs, tail, p)
	if err != nil || n != 2 || p.taken != 5 {
		t.Fatalf("second walk: removed %d (%v), %d slots in all; want 2 and 5", n, err, p.taken)
	}
	info, err := stream.Info(ctx)
	if err != nil || info.State.Msgs != 1 || info.State.LastSeq != tail {
		t.Fatalf("the stream after the walks: %+v %v; want only its last message", info.State, err)
	}
}
