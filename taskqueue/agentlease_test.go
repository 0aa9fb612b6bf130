package taskqueue_test

import (
	"strings"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/taskqueue"
)

// nextLeased claims with a lease of leaseSeconds until a task comes, for
// at most 30 s.
func nextLeased(t *testing.T, q *taskqueue.Handler, queue, worker string, leaseSeconds float64) *trellis.Task {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		task, err := q.Next(ctxT(t), trellis.NextRequest{Queue: queue, Worker: worker, LeaseSeconds: leaseSeconds})
		if err != nil {
			t.Fatal(err)
		}
		if task != nil {
			return task
		}
	}
	return nil
}

// An agent that claims with queue next and never heartbeats loses the
// task when its lease runs out: another process's next records
// lease_expired (an attempt) and claims it; once the attempts are used up
// the task is dead. Nobody's timer is needed: the dispatch comes back.
func TestAgentLeaseExpires(t *testing.T) {
	t.Parallel()
	q, b := setupQueue(t)
	ctx := ctxT(t)
	other := taskqueue.New(b.Store, taskqueue.Config{}) // another server
	added, err := q.Add(ctx, trellis.AddTaskRequest{Queue: "al", Objective: "forgotten", MaxAttempts: 2})
	if err != nil {
		t.Fatal(err)
	}
	got, err := q.Next(ctx, trellis.NextRequest{Queue: "al", Worker: "agent-a", LeaseSeconds: 1})
	if err != nil || got == nil || got.TaskID != added.TaskID {
		t.Fatalf("claim: %+v, %v", got, err)
	}
	if got.Lease == nil || got.Lease.LeaseMS != 1000 || got.Lease.ExpiresAt == nil {
		t.Fatalf("claim holds no lease: %+v", got.Lease)
	}
	again := nextLeased(t, other, "al", "agent-b", 1)
	if again == nil || again.TaskID != added.TaskID || again.Attempts != 2 || again.ClaimedBy != "agent-b" {
		t.Fatalf("after the lease: %+v; want the task claimed again by agent-b, attempt 2", again)
	}
	if h := historyTypes(t, q, added.TaskID); h != "added claimed lease_expired claimed" {
		t.Fatalf("history %q", h)
	}
	// The first claimant lost it: its heartbeat and its done are refused.
	if _, err := q.Heartbeat(ctx, trellis.HeartbeatRequest{TaskID: added.TaskID, Worker: "agent-a"}); trellis.ErrorCode(err) != trellis.CodeConflict {
		t.Fatalf("heartbeat of the expired claimant: %v; want conflict", err)
	}
	if _, err := q.Done(ctx, trellis.DoneRequest{TaskID: added.TaskID, Worker: "agent-a", WhatWasDone: "late"}); trellis.ErrorCode(err) != trellis.CodeConflict {
		t.Fatalf("done of the expired claimant: %v; want conflict", err)
	}
	// The second lease runs out too: no attempts left, the task is dead.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := q.Next(ctx, trellis.NextRequest{Queue: "al", Worker: "agent-c", LeaseSeconds: 1}); err != nil {
			t.Fatal(err)
		}
		task, err := q.Show(ctx, added.TaskID)
		if err != nil {
			t.Fatal(err)
		}
		if task.Status == trellis.StatusDead {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("task is %s; want dead after its second lease ran out", task.Status)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Heartbeats keep an agent's claim past its lease; an operator's release
// gives the task back at once (not an attempt); a foreign worker's
// heartbeat is refused; unknown and finished tasks give clear errors.
func TestAgentLeaseHeartbeatAndRelease(t *testing.T) {
	t.Parallel()
	q, b := setupQueue(t)
	ctx := ctxT(t)
	other := taskqueue.New(b.Store, taskqueue.Config{})
	added, err := q.Add(ctx, trellis.AddTaskRequest{Queue: "hb", Objective: "kept"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := q.Next(ctx, trellis.NextRequest{Queue: "hb", Worker: "agent-a", LeaseSeconds: 5})
	if err != nil || got == nil {
		t.Fatalf("claim: %+v, %v", got, err)
	}
	// Heartbeat through two lease periods (each heartbeat on another
	// process's handler) while another agent keeps asking.
	end := time.Now().Add(7 * time.Second) // past the lease's first end
	last := *got.Lease.ExpiresAt
	for time.Now().Before(end) {
		hb, err := other.Heartbeat(ctx, trellis.HeartbeatRequest{TaskID: added.TaskID, Worker: "agent-a"})
		if err != nil {
			t.Fatalf("heartbeat: %v", err)
		}
		if !hb.Lease.ExpiresAt.After(last) || hb.ClaimedBy != "agent-a" {
			t.Fatalf("heartbeat did not extend the lease: %+v (was %s)", hb.Lease, last)
		}
		last = *hb.Lease.ExpiresAt
		if stolen, err := other.Next(ctx, trellis.NextRequest{Queue: "hb", Worker: "agent-b"}); err != nil || stolen != nil {
			t.Fatalf("a heartbeated claim was taken: %+v, %v", stolen, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if _, err := q.Heartbeat(ctx, trellis.HeartbeatRequest{TaskID: added.TaskID, Worker: "agent-b"}); trellis.ErrorCode(err) != trellis.CodeConflict || !strings.Contains(err.Error(), "agent-a") {
		t.Fatalf("foreign heartbeat: %v; want a conflict naming the claimant", err)
	}
	for _, bad := range []trellis.HeartbeatRequest{{TaskID: "nope", Worker: "a"}, {TaskID: added.TaskID, Worker: ""}, {TaskID: added.TaskID, Worker: "bad worker"}} {
		if _, err := q.Heartbeat(ctx, bad); trellis.ErrorCode(err) != trellis.CodeInvalid {
			t.Fatalf("heartbeat %+v: %v; want invalid", bad, err)
		}
	}
	unknown := "01JZZZZZZZZZZZZZZZZZZZZZZZ"
	if _, err := q.Heartbeat(ctx, trellis.HeartbeatRequest{TaskID: unknown, Worker: "a"}); trellis.ErrorCode(err) != trellis.CodeNotFound {
		t.Fatalf("heartbeat of an unknown task: %v; want not_found", err)
	}
	if _, err := q.ReleaseClaim(ctx, trellis.ReleaseRequest{TaskID: unknown}); trellis.ErrorCode(err) != trellis.CodeNotFound {
		t.Fatalf("release of an unknown task: %v; want not_found", err)
	}
	if _, err := q.ReleaseClaim(ctx, trellis.ReleaseRequest{TaskID: added.TaskID, Reason: strings.Repeat("x", trellis.MaxItemBytes+1)}); trellis.ErrorCode(err) != trellis.CodeInvalid {
		t.Fatalf("oversized reason: %v; want invalid", err)
	}

	rel, err := q.ReleaseClaim(ctx, trellis.ReleaseRequest{TaskID: added.TaskID, Actor: "ops", Reason: "agent is gone"})
	if err != nil || rel.Status != trellis.StatusQueued || rel.Attempts != 0 || rel.Lease != nil {
		t.Fatalf("release: %+v, %v", rel, err)
	}
	if _, err := q.ReleaseClaim(ctx, trellis.ReleaseRequest{TaskID: added.TaskID}); trellis.ErrorCode(err) != trellis.CodeConflict {
		t.Fatalf("release of a queued task: %v; want conflict", err)
	}
	if _, err := q.Heartbeat(ctx, trellis.HeartbeatRequest{TaskID: added.TaskID, Worker: "agent-a"}); trellis.ErrorCode(err) != trellis.CodeConflict {
		t.Fatalf("heartbeat after release: %v; want conflict", err)
	}
	re := nextUntil(t, other, "hb", "agent-b", 30*time.Second)
	if re == nil || re.TaskID != added.TaskID || re.Attempts != 1 {
		t.Fatalf("after release: %+v; want it claimed again as attempt 1", re)
	}
	if _, err := other.Done(ctx, trellis.DoneRequest{TaskID: added.TaskID, Worker: "agent-b", WhatWasDone: "did it"}); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Heartbeat(ctx, trellis.HeartbeatRequest{TaskID: added.TaskID, Worker: "agent-b"}); trellis.ErrorCode(err) != trellis.CodeConflict || !strings.Contains(err.Error(), "done") {
		t.Fatalf("heartbeat of a finished task: %v; want a conflict saying it is done", err)
	}
	if h := historyTypes(t, q, added.TaskID); strings.Contains(h, "lease_expired") || !strings.Contains(h, "lease_extended") || !strings.Contains(h, "released claimed completed") {
		t.Fatalf("history %q", h)
	}
}

// A queue's agent lease is the lease of its queue next claims made
// without one: set on one process, every process's next uses it once the
// call returns (their cached controls are at most FlowCacheTTL old); a
// claim's own lease wins; 0 restores the default; bad values are refused
// with nothing recorded.
func TestQueueAgentLease(t *testing.T) {
	t.Parallel()
	q, b := setupQueue(t)
	ctx := ctxT(t)
	other := taskqueue.New(b.Store, taskqueue.Config{}) // another server
	const queue = "agents"
	// The other process reads the controls first (and caches them).
	if c, _, err := other.Controls(ctx, queue); err != nil || c.AgentLease() != trellis.DefaultAgentLease {
		t.Fatalf("controls before: %+v, %v; want the default agent lease", c, err)
	}
	if _, err := other.Next(ctx, trellis.NextRequest{Queue: queue, Worker: "warm"}); err != nil {
		t.Fatal(err)
	}
	c, err := q.SetAgentLease(ctx, queue, "ops", 90*time.Second)
	if err != nil || c.AgentLeaseSeconds != 90 || c.AgentLease() != 90*time.Second {
		t.Fatalf("set: %+v, %v", c, err)
	}
	for i := 0; i < 2; i++ {
		if _, err := q.Add(ctx, trellis.AddTaskRequest{Queue: queue, Objective: "work"}); err != nil {
			t.Fatal(err)
		}
	}
	got := nextUntil(t, other, queue, "agent-a", 30*time.Second)
	if got == nil || got.Lease == nil || got.Lease.LeaseMS != 90000 {
		t.Fatalf("claim without a lease: %+v; want the queue's 90 s", got)
	}
	own := nextLeased(t, other, queue, "agent-b", 5)
	if own == nil || own.Lease.LeaseMS != 5000 {
		t.Fatalf("claim with its own lease: %+v; want 5 s", own)
	}
	bad := []time.Duration{-time.Second, 500 * time.Millisecond, 25 * time.Hour, 1000 * 24 * time.Hour}
	for _, d := range bad {
		if _, err := q.SetAgentLease(ctx, queue, "ops", d); trellis.ErrorCode(err) != trellis.CodeInvalid || !strings.Contains(err.Error(), "lease_seconds") {
			t.Fatalf("agent lease %s: %v; want invalid naming lease_seconds", d, err)
		}
	}
	if _, err := q.SetAgentLease(ctx, "no such queue!", "ops", time.Minute); trellis.ErrorCode(err) != trellis.CodeInvalid {
		t.Fatalf("a malformed queue name: %v; want invalid", err)
	}
	if c, _, err := other.Controls(ctx, queue); err != nil || c.AgentLeaseSeconds != 90 {
		t.Fatalf("after the refusals: %+v, %v; want the 90 s kept", c, err)
	}
	// A queue nobody used yet takes its agent lease before its first task.
	if c, err := q.SetAgentLease(ctx, "fresh", "ops", time.Hour); err != nil || c.AgentLease() != time.Hour {
		t.Fatalf("a new queue: %+v, %v", c, err)
	}
	if c, err := q.SetAgentLease(ctx, queue, "ops", 0); err != nil || c.AgentLeaseSeconds != 0 || c.AgentLease() != trellis.DefaultAgentLease {
		t.Fatalf("reset: %+v, %v", c, err)
	}
	if _, err := q.Add(ctx, trellis.AddTaskRequest{Queue: queue, Objective: "more"}); err != nil {
		t.Fatal(err)
	}
	if got := nextUntil(t, other, queue, "agent-c", 30*time.Second); got == nil || got.Lease.LeaseMS != trellis.DefaultAgentLease.Milliseconds() {
		t.Fatalf("claim after the reset: %+v; want the default lease", got)
	}
}

// The sweeper's expiry (ExpireAgentLease) of a claim nobody's dispatch
// reveals: before the lease's end it records nothing and tells the end;
// after it, two servers racing record one lease_expired; a claim whose
// attempts are used up is dead; a worker pool's claim is not the
// sweeper's.
func TestExpireAgentLeaseOnce(t *testing.T) {
	t.Parallel()
	q, b := setupQueue(t)
	ctx := ctxT(t)
	other := taskqueue.New(b.Store, taskqueue.Config{})
	added, err := q.Add(ctx, trellis.AddTaskRequest{Queue: "sw", Objective: "abandoned", MaxAttempts: 2})
	if err != nil {
		t.Fatal(err)
	}
	got := nextLeased(t, q, "sw", "gone", 2)
	if got == nil || got.TaskID != added.TaskID {
		t.Fatalf("claim: %+v", got)
	}
	until, err := q.ExpireAgentLease(ctx, added.TaskID)
	if err != nil || !until.Equal(*got.Lease.ExpiresAt) {
		t.Fatalf("before the lease's end: %s, %v; want its end %s", until, err, got.Lease.ExpiresAt)
	}
	for time.Now().Before(got.Lease.ExpiresAt.Add(100 * time.Millisecond)) {
		time.Sleep(50 * time.Millisecond)
	}
	errs := make(chan error, 2)
	for _, h := range []*taskqueue.Handler{q, other} {
		go func() { _, err := h.ExpireAgentLease(ctx, added.TaskID); errs <- err }()
	}
	for i := 0; i < 2; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if h := historyTypes(t, q, added.TaskID); h != "added claimed lease_expired" {
		t.Fatalf("history %q; want one lease_expired", h)
	}
	// Claimed again (through the dispatch) and abandoned again: dead.
	again := nextLeased(t, other, "sw", "gone-too", 1)
	if again == nil || again.Attempts != 2 {
		t.Fatalf("claim again: %+v", again)
	}
	for time.Now().Before(again.Lease.ExpiresAt.Add(100 * time.Millisecond)) {
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := other.ExpireAgentLease(ctx, added.TaskID); err != nil {
		t.Fatal(err)
	}
	if task, err := q.Show(ctx, added.TaskID); err != nil || task.Status != trellis.StatusDead {
		t.Fatalf("after the second lease: %+v, %v; want dead", task, err)
	}
	// A pool's claim and an unknown task: nothing to do.
	pooled, err := q.Add(ctx, trellis.AddTaskRequest{Queue: "sw", Objective: "pool"})
	if err != nil {
		t.Fatal(err)
	}
	task, _, err := q.ClaimNext(ctx, "sw", "pool/0", true, 10*time.Second)
	if err != nil || task == nil || task.TaskID != pooled.TaskID {
		t.Fatalf("pool claim: %+v, %v", task, err)
	}
	if until, err := q.ExpireAgentLease(ctx, pooled.TaskID); err != nil || !until.IsZero() {
		t.Fatalf("a pool's claim: %s, %v; want nothing", until, err)
	}
	if until, err := q.ExpireAgentLease(ctx, "01JZZZZZZZZZZZZZZZZZZZZZZZ"); err != nil || !until.IsZero() {
		t.Fatalf("an unknown task: %s, %v; want nothing", until, err)
	}
	if h := historyTypes(t, q, pooled.TaskID); h != "added claimed" {
		t.Fatalf("pool task history %q", h)
	}
}
