package taskqueue

import "github.com/trellis/trellis"

// Pruned is the tombstone `trellis prune` appends on a finished task, in
// the atomic batch of its prune record, just before it removes the task's
// events (the tombstone with them): it moves the task's last sequence, so
// a command decided on the task before the prune fails its check, and it
// tells the projections to drop the task. Apply folds it to nil: the task
// no longer exists.
const Pruned = "pruned"

// PrunedPayload is the payload of a pruned tombstone.
type PrunedPayload struct {
	// Record is the id of the prune record that removed the task.
	Record string `json:"record"`
	// Archive names the archive file that holds the task's events.
	Archive string `json:"archive"`
}

// IsFinished reports whether a task in status s can be pruned: it will
// not run again unless someone retries it.
func IsFinished(s trellis.Status) bool {
	switch s {
	case trellis.StatusDone, trellis.StatusFailed, trellis.StatusDead, trellis.StatusCancelled:
		return true
	}
	return false
}
