package audit

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
)

// checkProjections compares stream (info nil: it does not exist) with
// the positions of the running server's projections that fold it, read
// before the stream's state: a projection folds only what the log
// stored, so one that applied a sequence past the stream's end, or an
// event other than the one the stream holds there, shows state the log
// no longer has (its newest events removed, or the stream deleted and
// recreated, empty or refilled).
func checkProjections(ctx context.Context, store *events.Store, stream string, info *jetstream.StreamInfo, positions []trellis.ProjectionPosition, emit func(Finding) error) error {
	for _, p := range positions {
		if p.Stream != stream || p.Applied == 0 {
			continue
		}
		f := Finding{Kind: FindingRemoved, Stream: stream, Projection: p.Projection}
		switch {
		case info == nil:
			f.Seq, f.ToSeq = 1, p.Applied
			f.Detail = fmt.Sprintf("the server's %s projection has applied #%d of this stream, which no longer exists: it shows state the log does not have", p.Projection, p.Applied)
		case p.Applied > info.State.LastSeq:
			f.Seq, f.ToSeq = info.State.LastSeq+1, p.Applied
			f.Detail = fmt.Sprintf("the server's %s projection has applied up to #%d; the stream ends at #%d: the events it folded after that are gone (the newest events removed, or the stream deleted and recreated), and it shows state the log does not have", p.Projection, p.Applied, info.State.LastSeq)
		case p.EventID != "" && p.Applied >= info.State.FirstSeq:
			rec, err := store.Get(ctx, stream, p.Applied)
			switch {
			case errors.Is(err, events.ErrNotFound):
				// Deleted since (a fired timer, or a removal the walk
				// reports as a gap).
			case err != nil && !errors.Is(err, events.ErrBadEvent) && !errors.Is(err, events.ErrBlob):
				return err
			case err != nil || rec.ID != p.EventID:
				f.Kind, f.Seq = FindingAltered, p.Applied
				f.Detail = fmt.Sprintf("the server's %s projection applied event %s at #%d; the stream holds another message there: the stream was replaced after the projection folded it", p.Projection, p.EventID, p.Applied)
			}
		}
		if f.Detail != "" {
			if err := emit(f); err != nil {
				return err
			}
		}
	}
	return nil
}
