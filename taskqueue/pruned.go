package taskqueue

import (
	"strings"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
)

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

// PrunedTasks returns the ids of the tasks a prune record removed (nil
// when rec is not a prune record). A projection drops them on the record
// as well as on their tombstones: one that reads the log after the prune
// purged the tombstones still learns of it.
func PrunedTasks(rec events.Recorded) []string {
	if rec.Type != events.PrunedType || !strings.HasPrefix(rec.Subject, events.RetentionSubjectPrefix) {
		return nil
	}
	var p events.PrunedPayload
	if rec.DecodePayload(&p) != nil {
		return nil
	}
	var ids []string
	for _, agg := range p.Aggregates {
		if _, id, ok := strings.Cut(agg, "/"); ok && trellis.ValidateTaskID("task_id", id) == nil {
			ids = append(ids, id)
		}
	}
	return ids
}
