package retention_test

import (
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/audit"
	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/retention"
	"github.com/trellis/trellis/taskqueue"
)

// TestPruneCutsTaskHeartbeatingPastTheCut: an agent heartbeats a claimed
// task more often than the retention age, so its last event is always
// after the cut. The prune still cuts it, since its events after the
// dispatch are mostly older than the cut; and when the agent heartbeats
// again between the scan and the snapshot (the snapshot's check fails),
// the prune catches the task up with that heartbeat and snapshots it
// again. The task keeps its dispatch and the snapshot, verify is OK on
// the live log and the archive, the task's lease is the last heartbeat's,
// and it finishes with its one attempt.
func TestPruneCutsTaskHeartbeatingPastTheCut(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	ctx := ctxT(t)
	q := taskqueue.New(b.Store, taskqueue.Config{})
	task, err := q.Add(ctx, trellis.AddTaskRequest{Queue: "long", Objective: "a long job"})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := q.Next(ctx, trellis.NextRequest{Queue: "long", Worker: "agent"}); err != nil || got == nil {
		t.Fatalf("claim: %+v, %v", got, err)
	}
	beat := func() {
		t.Helper()
		if _, err := q.Heartbeat(ctx, trellis.HeartbeatRequest{TaskID: task.TaskID, Worker: "agent"}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 6; i++ {
		beat()
	}
	cut := time.Now() // the heartbeats above were stored before it
	for !time.Now().After(cut) {
		time.Sleep(time.Millisecond)
	}
	for i := 0; i < 6; i++ {
		beat() // stored after the cut
	}
	moved := false
	key := []byte("0123456789abcdef0123456789abcdef")
	res, err := retention.Prune(ctx, b.Store, retention.Options{OlderThan: time.Minute, Archive: t.TempDir(), Key: key,
		Now:                 func() time.Time { return cut.Add(time.Minute) },
		BeforeOpenSnapshots: func() { beat(); moved = true }})
	if err != nil {
		t.Fatal(err)
	}
	if !moved || res.OpenTasks != 1 || res.Kept["changed during the prune"] != 0 {
		t.Fatalf("prune cut %d open tasks (moved under it: %v); want the heartbeating one; kept %v", res.OpenTasks, moved, res.Kept)
	}
	recs := taskEvents(t, b.Store, task.TaskID)
	if len(recs) != 2 || recs[0].Type != taskqueue.Added || recs[1].Type != taskqueue.Snapshot {
		t.Fatalf("the task keeps %d events; want its dispatch and the snapshot", len(recs))
	}
	var fs []audit.Finding
	if _, err := audit.Verify(ctx, b.Store, audit.VerifyOptions{AnchorKey: key}, func(f audit.Finding) error { fs = append(fs, f); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(fs) > 0 {
		t.Fatalf("verify after the cut: %v", fs)
	}
	for _, ar := range res.Archives {
		if fs, _ := verifyArchive(t, ar.File); len(fs) > 0 {
			t.Fatalf("verify --file %s: %v", ar.File, fs)
		}
	}
	cold := taskqueue.New(b.Store, taskqueue.Config{})
	beat()
	got, err := cold.Done(ctx, trellis.DoneRequest{TaskID: task.TaskID, Worker: "agent", WhatWasDone: "ok"})
	if err != nil || got.Status != trellis.StatusDone || got.Attempts != 1 {
		t.Fatalf("done after the cut: %+v, %v", got, err)
	}
}
