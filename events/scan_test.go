package events_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/taskqueue"
)

// appendTasks appends n added events (one task each) to queue q and
// returns their sequences.
func appendTasks(t *testing.T, s *events.Store, q string, n int) []uint64 {
	t.Helper()
	var seqs []uint64
	for i := 0; i < n; i++ {
		id := events.NewID(time.Now())
		a, err := s.Append(context.Background(), taskqueue.Subject(q, id, "added"), env(t, "added", id), events.Expect{Filter: taskqueue.Filter(id)}, "")
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, a.Seq)
	}
	return seqs
}

func scanSeqs(t *testing.T, s *events.Store, r events.ScanRange) []uint64 {
	t.Helper()
	var out []uint64
	err := s.Scan(context.Background(), events.StreamQueue, r, func(m events.Message) error {
		if m.Bad != nil {
			t.Fatalf("#%d bad: %v", m.Seq, m.Bad)
		}
		if m.Stored.IsZero() || m.ID == "" {
			t.Fatalf("#%d without stored time or envelope: %+v", m.Seq, m)
		}
		out = append(out, m.Seq)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestScanRangesAndGaps: Scan reads across batches, by filter, from a
// time and up to a time, and steps over deleted messages, which show as
// gaps; the stream's last sequence survives the deletion of its last
// message.
func TestScanRangesAndGaps(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	ctx := context.Background()
	first := appendTasks(t, b.Store, "a", 300) // more than one batch
	mid := time.Now()
	time.Sleep(5 * time.Millisecond) // stored times are the server's clock: keep the two halves apart
	second := appendTasks(t, b.Store, "b", 20)

	all := scanSeqs(t, b.Store, events.ScanRange{})
	if len(all) != 320 || all[0] != 1 || all[319] != 320 {
		t.Fatalf("whole scan: %d messages, %v..%v", len(all), all[0], all[len(all)-1])
	}
	if got := scanSeqs(t, b.Store, events.ScanRange{Filter: "trellis.queue.b.>"}); len(got) != 20 || got[0] != second[0] {
		t.Fatalf("filtered scan: %v", got)
	}
	if got := scanSeqs(t, b.Store, events.ScanRange{Since: mid}); len(got) != 20 || got[0] != second[0] {
		t.Fatalf("since scan: %v", got)
	}
	if got := scanSeqs(t, b.Store, events.ScanRange{Until: mid}); len(got) != 300 || got[299] != first[299] {
		t.Fatalf("until scan: %d messages", len(got))
	}
	if got := scanSeqs(t, b.Store, events.ScanRange{From: 10, To: 12}); len(got) != 3 || got[0] != 10 {
		t.Fatalf("seq range: %v", got)
	}
	cut, err := b.Store.SeqAtTime(ctx, events.StreamQueue, mid)
	if err != nil || cut != first[299] {
		t.Fatalf("SeqAtTime(mid) = %d, %v; want %d", cut, err, first[299])
	}
	if cut, err := b.Store.SeqAtTime(ctx, events.StreamQueue, time.Now().Add(time.Hour)); err != nil || cut != 320 {
		t.Fatalf("SeqAtTime(future) = %d, %v", cut, err)
	}
	if cut, err := b.Store.SeqAtTime(ctx, events.StreamQueue, time.Unix(0, 0)); err != nil || cut != 0 {
		t.Fatalf("SeqAtTime(1970) = %d, %v", cut, err)
	}

	st, err := b.Store.JetStream().Stream(ctx, events.StreamQueue)
	if err != nil {
		t.Fatal(err)
	}
	for _, seq := range []uint64{5, 6, 320} {
		if err := st.DeleteMsg(ctx, seq); err != nil {
			t.Fatal(err)
		}
	}
	got := scanSeqs(t, b.Store, events.ScanRange{})
	if len(got) != 317 || got[3] != 4 || got[4] != 7 || got[316] != 319 {
		t.Fatalf("after deletes: %d messages, around the gap %v", len(got), got[2:6])
	}
	info, err := b.Store.StreamInfo(ctx, events.StreamQueue)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.LastSeq != 320 {
		t.Fatalf("last sequence after deleting the last message: %d; want 320 (kept)", info.State.LastSeq)
	}

	// A message that is not an envelope is passed on, marked.
	if _, err := b.Conn.Request("trellis.queue.a.junk.added", []byte("not json"), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	var bad []events.Message
	err = b.Store.Scan(ctx, events.StreamQueue, events.ScanRange{From: 321}, func(m events.Message) error {
		bad = append(bad, m)
		return nil
	})
	if err != nil || len(bad) != 1 || !errors.Is(bad[0].Bad, events.ErrBadEvent) || bad[0].Subject != "trellis.queue.a.junk.added" {
		t.Fatalf("junk: %+v, %v", bad, err)
	}
	// ErrStopScan ends early without an error.
	n := 0
	err = b.Store.Scan(ctx, events.StreamQueue, events.ScanRange{}, func(events.Message) error {
		n++
		return events.ErrStopScan
	})
	if err != nil || n != 1 {
		t.Fatalf("stop: %d, %v", n, err)
	}
}
