package main

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/taskqueue"
)

// gateState folds the events the live log holds of gate id and returns
// the state and those events.
func gateState(t *testing.T, store *events.Store, id string) (*taskqueue.Gate, []events.Recorded) {
	t.Helper()
	recs, _, err := store.Load(context.Background(), events.StreamQueue, "trellis.queue."+id+".>")
	if err != nil {
		t.Fatal(err)
	}
	g, err := taskqueue.FoldGate(recs)
	if err != nil {
		t.Fatal(err)
	}
	return g, recs
}

// TestPruneProcessKilledCuttingGates: a `trellis prune` process killed
// with SIGKILL once its first archive is written (of the open tasks it
// cuts: claimed tasks with heartbeats; before its record, or while the
// cut events are removed) leaves the tasks and the gate whole or
// continued: audit verify OK, and the gate's state the same; a prune run
// again cuts the gate at its last snapshot, the gate goes on admitting
// claims and the tasks finish with their one attempt.
func TestPruneProcessKilledCuttingGates(t *testing.T) {
	t.Parallel()
	srv, url := queueServer(t)
	ctx := context.Background()
	q := srv.Service().QueueHandler()
	if _, err := q.SetRate(ctx, "gk", "ops", "100000/s", 100000); err != nil {
		t.Fatal(err)
	}
	const n = 200
	var beating []string // claimed tasks with heartbeats: cut at a snapshot too
	for i := 0; i < n; i++ {
		if _, err := q.Add(ctx, trellis.AddTaskRequest{Queue: "gk", Objective: "gated"}); err != nil {
			t.Fatal(err)
		}
		got, err := q.Next(ctx, trellis.NextRequest{Queue: "gk", Worker: "w"})
		if err != nil || got == nil {
			t.Fatalf("claim %d: %+v, %v", i, got, err)
		}
		if i < 20 {
			for j := 0; j < 4; j++ {
				if _, err := q.Heartbeat(ctx, trellis.HeartbeatRequest{TaskID: got.TaskID, Worker: "w"}); err != nil {
					t.Fatal(err)
				}
			}
			beating = append(beating, got.TaskID)
		}
	}
	id := taskqueue.GateID("gk")
	store := srv.Store()
	before, all := gateState(t, store, id)
	if len(all) < n {
		t.Fatalf("the gate holds %d events; want %d at least", len(all), n)
	}
	check := func(when string) []events.Recorded {
		t.Helper()
		if fs := verifyStore(t, store); len(fs) > 0 {
			t.Fatalf("audit verify %s: %v", when, fs)
		}
		g, live := gateState(t, store, id)
		if !taskqueue.SameGate(g, before) {
			t.Fatalf("gate %s: %+v; before %+v", when, g, before)
		}
		if live[0].Prev != "" && !continuedByPrune(t, store, live[0]) {
			t.Fatalf("gate %s: its first live event #%d is named by no prune record", when, live[0].Seq)
		}
		return live
	}
	archive := filepath.Join(t.TempDir(), "archive")
	killPruneAfterArchives(t, url, archive, 1)
	live := check("after the kill")
	t.Logf("after the kill the live log holds %d of the gate's %d events", len(live), len(all))

	pruneAgain(t, url, archive)
	live = check("after the prune ran again")
	if len(live) > taskqueue.GateSnapshotEvery+1 || live[0].Type != taskqueue.Snapshot {
		t.Fatalf("after the prune ran again the gate keeps %d events from a %s; want at most %d from its snapshot", len(live), live[0].Type, taskqueue.GateSnapshotEvery+1)
	}
	for _, id := range beating {
		got, err := taskqueue.New(store, taskqueue.Config{}).Done(ctx, trellis.DoneRequest{TaskID: id, Worker: "w", WhatWasDone: "ok"})
		if err != nil || got.Status != trellis.StatusDone || got.Attempts != 1 {
			t.Fatalf("done %s after the prunes: %+v, %v", id, got, err)
		}
	}
	if _, err := q.Add(ctx, trellis.AddTaskRequest{Queue: "gk", Objective: "after"}); err != nil {
		t.Fatal(err)
	}
	cold := taskqueue.New(store, taskqueue.Config{})
	if got, err := cold.Next(ctx, trellis.NextRequest{Queue: "gk", Worker: "w2"}); err != nil || got == nil {
		t.Fatalf("claim on the cut gate: %+v, %v", got, err)
	}
	if fs := verifyStore(t, store); len(fs) > 0 {
		t.Fatalf("audit verify after a claim on the cut gate: %v", fs)
	}
}
