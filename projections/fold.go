package projections

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/trellis/trellis/events"
)

// FoldTo folds the events of proj's stream after its saved position up to
// sequence to into proj, with no live feed, and saves it as of to: a
// projection as of a point of the log (trellis replay --until). It skips
// events that cannot mean anything the way the Runner does, so a fold to
// a point equals a live projection that had applied the same events.
// Batched projections are saved every batch, so memory does not grow
// with the log. It returns the position saved.
func FoldTo(ctx context.Context, store *events.Store, proj Projection, to uint64, log *slog.Logger) (uint64, error) {
	if log == nil {
		log = slog.Default()
	}
	seq, err := proj.Load()
	if err != nil {
		return 0, fmt.Errorf("projection %s: load: %w", proj.Name(), err)
	}
	if to <= seq {
		return seq, nil
	}
	rp, replaying := proj.(Replayer)
	if replaying {
		if err := rp.BeginReplay(to - seq); err != nil {
			return 0, fmt.Errorf("projection %s: begin replay: %w", proj.Name(), err)
		}
	}
	batch := uint64(0)
	if b, ok := proj.(Batched); ok {
		if n, _ := b.SaveAfter(); n > 0 {
			batch = uint64(n)
		}
	}
	applied, saved := seq, seq
	err = store.Scan(ctx, proj.Stream(), events.ScanRange{From: seq + 1, To: to}, func(m events.Message) error {
		rec := m.Recorded
		if m.Bad != nil {
			// As a live feed passes it: empty, so the projection skips it.
			rec = events.Recorded{Stream: m.Stream, Subject: m.Subject, Seq: m.Seq}
		}
		if err := proj.Apply(rec); errors.Is(err, events.ErrBadEvent) {
			log.Warn("projection skipped a bad event", "projection", proj.Name(), "seq", rec.Seq, "subject", rec.Subject, "err", err)
		} else if err != nil {
			return fmt.Errorf("projection %s: apply %s #%d: %w", proj.Name(), rec.Type, rec.Seq, err)
		}
		applied = m.Seq
		if batch > 0 && applied-saved >= batch {
			if err := proj.Save(applied); err != nil {
				return fmt.Errorf("projection %s: save: %w", proj.Name(), err)
			}
			saved = applied
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	if replaying {
		rp.EndReplay()
	}
	if err := proj.Save(to); err != nil {
		return 0, fmt.Errorf("projection %s: save: %w", proj.Name(), err)
	}
	return to, nil
}
