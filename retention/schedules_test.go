package retention_test

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/audit"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/retention"
	"github.com/trellis/trellis/taskqueue"
)

// scheduleSnapEvery is the tests' schedule snapshot period (the default
// 64 would take a minute of one-second ticks).
const scheduleSnapEvery = 4

// scheduleEvents returns the events the live log holds of schedule name.
func scheduleEvents(t *testing.T, store *events.Store, name string) []events.Recorded {
	t.Helper()
	recs, _, err := store.Load(ctxT(t), events.StreamQueue, taskqueue.ScheduleFilter(name))
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// tickingSchedule runs schedule name (every second, on queue) with a
// reactor of its own until it fired n ticks, then stops taking ticks up
// and waits until the schedule is still (its last event the tick the
// stopped reactor leaves pending). It returns the schedule's state then.
func tickingSchedule(t *testing.T, b *eventstest.Bundle, queue, name string, n int) *trellis.Schedule {
	t.Helper()
	ctx := ctxT(t)
	q := taskqueue.New(b.Store, taskqueue.Config{ScheduleSnapshotEvery: scheduleSnapEvery})
	r, err := q.StartReactor(context.Background(), taskqueue.ReactorConfig{AckWait: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.AddSchedule(ctx, trellis.ScheduleRequest{Name: name, Every: "1s", AddTaskRequest: trellis.AddTaskRequest{Queue: queue, Objective: "tick"}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the schedule fired its ticks", func() bool {
		s, err := q.Schedule(ctx, name)
		return err == nil && s.Fired >= n
	})
	r.Stop()
	waitFor(t, "the schedule is still", func() bool {
		recs := scheduleEvents(t, b.Store, name)
		return recs[len(recs)-1].Type == taskqueue.Tick
	})
	recs := scheduleEvents(t, b.Store, name)
	s, err := taskqueue.FoldSchedule(recs)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestPruneCutsSchedules: a schedule ticking every second snapshots
// itself as its ticks are taken up; some of its tick tasks are finished,
// the others stay queued. A prune removes the finished ones and cuts the
// schedule at its last snapshot: its ticks, the events they fired and
// their fired timers go to the archive, the live log keeps the snapshot
// and what follows, audit verify is OK on the live log (the schedule
// continued from the snapshot a trusted record names) and on the archive,
// the schedule a cold process loads is the one the whole history gave
// (replay == live), and it goes on firing: a server taking up its next
// tick adds the tick's task, verify stays OK, the open tick tasks still
// claim and finish. An archive with one altered schedule event is found.
func TestPruneCutsSchedules(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	ctx := ctxT(t)
	before := tickingSchedule(t, b, "sq", "pulse", 7)
	all := scheduleEvents(t, b.Store, "pulse")
	q := taskqueue.New(b.Store, taskqueue.Config{})
	var open []string
	for i := 0; ; i++ {
		got, err := q.Next(ctx, trellis.NextRequest{Queue: "sq", Worker: "w"})
		if err != nil {
			t.Fatal(err)
		}
		if got == nil {
			break
		}
		if i%2 == 0 {
			if _, err := q.Done(ctx, trellis.DoneRequest{TaskID: got.TaskID, Worker: "w", WhatWasDone: "ok"}); err != nil {
				t.Fatal(err)
			}
		} else {
			open = append(open, got.TaskID)
		}
	}
	if len(open) == 0 {
		t.Fatal("no tick task stays open")
	}
	key := []byte("0123456789abcdef0123456789abcdef")
	res, err := retention.Prune(ctx, b.Store, retention.Options{OlderThan: time.Minute, Archive: t.TempDir(), Now: later, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	live := scheduleEvents(t, b.Store, "pulse")
	t.Logf("prune: %d tasks, %d schedule events cut; the schedule keeps %d of its %d events", res.Tasks, res.ScheduleEvents, len(live), len(all))
	if res.ScheduleEvents == 0 || res.Tasks == 0 || len(live)+res.ScheduleEvents != len(all) {
		t.Fatalf("prune cut %d schedule events and %d tasks; the schedule keeps %d of %d (gates kept %v)", res.ScheduleEvents, res.Tasks, len(live), len(all), res.GatesKept)
	}
	if live[0].Type != taskqueue.Snapshot || len(live) > 2*scheduleSnapEvery+3 {
		t.Fatalf("the schedule keeps %d events from a %s; want at most %d from its snapshot", len(live), live[0].Type, 2*scheduleSnapEvery+3)
	}
	verifyKeyed := func(when string) {
		t.Helper()
		var fs []audit.Finding
		rep, err := audit.Verify(ctx, b.Store, audit.VerifyOptions{AnchorKey: key}, func(f audit.Finding) error { fs = append(fs, f); return nil })
		if err != nil {
			t.Fatal(err)
		}
		if len(fs) > 0 {
			t.Fatalf("verify %s: %v", when, fs)
		}
		for _, s := range rep.Streams {
			if s.Stream == events.StreamQueue && s.Continued < 1 {
				t.Fatalf("verify %s saw %d aggregates continued from a snapshot; want the schedule", when, s.Continued)
			}
		}
	}
	verifyKeyed("after the prune")
	var archived string
	for _, ar := range res.Archives {
		if fs, _ := verifyArchive(t, ar.File); len(fs) > 0 {
			t.Fatalf("verify --file %s: %v", ar.File, fs)
		}
		if ar.Schedules > 0 {
			archived = ar.File
			if got := archivedLast(t, ar.File, "trellis.queue.sq._schedule.pulse."); got != live[0].Prev {
				t.Fatalf("the archive's last schedule event hashes to %s; the live snapshot chains to %s", got, live[0].Prev)
			}
		}
	}
	if archived == "" {
		t.Fatalf("no archive holds the schedule: %+v", res.Archives)
	}
	cold := taskqueue.New(b.Store, taskqueue.Config{})
	got, err := cold.Schedule(ctx, "pulse")
	if err != nil {
		t.Fatal(err)
	}
	if !taskqueue.SameSchedule(got, before) {
		t.Fatalf("schedule after the prune %+v; before %+v", got, before)
	}
	if list, err := cold.Schedules(ctx); err != nil || len(list) != 1 || list[0].Name != "pulse" {
		t.Fatalf("schedules after the prune (its created event archived) = %+v, %v", list, err)
	}
	// It goes on firing: the pending tick is taken up, and the ones after.
	next := taskqueue.New(b.Store, taskqueue.Config{TickGrace: time.Hour, ScheduleSnapshotEvery: scheduleSnapEvery})
	r, err := next.StartReactor(context.Background(), taskqueue.ReactorConfig{AckWait: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	waitFor(t, "the schedule fires after the prune", func() bool {
		s, err := next.Schedule(ctx, "pulse")
		return err == nil && s.Fired >= before.Fired+2
	})
	if _, err := next.RemoveSchedule(ctx, trellis.RemoveScheduleRequest{Name: "pulse"}); err != nil {
		t.Fatal(err)
	}
	for _, id := range open {
		if got, err := cold.Done(ctx, trellis.DoneRequest{TaskID: id, Worker: "w", WhatWasDone: "ok"}); err != nil || got.Status != trellis.StatusDone {
			t.Fatalf("done %s after the prune: %+v, %v", id, got, err)
		}
	}
	verifyKeyed("after the schedule fired on")

	// An archive with one schedule event altered is found.
	data, err := os.ReadFile(archived)
	if err != nil {
		t.Fatal(err)
	}
	tampered := bytes.Replace(data, []byte(`"fired":`), []byte(`"fired":9`), 1)
	if bytes.Equal(tampered, data) {
		t.Fatal("no snapshot line to alter in the archive")
	}
	if err := os.WriteFile(archived, tampered, 0o600); err != nil {
		t.Fatal(err)
	}
	if fs, _ := verifyArchive(t, archived); len(fs) == 0 {
		t.Fatal("verify --file found nothing in the altered archive")
	}
}

// TestPruneScheduleStoppedAfterRecord: a prune stopped after it recorded a
// schedule's cut, in the middle of removing the cut events (the first
// three gone, its context cancelled there, as a kill would stop it),
// leaves the log verifiable and the schedule's state as it was, and the
// next prune finishes the removal: the schedule then starts at its
// snapshot. A prune stopped once its archive is durable, before its
// record, leaves the log whole.
func TestPruneScheduleStoppedAfterRecord(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	ctx := ctxT(t)
	before := tickingSchedule(t, b, "sq", "beat", 5)
	all := scheduleEvents(t, b.Store, "beat")
	check := func(when string) []events.Recorded {
		t.Helper()
		if fs := verifyLog(t, b.Store); len(fs) > 0 {
			t.Fatalf("verify %s: %v", when, fs)
		}
		got, err := taskqueue.New(b.Store, taskqueue.Config{}).Schedule(ctx, "beat")
		if err != nil || !taskqueue.SameSchedule(got, before) {
			t.Fatalf("schedule %s: %+v, %v; before %+v", when, got, err, before)
		}
		return scheduleEvents(t, b.Store, "beat")
	}
	dir := t.TempDir()
	beforeRecord, stop := context.WithCancel(ctx)
	_, err := retention.Prune(beforeRecord, b.Store, retention.Options{OlderThan: time.Minute, Archive: dir, Now: later,
		AfterArchive: func(string) { stop() }})
	if err == nil {
		t.Fatal("a prune stopped before its record reported success")
	}
	if live := check("after a prune stopped before its record"); len(live) != len(all) {
		t.Fatalf("the schedule keeps %d of its %d events after a prune stopped before its record", len(live), len(all))
	}
	stopped, stop := context.WithCancel(ctx)
	partly := func() {
		stream, err := b.Store.JetStream().Stream(ctx, events.StreamQueue)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range scheduleEvents(t, b.Store, "beat")[:3] {
			if err := stream.DeleteMsg(ctx, r.Seq); err != nil {
				t.Fatal(err)
			}
		}
		stop()
	}
	_, err = retention.Prune(stopped, b.Store, retention.Options{OlderThan: time.Minute, Archive: dir, Now: later, AfterGateRecord: partly})
	if err == nil {
		t.Fatal("a prune stopped after its schedule record reported success")
	}
	check("after the stopped prune")
	res, err := retention.Prune(ctx, b.Store, retention.Options{OlderThan: time.Minute, Archive: dir, Now: later})
	if err != nil {
		t.Fatal(err)
	}
	if res.Completed == 0 {
		t.Fatalf("the next prune finished nothing of the stopped one: %+v", res)
	}
	if live := check("after the next prune"); live[0].Type != taskqueue.Snapshot || len(live) > 2*scheduleSnapEvery+3 {
		t.Fatalf("the schedule keeps %d events from a %s; want at most %d from its snapshot", len(live), live[0].Type, 2*scheduleSnapEvery+3)
	}
}
