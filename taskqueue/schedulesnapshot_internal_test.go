package taskqueue

import (
	"context"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
)

// TestScheduleSnapshotBoundsColdStart: a schedule records two events per
// tick for as long as it runs; with a snapshot every 4 events, after 7
// ticks a process starting cold folds at most 2*4+3 of its events
// (counted, not timed; a snapshot whose append lost a race to the next
// tick is appended at the tick after), gets the state a replay of the whole history gets, and the
// schedule goes on firing from it (the next tick chains to the snapshot
// and adds its task).
func TestScheduleSnapshotBoundsColdStart(t *testing.T) {
	t.Parallel()
	b, ctx := snapshotTest(t)
	const every = 4
	q := New(b.Store, Config{ScheduleSnapshotEvery: every})
	r, err := q.StartReactor(context.Background(), ReactorConfig{AckWait: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	if _, err := q.AddSchedule(ctx, trellis.ScheduleRequest{Name: "pulse", Every: "1s", AddTaskRequest: trellis.AddTaskRequest{Queue: "cron", Objective: "x"}}); err != nil {
		t.Fatal(err)
	}
	waitSchedule(t, q, "pulse", 7)
	recs := eventstest.Load(t, ctx, b.Store, events.StreamQueue, ScheduleFilter("pulse"))
	snaps := 0
	for _, rec := range recs {
		if rec.Type == Snapshot {
			snaps++
		}
	}
	if snaps < 2 {
		t.Fatalf("%d snapshots among the schedule's %d events; want at least 2", snaps, len(recs))
	}
	st, folded := coldLoad(t, ctx, b.Store, scheduleKind, "pulse")
	whole, err := FoldSchedule(recs)
	if err != nil {
		t.Fatal(err)
	}
	if folded > 2*every+3 {
		t.Fatalf("a cold load folded %d of the schedule's %d events; want at most %d", folded, len(recs), 2*every+3)
	}
	// The replay may have folded events stored after the cold load's.
	if st.Seq == recs[len(recs)-1].Seq && !SameSchedule(st.Value, whole) {
		t.Fatalf("schedule from its snapshot %s != replayed %s", jsonOf(t, st.Value), jsonOf(t, whole))
	}
	fired := st.Value.Fired
	waitSchedule(t, q, "pulse", fired+1)
	if tasks := tickTasks(t, b.Store, "cron"); tasks < fired+1 {
		t.Fatalf("%d tick tasks for %d fired ticks", tasks, fired+1)
	}
}

// waitSchedule waits until the schedule fired n ticks (60 s at most).
func waitSchedule(t *testing.T, q *Handler, name string, n int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		s, err := q.Schedule(context.Background(), name)
		if err == nil && s.Fired >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("schedule %s did not fire %d ticks within 60 s: %+v, %v", name, n, s, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// tickTasks counts the tasks added on queue.
func tickTasks(t *testing.T, store *events.Store, queue string) int {
	t.Helper()
	recs, _, err := store.Load(context.Background(), events.StreamQueue, "trellis.queue."+queue+".*."+Added)
	if err != nil {
		t.Fatal(err)
	}
	return len(recs)
}
