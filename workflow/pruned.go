package workflow

import "github.com/trellis/trellis/events"

// Pruned is the type of a run's tombstone: `trellis prune` appends it,
// checked against the run's last event, before it removes a finished
// run's events into an archive (see retention/ and docs/retention.md). A
// run folds to nothing from it on: show answers not found, list leaves it
// out.
const Pruned = "pruned"

// PrunedPayload is the payload of Pruned: the archive the run's events
// are written to.
type PrunedPayload struct {
	Archive string `json:"archive"`
}

// FoldRun folds one event into a run (nil before its first event): the
// fold every reader of runs uses, for the retention scan. A run's
// tombstone (Pruned) folds to nil.
func FoldRun(r *Run, rec events.Recorded) (*Run, error) { return fold(r, rec) }
