package server_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/audit"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/retention"
	"github.com/trellis/trellis/server"
)

// TestPruneOnR3Cluster: on a 3-node JetStream cluster with R3 streams, a
// prune removes the finished tasks (done, failed, cancelled; several
// batches, so several records and archives) and the completed agent
// tasks, keeps the open ones (an open agent task takes an agent after), and
// audit verify with the server's key is OK; the open tasks still claim
// and finish through a second server attached to another node, whose
// retention loop then prunes them too, and the log still verifies.
func TestPruneOnR3Cluster(t *testing.T) {
	t.Parallel()
	c := eventstest.StartCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	data := t.TempDir()
	srv, err := server.Start(ctx, server.Config{DataDir: data, NATSURL: c.URL(0), Replicas: 3, NATSAddr: "-"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	info, err := srv.Store().StreamInfo(ctx, events.StreamQueue)
	if err != nil || info.Config.Replicas != 3 {
		t.Fatalf("queue stream: %v replicas, %v", info, err)
	}
	svc := srv.Service()
	q := svc.QueueHandler()
	var open []string
	for i := 0; i < 3; i++ {
		task, err := svc.Add(ctx, trellis.AddTaskRequest{Queue: "r3", Objective: fmt.Sprintf("open %d", i)})
		if err != nil {
			t.Fatal(err)
		}
		open = append(open, task.TaskID)
	}
	finished := cancelledTasks(t, ctx, srv, "r3-cancelled", 20)
	for i := 0; i < 10; i++ {
		task, err := svc.Add(ctx, trellis.AddTaskRequest{Queue: "r3-worked", Objective: fmt.Sprintf("worked %d", i)})
		if err != nil {
			t.Fatal(err)
		}
		claimed, err := svc.Next(ctx, trellis.NextRequest{Queue: "r3-worked", Worker: "w"})
		if err != nil || claimed == nil || claimed.TaskID != task.TaskID {
			t.Fatalf("claim %s: %v %v", task.TaskID, claimed, err)
		}
		if i%2 == 0 {
			_, err = svc.Done(ctx, trellis.DoneRequest{TaskID: task.TaskID, Worker: "w", WhatWasDone: "done"})
		} else {
			_, err = svc.Fail(ctx, trellis.FailRequest{TaskID: task.TaskID, Worker: "w", Error: "failed on purpose"})
		}
		if err != nil {
			t.Fatal(err)
		}
		finished = append(finished, task.TaskID)
	}
	// Agent tasks (on their own R3 stream): two completed, one open.
	for _, name := range []string{"r3-done-1", "r3-done-2", "r3-open"} {
		if _, err := svc.TaskCreate(ctx, trellis.AgentTaskCreateRequest{Name: name, Description: name, Objectives: []string{"Do"}}); err != nil {
			t.Fatal(err)
		}
		if name != "r3-open" {
			if _, err := svc.TaskComplete(ctx, trellis.AgentTaskCompleteRequest{Task: name, Force: true}); err != nil {
				t.Fatal(err)
			}
		}
	}
	key, err := audit.AnchorKey(data, true)
	if err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(t.TempDir(), "archive")
	res, err := retention.Prune(ctx, srv.Store(), retention.Options{OlderThan: time.Minute, Archive: archive, Key: key, BatchTasks: 8,
		Now: func() time.Time { return time.Now().Add(time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	if res.Tasks != len(finished) || res.Kept["open"] != len(open) || len(res.Archives) != 5 {
		t.Fatalf("pruned %d tasks in %d archives, kept %v; want %d in 4 (and 1 of agent tasks), %d open", res.Tasks, len(res.Archives), res.Kept, len(finished), len(open))
	}
	if res.AgentTasks != 2 || res.AgentTasksKept["open"] != 1 {
		t.Fatalf("pruned %d agent tasks, kept %v; want the 2 completed, the open one kept", res.AgentTasks, res.AgentTasksKept)
	}
	for _, name := range []string{"r3-done-1", "r3-done-2"} {
		if _, err := svc.TaskShow(ctx, name); trellis.ErrorCode(err) != trellis.CodeNotFound {
			t.Fatalf("pruned agent task %s: %v; want not_found", name, err)
		}
	}
	if _, err := svc.TaskJoin(ctx, trellis.AgentTaskJoinRequest{Task: "r3-open", Agent: "a1", Role: "implementer"}); err != nil {
		t.Fatalf("join the open agent task after the prune: %v", err)
	}
	if fs := verifyKeyed(t, ctx, srv.Store(), data); len(fs) > 0 {
		t.Fatalf("audit verify after the prune: %v", fs)
	}
	for _, id := range finished {
		if _, err := q.Show(ctx, id); trellis.ErrorCode(err) != trellis.CodeNotFound {
			t.Fatalf("pruned task %s: %v; want not_found", id, err)
		}
	}
	for _, ar := range res.Archives {
		var fs []audit.Finding
		rep, err := audit.VerifyFile(ctx, ar.File, func(f audit.Finding) error { fs = append(fs, f); return nil })
		if err != nil || len(fs) > 0 || rep.Digest != ar.Digest {
			t.Fatalf("archive %s: %v %v", ar.File, err, fs)
		}
	}

	// A second server on another node, with the same audit key, claims
	// and finishes the open tasks; its retention loop prunes them.
	data2 := t.TempDir()
	if err := copyKey(data, data2); err != nil {
		t.Fatal(err)
	}
	srv2, err := server.Start(ctx, server.Config{DataDir: data2, NATSURL: c.URL(2), NATSAddr: "-",
		Retention: time.Millisecond, Archive: archive, PruneEvery: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer srv2.Close()
	for range open {
		task, err := srv2.Service().Next(ctx, trellis.NextRequest{Queue: "r3", Worker: "after"})
		if err != nil || task == nil {
			t.Fatalf("claim after the prune: %v %v", task, err)
		}
		if _, err := srv2.Service().Done(ctx, trellis.DoneRequest{TaskID: task.TaskID, Worker: "after", WhatWasDone: "still works"}); err != nil {
			t.Fatal(err)
		}
	}
	waitUntil(t, "the second server's retention prunes the tasks finished after the first prune", func() bool {
		st, _ := srv2.Retention()
		return st.Tasks == len(open)
	})
	if st, _ := srv2.Retention(); st.Failed != 0 {
		t.Fatalf("retention on the cluster: %+v", st)
	}
	if fs := verifyKeyed(t, ctx, srv.Store(), data); len(fs) > 0 {
		t.Fatalf("audit verify after the second prune: %v", fs)
	}
}
