package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/server"
	"github.com/trellis/trellis/taskqueue"
)

// TestPruneProcessKilledCuttingSchedules: a schedule that ticked every
// second (snapshotting itself every 2 events), then removed, and a queue
// paused and resumed 150 times (its controls snapshotting every 64) are
// pruned by a
// `trellis prune` process killed with SIGKILL once its first archive is
// written: the log is left whole or continued, never with a gap (audit
// verify OK, the schedule and the controls as they were, each first live
// event either its first ever or a snapshot a record names). A prune run
// again cuts both at their last snapshot; the schedule added again
// chains to its snapshot and fires, and verify stays OK.
func TestPruneProcessKilledCuttingSchedules(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	url := b.Server.ClientURL()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	store := b.Store
	q := taskqueue.New(store, taskqueue.Config{ScheduleSnapshotEvery: 2})
	for i := 0; i < 150; i++ { // ends resumed
		var err error
		if i%2 == 0 {
			_, err = q.Pause(ctx, "ck", "ops", "x")
		} else {
			_, err = q.Resume(ctx, "ck", "ops")
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	r, err := q.StartReactor(context.Background(), taskqueue.ReactorConfig{AckWait: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.AddSchedule(ctx, trellis.ScheduleRequest{Name: "pulse", Every: "1s", AddTaskRequest: trellis.AddTaskRequest{Queue: "sk", Objective: "x"}}); err != nil {
		t.Fatal(err)
	}
	scheduleEvents := func() []events.Recorded {
		t.Helper()
		recs, _, err := store.Load(ctx, events.StreamQueue, taskqueue.ScheduleFilter("pulse"))
		if err != nil {
			t.Fatal(err)
		}
		return recs
	}
	controlEvents := func() []events.Recorded {
		t.Helper()
		recs, _, err := store.Load(ctx, events.StreamQueue, taskqueue.ControlFilter("ck"))
		if err != nil {
			t.Fatal(err)
		}
		return recs
	}
	waitUntil := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("not within 60s: %s", what)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitUntil("six ticks fired", func() bool {
		s, err := q.Schedule(ctx, "pulse")
		return err == nil && s.Fired >= 6
	})
	if _, err := q.RemoveSchedule(ctx, trellis.RemoveScheduleRequest{Name: "pulse"}); err != nil {
		t.Fatal(err)
	}
	waitUntil("the schedule is still (its last tick after the removal)", func() bool {
		recs := scheduleEvents()
		n := len(recs)
		return recs[n-1].Type == taskqueue.Tick && recs[n-2].Type == taskqueue.ScheduleRemoved
	})
	r.Stop()
	// The prune command needs a Trellis server on the NATS (it has taken
	// no tick: the schedule is removed and still).
	srv, err := server.Start(ctx, server.Config{DataDir: t.TempDir(), NATSURL: url, ServeAPI: true, SyncInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	schedule, err := taskqueue.FoldSchedule(scheduleEvents())
	if err != nil {
		t.Fatal(err)
	}
	controls, err := taskqueue.FoldControls(controlEvents())
	if err != nil {
		t.Fatal(err)
	}
	check := func(when string) ([]events.Recorded, []events.Recorded) {
		t.Helper()
		if fs := verifyStore(t, store); len(fs) > 0 {
			t.Fatalf("audit verify %s: %v", when, fs)
		}
		s, c := scheduleEvents(), controlEvents()
		gotS, err := taskqueue.FoldSchedule(s)
		if err != nil || !taskqueue.SameSchedule(gotS, schedule) {
			t.Fatalf("schedule %s: %+v, %v; before %+v", when, gotS, err, schedule)
		}
		gotC, err := taskqueue.FoldControls(c)
		if err != nil || !taskqueue.SameControls(gotC, controls) {
			t.Fatalf("controls %s: %+v, %v; before %+v", when, gotC, err, controls)
		}
		for _, first := range []events.Recorded{s[0], c[0]} {
			if first.Prev != "" && !continuedByPrune(t, store, first) {
				t.Fatalf("%s: the first live event #%d of %s is named by no prune record", when, first.Seq, first.Subject)
			}
		}
		return s, c
	}
	archive := filepath.Join(t.TempDir(), "archive")
	killPruneAfterArchives(t, url, archive, 1)
	check("after the kill")
	pruneAgain(t, url, archive)
	s, c := check("after the prune ran again")
	if s[0].Type != taskqueue.Snapshot || len(s) > 2*2+3 || c[0].Type != taskqueue.Snapshot || len(c) > taskqueue.ControlSnapshotEvery+1 {
		t.Fatalf("after the prune ran again the schedule keeps %d events from a %s and the controls %d from a %s; want each from its snapshot",
			len(s), s[0].Type, len(c), c[0].Type)
	}
	// The schedule added again (a new generation, chained to its
	// snapshot) fires: the server takes its ticks up.
	next := taskqueue.New(store, taskqueue.Config{})
	if _, err := next.AddSchedule(ctx, trellis.ScheduleRequest{Name: "pulse", Every: "1s", AddTaskRequest: trellis.AddTaskRequest{Queue: "sk", Objective: "x"}}); err != nil {
		t.Fatal(err)
	}
	waitUntil("the schedule added again fires", func() bool {
		got, err := next.Schedule(ctx, "pulse")
		return err == nil && got.Fired >= 1
	})
	if _, err := next.RemoveSchedule(ctx, trellis.RemoveScheduleRequest{Name: "pulse"}); err != nil {
		t.Fatal(err)
	}
	if fs := verifyStore(t, store); len(fs) > 0 {
		t.Fatalf("audit verify after the schedule fired on: %v", fs)
	}
}
