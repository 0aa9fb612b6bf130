package taskqueue

import (
	"context"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/command"
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
	b := eventstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	t.Cleanup(cancel)
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
	recs, _, err := b.Store.Load(ctx, events.StreamQueue, infraFilter(id))
	if err != nil {
		t.Fatal(err)
	}
	whole, err := FoldUnique(recs)
	if err != nil {
		t.Fatal(err)
	}
	folded := 0
	kind := uniqueKind
	kind.Fold = func(u *UniqueHold, rec events.Recorded) (*UniqueHold, error) {
		folded++
		return uniqueKind.Fold(u, rec)
	}
	st, err := command.New(b.Store, kind, command.Config{CacheSize: -1}).Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
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
