package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/server"
)

// TestClusterScheduling: two Trellis servers on a 3-node cluster with
// replicated streams. A delayed task's timer, a dependant and a schedule's
// ticks work on R3 streams (message schedules and atomic batches
// replicated), and when one server stops the other takes the ticks up:
// each tick still adds one task.
func TestClusterScheduling(t *testing.T) {
	t.Parallel()
	urls := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	a, err := server.Start(ctx, server.Config{DataDir: t.TempDir(), NATSURL: urls, Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	b, err := server.Start(ctx, server.Config{DataDir: t.TempDir(), NATSURL: urls, Replicas: 3})
	if err != nil {
		a.Close()
		t.Fatal(err)
	}
	defer b.Close()
	sa, sb := a.Service(), b.Service()
	later, err := sa.Add(ctx, trellis.AddTaskRequest{Queue: "cl", Objective: "later", Delay: "2s"})
	if err != nil {
		t.Fatal(err)
	}
	after, err := sb.Add(ctx, trellis.AddTaskRequest{Queue: "cl", Objective: "after", After: []string{later.TaskID}})
	if err != nil || after.Status != trellis.StatusWaiting {
		t.Fatalf("dependant = %+v, %v", after, err)
	}
	if _, err := sb.AddSchedule(ctx, trellis.ScheduleRequest{Name: "pulse", Every: "1s", AddTaskRequest: trellis.AddTaskRequest{Queue: "ticks", Objective: "tick"}}); err != nil {
		t.Fatal(err)
	}
	wait := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("not within a minute: %s", what)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	wait("two ticks", func() bool { s, err := sb.QueueHandler().Schedule(ctx, "pulse"); return err == nil && s.Fired >= 2 })
	a.Close() // one server goes away; b takes every tick from now on
	firedBefore, _ := sb.QueueHandler().Schedule(ctx, "pulse")
	wait("two more ticks after a server stopped", func() bool {
		s, err := sb.QueueHandler().Schedule(ctx, "pulse")
		return err == nil && s.Fired >= firedBefore.Fired+2
	})
	var claimed *trellis.Task
	wait("the delayed task is claimed", func() bool {
		claimed, err = sb.Next(ctx, trellis.NextRequest{Queue: "cl", Worker: "w"})
		return err == nil && claimed != nil
	})
	if claimed.TaskID != later.TaskID {
		t.Fatalf("claimed %s; want the delayed task", claimed.Objective)
	}
	if _, err := sb.Done(ctx, trellis.DoneRequest{TaskID: claimed.TaskID, Worker: "w", WhatWasDone: "on time"}); err != nil {
		t.Fatal(err)
	}
	wait("the dependant is queued", func() bool {
		t2, err := sb.Show(ctx, after.TaskID)
		return err == nil && t2.Status == trellis.StatusQueued && len(t2.Prerequisites) == 1
	})
	if _, err := sb.RemoveSchedule(ctx, trellis.RemoveScheduleRequest{Name: "pulse"}); err != nil {
		t.Fatal(err)
	}
	s, _ := sb.QueueHandler().Schedule(ctx, "pulse")
	list, err := sb.List(ctx, trellis.ListRequest{Queue: "ticks"})
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, n := range list.Counts["ticks"] {
		total += n
	}
	if total != s.Fired {
		t.Fatalf("%d tick tasks for %d fired ticks", total, s.Fired)
	}
}
