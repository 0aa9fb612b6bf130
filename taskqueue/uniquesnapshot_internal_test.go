package taskqueue

import (
	"testing"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
)

// TestUniqueSnapshotBoundsColdStart: a unique key held by 150 tasks one
// after the other records 150 held events; a process starting cold folds
// at most UniqueSnapshotEvery+1 of them (counted, not timed), gets the
// holder a replay gets, and an add with the key while that holder is open
// gets the holder back.
func TestUniqueSnapshotBoundsColdStart(t *testing.T) {
	t.Parallel()
	b, ctx := snapshotTest(t)
	q := New(b.Store, Config{})
	const n = 150
	var last *trellis.Task
	for i := 0; i < n; i++ {
		task, err := q.Add(ctx, trellis.AddTaskRequest{Queue: "u", Objective: "x", UniqueKey: "k"})
		if err != nil {
			t.Fatal(err)
		}
		last = task
		if i < n-1 {
			if _, err := q.Cancel(ctx, trellis.CancelRequest{TaskID: task.TaskID}); err != nil {
				t.Fatal(err)
			}
		}
	}
	id := UniqueID("u", "k")
	recs := eventstest.Load(t, ctx, b.Store, events.StreamQueue, infraFilter(id))
	whole, err := FoldUnique(recs)
	if err != nil {
		t.Fatal(err)
	}
	st, folded := coldLoad(t, ctx, b.Store, uniqueKind, id)
	if folded > UniqueSnapshotEvery+1 || len(recs) < n {
		t.Fatalf("a cold load folded %d of the key's %d events; want at most %d", folded, len(recs), UniqueSnapshotEvery+1)
	}
	if !SameUnique(st.Value, whole) || st.Value.TaskID != last.TaskID {
		t.Fatalf("key from its snapshot %+v; replayed %+v; want held by %s", st.Value, whole, last.TaskID)
	}
	dup, err := New(b.Store, Config{}).Add(ctx, trellis.AddTaskRequest{Queue: "u", Objective: "x", UniqueKey: "k"})
	if err != nil || dup.TaskID != last.TaskID {
		t.Fatalf("add with the held key in a cold process: %+v, %v; want %s", dup, err, last.TaskID)
	}
}
