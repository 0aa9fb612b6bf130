package retention_test

import (
	"context"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/audit"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/retention"
	"github.com/trellis/trellis/taskqueue"
)

// TestPruneOpenTaskStoppedBeforeRecord: a prune stopped once an open
// task's snapshot is appended and its archive written, before its record
// (as a kill there would stop it), leaves the snapshot in the log, checked
// by verify against the events it replaces, which all stay; the task
// finishes with its attempt, and the next prune removes it whole. A task
// snapshot a client holding only NATS credentials appends with a forged
// state (attempts reset) is an altered finding, and no prune cuts the
// task at it.
func TestPruneOpenTaskStoppedBeforeRecord(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	store := b.Store
	q := taskqueue.New(store, taskqueue.Config{})
	ctx := ctxT(t)
	f := &fixture{q: q, finished: map[string]string{}, open: map[string]string{}}
	task := f.add(t, "stopped", trellis.AddTaskRequest{Queue: "stop"})
	f.claim(t, "stop", task.TaskID)
	forged := f.add(t, "forged", trellis.AddTaskRequest{Queue: "forge"})
	f.claim(t, "forge", forged.TaskID)
	for i := 0; i < 4; i++ {
		for _, id := range []string{task.TaskID, forged.TaskID} {
			if _, err := q.Heartbeat(ctx, trellis.HeartbeatRequest{TaskID: id, Worker: "w1"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The forged snapshot: chained right, under its event id, attempts 0.
	recs := taskEvents(t, store, forged.TaskID)
	last := recs[len(recs)-1]
	state := show(t, q, forged.TaskID)
	state.Attempts = 0
	env, err := events.NewEnvelope(time.Now(), taskqueue.Snapshot, forged.TaskID, "trellis-prune", taskqueue.Schema,
		taskqueue.SnapshotPayload{Replaces: events.Hash(last.Envelope), ReplacesSeq: last.Seq, Task: state})
	if err != nil {
		t.Fatal(err)
	}
	env.Prev = events.Hash(last.Envelope)
	bad, err := store.Append(ctx, taskqueue.TaskSnapshotSubject("forge", forged.TaskID), env,
		events.Expect{Filter: taskqueue.FilterIn("forge", forged.TaskID), LastSeq: last.Seq}, "")
	if err != nil {
		t.Fatal(err)
	}

	stopped, stop := context.WithCancel(ctx)
	_, err = retention.Prune(stopped, store, retention.Options{OlderThan: time.Minute, Archive: t.TempDir(), Now: later, AfterArchive: func(string) { stop() }})
	if err == nil {
		t.Fatal("a prune stopped before its record reported success")
	}
	got := taskEvents(t, store, task.TaskID)
	if n := len(got); n != 7 || got[n-1].Type != taskqueue.Snapshot {
		t.Fatalf("the stopped task holds %d events, last %s; want its 6 and the snapshot", n, got[n-1].Type)
	}
	fs := verifyLog(t, store)
	if len(fs) != 1 || fs[0].Kind != audit.FindingAltered || fs[0].Seq != bad.Seq {
		t.Fatalf("verify after the stopped prune: %v; want only the forged snapshot #%d altered", fs, bad.Seq)
	}
	done, err := q.Done(ctx, trellis.DoneRequest{TaskID: task.TaskID, Worker: "w1", WhatWasDone: "ok"})
	if err != nil || done.Status != trellis.StatusDone || done.Attempts != 1 {
		t.Fatalf("done after the stopped prune: %+v, %v", done, err)
	}
	// The next prune removes the finished task whole and does not cut the
	// task at its forged snapshot (that would launder the forgery into an
	// archive).
	res, err := retention.Prune(ctx, store, retention.Options{OlderThan: time.Minute, Archive: t.TempDir(), Now: later})
	if err != nil || res.Tasks != 1 || res.OpenTasks != 0 {
		t.Fatalf("next prune: %+v, %v; want the finished task removed and nothing cut", res, err)
	}
	if n := len(taskEvents(t, store, forged.TaskID)); n != len(recs)+1 {
		t.Fatalf("the task with a forged snapshot holds %d events; want all %d", n, len(recs)+1)
	}
	fs = verifyLog(t, store)
	if len(fs) != 1 || fs[0].Seq != bad.Seq {
		t.Fatalf("verify after the next prune: %v; want only the forged snapshot #%d", fs, bad.Seq)
	}
}
