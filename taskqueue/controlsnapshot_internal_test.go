package taskqueue

import (
	"testing"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
)

// TestControlSnapshotBoundsColdStart: a queue paused and resumed 150 times
// records every change on its controls; a process starting cold folds at
// most ControlSnapshotEvery+1 of their events (counted, not timed), gets
// the state a replay of the whole history gets, and a claim honours it.
func TestControlSnapshotBoundsColdStart(t *testing.T) {
	t.Parallel()
	b, ctx := snapshotTest(t)
	q := New(b.Store, Config{})
	const n = 150
	for i := 0; i < n; i++ {
		var err error
		if i%2 == 0 {
			_, err = q.Pause(ctx, "c", "ops", "nightly")
		} else {
			_, err = q.Resume(ctx, "c", "ops")
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	recs := eventstest.Load(t, ctx, b.Store, events.StreamQueue, ControlFilter("c"))
	whole, err := FoldControls(recs)
	if err != nil {
		t.Fatal(err)
	}
	st, folded := coldLoad(t, ctx, b.Store, controlKind, "c")
	if folded > ControlSnapshotEvery+1 || len(recs) < n {
		t.Fatalf("a cold load folded %d of the controls' %d events; want at most %d", folded, len(recs), ControlSnapshotEvery+1)
	}
	if !SameControls(st.Value, whole) || st.Value.Paused {
		t.Fatalf("controls from their snapshot %+v; replayed %+v (want resumed)", st.Value, whole)
	}
	if _, err := q.Pause(ctx, "c", "ops", "again"); err != nil {
		t.Fatal(err)
	}
	if _, err := New(b.Store, Config{}).Add(ctx, trellis.AddTaskRequest{Queue: "c", Objective: "x"}); err != nil {
		t.Fatal(err)
	}
	if got, err := New(b.Store, Config{}).Next(ctx, trellis.NextRequest{Queue: "c", Worker: "w"}); err != nil || got != nil {
		t.Fatalf("claim on the paused queue: %+v, %v; want nothing", got, err)
	}
}
