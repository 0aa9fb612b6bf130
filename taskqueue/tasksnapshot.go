package taskqueue

import (
	"encoding/json"
	"fmt"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
)

// An open task's snapshot (trellis.queue.<queue>.<task id>.snapshot) is
// appended by `trellis prune` (see retention/), checked against the task's
// last event, before it cuts the task's events between its last dispatch
// and the snapshot: the dispatch stays (the queue's claim consumer delivers
// it, a worker pool's lease holds it), the events after it (a claim, an
// agent's heartbeats, dependants linked) go to the archive. Apply folds a
// snapshot to the state it carries.

// TaskSnapshotSubject is the subject of a snapshot of task id in queue.
func TaskSnapshotSubject(queue, id string) string { return Subject(queue, id, Snapshot) }

// taskFromSnapshot is the task a snapshot event carries.
func taskFromSnapshot(rec events.Recorded) (*trellis.Task, error) {
	var p SnapshotPayload
	if err := rec.DecodePayload(&p); err != nil {
		return nil, err
	}
	if p.Task == nil || p.Task.TaskID != rec.AggregateID {
		return nil, fmt.Errorf("snapshot %s carries no state of task %s: %w", rec.ID, rec.AggregateID, events.ErrBadEvent)
	}
	return p.Task.Clone(), nil
}

// SameTask reports whether two task states are equal as the log records
// them.
func SameTask(a, b *trellis.Task) bool {
	x, errA := json.Marshal(a)
	y, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(x) == string(y)
}
