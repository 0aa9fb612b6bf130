package server_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/server"
	"github.com/trellis/trellis/workers"
)

// TestRemoteWorkerPoolThroughTheAPI: a worker pool holding only a worker
// token works through the server's API (it cannot append events itself):
// every task is claimed and completed once, under the token's slots
// ("worker/<slot>"), heartbeats keep a claim alive past its lease, and the
// token cannot prepare a queue outside its own, nor touch another
// worker's lease.
func TestRemoteWorkerPoolThroughTheAPI(t *testing.T) {
	t.Parallel()
	b := startAuth(t, server.Config{})
	admin, _, _ := b.natsClient(t, b.tokens["admin"])
	client, _, err := b.natsClient(t, b.tokens["worker"])
	if err != nil {
		t.Fatal(err)
	}
	const n = 12
	ids := map[string]bool{}
	for i := 0; i < n; i++ {
		task, err := admin.Add(b.ctx, trellis.AddTaskRequest{Objective: "remote"})
		if err != nil {
			t.Fatal(err)
		}
		ids[task.TaskID] = true
	}
	var ran atomic.Int32
	slow := workers.HandlerFunc(func(ctx context.Context, task *trellis.Task, _ *workers.Progress) (*trellis.Checkpoint, error) {
		if ran.Add(1) == 1 {
			time.Sleep(2500 * time.Millisecond) // past the 1.5 s lease: heartbeats must hold it
		}
		return &trellis.Checkpoint{WhatWasDone: "ok"}, nil
	})
	pool, err := workers.NewWithSource(client.WorkerSource(), slow, workers.Config{
		Worker: "worker", Concurrency: 3, Lease: 1500 * time.Millisecond, FetchWait: 300 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(b.ctx)
	done := make(chan error, 1)
	go func() { done <- pool.Run(ctx) }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		l, err := admin.List(b.ctx, trellis.ListRequest{Status: trellis.StatusDone, Limit: trellis.MaxListLimit})
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Tasks) == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d tasks done after 60 s", len(l.Tasks), n)
		}
		time.Sleep(100 * time.Millisecond)
	}
	stop()
	<-done
	for id := range ids {
		recs, err := admin.Audit(b.ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		var kinds []string
		for _, r := range recs {
			kinds = append(kinds, r.Type)
			if r.Type != "added" && !strings.HasPrefix(r.Actor, "worker/") {
				t.Errorf("task %s: %s by %q, want a slot of the token", id, r.Type, r.Actor)
			}
		}
		if got := strings.Join(kinds, ","); got != "added,claimed,completed" {
			t.Errorf("task %s history %s (a lease lost, or a task run twice)", id, got)
		}
	}
	// The token may not prepare another queue, and another worker token
	// may not use its leases.
	if _, err := client.WorkerSource().Prepare(b.ctx, "elsewhere", time.Second); trellis.ErrorCode(err) != trellis.CodeUnauthorized {
		t.Fatalf("prepare outside the token's queues: %v", err)
	}
	task, _ := admin.Add(b.ctx, trellis.AddTaskRequest{Objective: "lease theft"})
	claim, err := client.WorkerSource().Claim(b.ctx, "default", "worker/x", 2*time.Second)
	if err != nil || claim == nil || claim.Task == nil || claim.Task.TaskID != task.TaskID {
		t.Fatalf("claim: %+v %v", claim, err)
	}
	_, onc, _ := b.natsClient(t, b.tokens["other"])
	stealLease(t, b, onc, task.TaskID)
	if _, err := claim.Heartbeat(b.ctx); err != nil {
		t.Fatalf("own heartbeat: %v", err)
	}
}

// stealLease shows that another token cannot heartbeat or acknowledge a
// lease it does not hold: the server refuses before touching the
// dispatch.
func stealLease(t *testing.T, b *authBundle, nc *nats.Conn, taskID string) {
	t.Helper()
	for _, op := range []string{"queue.heartbeat", "queue.ack"} {
		for _, worker := range []string{"", "worker/x"} {
			body, _ := json.Marshal(map[string]string{"task_id": taskID, "worker": worker, "lease": "$JS.ACK.TRELLIS_QUEUE.queue-default.1.1.1.1.0"})
			m := nats.NewMsg("trellis.api.v1." + op)
			m.Data = body
			m.Header.Set("Authorization", "Bearer "+b.tokens["other"])
			res, err := nc.RequestMsg(m, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(res.Data), `"error"`) {
				t.Errorf("%s as %q with another worker's task: %s", op, worker, res.Data)
			}
		}
	}
}

// A remote pool claims from every priority lane, best first, and its
// lease on a prioritized task is accepted for heartbeats and the ack.
func TestRemoteClaimsEveryPriority(t *testing.T) {
	t.Parallel()
	b := startAuth(t, server.Config{})
	admin, _, _ := b.natsClient(t, b.tokens["admin"])
	client, _, err := b.natsClient(t, b.tokens["worker"])
	if err != nil {
		t.Fatal(err)
	}
	src := client.WorkerSource()
	if _, err := src.Prepare(b.ctx, "default", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, p := range []int{4, 2, 1, 3} {
		task, err := admin.Add(b.ctx, trellis.AddTaskRequest{Objective: "p", Priority: p})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, task.TaskID)
	}
	order := []string{want[2], want[1], want[3], want[0]} // priorities 1, 2, 3, 4
	for i, id := range order {
		claim, err := src.Claim(b.ctx, "default", "worker/a", 2*time.Second)
		if err != nil || claim == nil || claim.Task == nil {
			t.Fatalf("claim %d: %+v, %v", i, claim, err)
		}
		if claim.Task.TaskID != id {
			t.Fatalf("claim %d took %s (priority %d); want %s", i, claim.Task.TaskID, claim.Task.Priority, id)
		}
		if _, err := claim.Heartbeat(b.ctx); err != nil {
			t.Fatalf("heartbeat of a priority-%d lease: %v", claim.Task.Priority, err)
		}
		if _, err := client.Done(b.ctx, trellis.DoneRequest{TaskID: id, Worker: "worker/a", WhatWasDone: "ok"}); err != nil {
			t.Fatal(err)
		}
		if err := claim.Ack(b.ctx); err != nil {
			t.Fatalf("ack of a priority-%d lease: %v", claim.Task.Priority, err)
		}
	}
}
