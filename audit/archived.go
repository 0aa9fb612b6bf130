package audit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
)

// archivedAt refuses a question about the log as of t when a prune has cut
// the log after t: the events stored before its cut may be in its archives
// rather than in the log (finished tasks, gates' histories), so a board or
// a replay rebuilt from the log alone would answer wrongly. The error
// names the latest cut, from which on the log answers, and the archives,
// which answer for earlier times (docs/retention.md).
func archivedAt(ctx context.Context, store *events.Store, t time.Time, what string) error {
	recs, _, err := store.Load(ctx, events.StreamQueue, events.RetentionFilter)
	if errors.Is(err, events.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: read the prune records: %w", what, err)
	}
	var latest time.Time
	var archive string
	n := 0
	for _, r := range recs {
		var p events.PrunedPayload
		if r.Type != events.PrunedType || r.DecodePayload(&p) != nil {
			continue
		}
		cut, err := time.Parse(time.RFC3339Nano, p.Cut)
		if err != nil {
			continue
		}
		n++
		if cut.After(latest) {
			latest, archive = cut, p.Archive
		}
	}
	if latest.IsZero() || !t.Before(latest) {
		return nil
	}
	return trellis.Errorf(trellis.CodeNotFound,
		"%s %s is before %s, the cut of the last prune: events stored before it are archived (%d archive(s), the latest %s in the prune's archive directory), so the log alone cannot answer; ask for %s or later, or read the archives (see docs/retention.md)",
		what, t.UTC().Format(time.RFC3339Nano), latest.UTC().Format(time.RFC3339Nano), n, archive, latest.UTC().Format(time.RFC3339Nano))
}
