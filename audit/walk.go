package audit

import (
	"context"
	"time"

	"github.com/trellis/trellis/events"
)

// Export and verify read the log the same way: a window of each stream
// (from the first sequence stored at or after a time, up to a last
// sequence) in order, seeing each message it holds and each run of
// sequences it no longer holds (deleted messages, timers that fired).

// firstSeqSince is the first sequence stream stored at or after since (1
// when since is zero).
func firstSeqSince(ctx context.Context, store *events.Store, stream string, since time.Time) (uint64, error) {
	if since.IsZero() {
		return 1, nil
	}
	cut, err := store.SeqAtTime(ctx, stream, since.Add(-time.Nanosecond))
	if err != nil {
		return 0, err
	}
	return cut + 1, nil
}

// walkWindow reads stream's messages from..to in order: msg gets each one
// the stream holds, gap each run of sequences within from..to it does
// not hold (before, between and after them).
func walkWindow(ctx context.Context, store *events.Store, stream string, from, to uint64, msg func(events.Message) error, gap func(from, to uint64) error) error {
	if to < from {
		return nil
	}
	expect := from
	err := store.Scan(ctx, stream, events.ScanRange{From: from, To: to}, func(m events.Message) error {
		if m.Seq > expect {
			if err := gap(expect, m.Seq-1); err != nil {
				return err
			}
		}
		expect = m.Seq + 1
		return msg(m)
	})
	if err != nil {
		return err
	}
	if expect <= to {
		return gap(expect, to)
	}
	return nil
}
