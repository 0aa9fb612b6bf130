package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/client"
	"github.com/trellis/trellis/handlers/natsapi"
)

// ledgerExec is a --exec command that appends its task id to a ledger
// file (one line per execution, O_APPEND) before doing its work.
func ledgerExec(ledger, then string) string {
	return fmt.Sprintf(`echo "$TRELLIS_TASK_ID" >> %s; %s`, ledger, then)
}

// readLedger returns how many times each task id reached a handler.
func readLedger(t *testing.T, ledger string) map[string]int {
	t.Helper()
	b, err := os.ReadFile(ledger)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	runs := map[string]int{}
	for _, line := range strings.Fields(string(b)) {
		runs[line]++
	}
	return runs
}

// TestCancelledWhileQueuedNeverRunsInWorkerProcess: a queue is paused,
// half of its tasks are cancelled, the queue resumes, and a separate
// `trellis worker --exec` process (its own cache: every dispatch is a
// miss) works it. No cancelled task reaches the command; every other one
// runs once.
func TestCancelledWhileQueuedNeverRunsInWorkerProcess(t *testing.T) {
	t.Parallel()
	srv, url := queueServer(t)
	svc := srv.Service()
	ctx := context.Background()
	if _, err := svc.Control(ctx, trellis.ControlRequest{Queue: "bad", Action: "pause"}); err != nil {
		t.Fatal(err)
	}
	ledger := filepath.Join(t.TempDir(), "ledger")
	startProc(t, workerArgs(url, "bad", "wc", "--concurrency", "4", "--exec", ledgerExec(ledger, "true"))...)
	ids := addTasks(t, svc, "bad", 20, 3)
	var keep, cancelled []string
	for i, id := range ids {
		if i%2 == 0 {
			keep = append(keep, id)
			continue
		}
		if _, err := svc.Cancel(ctx, trellis.CancelRequest{TaskID: id, Reason: "bad input"}); err != nil {
			t.Fatal(err)
		}
		cancelled = append(cancelled, id)
	}
	if _, err := svc.Control(ctx, trellis.ControlRequest{Queue: "bad", Action: "resume"}); err != nil {
		t.Fatal(err)
	}
	waitAll(t, svc, keep, trellis.StatusDone, 60*time.Second)
	runs := readLedger(t, ledger)
	for _, id := range cancelled {
		if runs[id] != 0 {
			t.Errorf("task %s was cancelled while queued but ran %d times", id, runs[id])
		}
	}
	for _, id := range keep {
		if runs[id] != 1 {
			t.Errorf("task %s ran %d times; want 1", id, runs[id])
		}
	}
	waitAll(t, svc, cancelled, trellis.StatusCancelled, 10*time.Second)
}

// authServe starts `trellis serve --auth` as a process and returns its
// data dir arguments with the admin token, its NATS URL, and a function
// creating a worker token for a queue.
func authServe(t *testing.T) (admin []string, url string, workerToken func(name, queue string) string) {
	t.Helper()
	data := t.TempDir()
	info, _, _ := serveProc(t, data, "--auth")
	raw, err := os.ReadFile(filepath.Join(data, "auth", "admin.token"))
	if err != nil {
		t.Fatal(err)
	}
	admin = []string{"--data", data, "--token", strings.TrimSpace(string(raw))}
	return admin, info.NATSURL, func(name, queue string) string {
		code, out, errs := cli(t, append(admin, "token", "create", "--name", name, "--role", "worker", "--queue", queue, "--json")...)
		if code != 0 {
			t.Fatalf("token create: exit %d %s", code, errs)
		}
		var created map[string]string
		mustJSON(t, out, &created)
		return created["token"]
	}
}

// cliTask runs a CLI command printing a task as JSON and returns it.
func cliTask(t *testing.T, args ...string) trellis.Task {
	t.Helper()
	code, out, errs := cli(t, append(args, "--json")...)
	if code != 0 {
		t.Fatalf("%v: exit %d %s", args, code, errs)
	}
	var task trellis.Task
	mustJSON(t, out, &task)
	return task
}

// waitTask polls `queue show` until the task has status s.
func waitTask(t *testing.T, admin []string, id string, s trellis.Status, within time.Duration) trellis.Task {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		task := cliTask(t, append(admin, "queue", "show", id)...)
		if task.Status == s {
			return task
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s is %s after %s; want %s", id, task.Status, within, s)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// queueLease returns a queue's lease as its controls say.
func queueLease(t *testing.T, admin []string, queue string) time.Duration {
	t.Helper()
	code, out, errs := cli(t, append(admin, "queue", "controls", queue, "--json")...)
	if code != 0 {
		t.Fatalf("queue controls: exit %d %s", code, errs)
	}
	var c trellis.QueueControls
	mustJSON(t, out, &c)
	return c.Lease(time.Now())
}

// TestRemotePoolsFollowTheQueueLease: a token pool runs a task under a
// 10 s lease; a second token pool starts with --lease 2s, which makes 2 s
// the queue's lease. The first pool follows it (heartbeats for 2 s), so
// its claim never expires and the task runs once. A third pool started
// without --lease keeps the queue's 2 s.
func TestRemotePoolsFollowTheQueueLease(t *testing.T) {
	t.Parallel()
	admin, url, workerToken := authServe(t)
	tokA, tokB := workerToken("wa", "lq"), workerToken("wb", "lq")
	ledger := filepath.Join(t.TempDir(), "ledger")
	task := cliTask(t, append(admin, "queue", "add", "--queue", "lq", "--objective", "slow", "--max-attempts", "3")...)
	a := startProc(t, "worker", "--nats-url", url, "--token", tokA, "--queue", "lq", "--lease", "10s", "--metrics-addr", "",
		"--exec", ledgerExec(ledger, "sleep 7"))
	waitTask(t, admin, task.TaskID, trellis.StatusClaimed, 60*time.Second)
	b := startProc(t, "worker", "--nats-url", url, "--token", tokB, "--queue", "lq", "--lease", "2s", "--metrics-addr", "",
		"--exec", ledgerExec(ledger, "true"))
	waitTask(t, admin, task.TaskID, trellis.StatusDone, 60*time.Second)
	if runs := readLedger(t, ledger)[task.TaskID]; runs != 1 {
		t.Fatalf("the task ran %d times; want 1 (the first pool's claim expired under the new lease)", runs)
	}
	if l := queueLease(t, admin, "lq"); l != 2*time.Second {
		t.Fatalf("queue lease %s after a pool asked for 2s", l)
	}
	for _, p := range []*proc{a, b} {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		_ = p.wait(t, 30*time.Second)
	}
	// A pool without --lease keeps the queue's lease.
	c := startProc(t, "worker", "--nats-url", url, "--token", tokA, "--queue", "lq", "--metrics-addr", "", "--exec", ledgerExec(ledger, "true"))
	next := cliTask(t, append(admin, "queue", "add", "--queue", "lq", "--objective", "after")...)
	waitTask(t, admin, next.TaskID, trellis.StatusDone, 60*time.Second)
	if l := queueLease(t, admin, "lq"); l != 2*time.Second {
		t.Fatalf("queue lease %s after a pool started without --lease; want the queue's 2s kept", l)
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	_ = c.wait(t, 30*time.Second)
}

// TestAbandonedRequestsAreNotApplied: a worker's claim and done requests
// that reach a server after the worker gave up on them (their deadline
// passed: held in a reconnect buffer, replayed to a restarted server) are
// refused without being applied: no task is claimed for nobody, and an
// outcome the worker was told was not recorded is not recorded later. A
// request with a malformed deadline is refused; one in time is applied.
func TestAbandonedRequestsAreNotApplied(t *testing.T) {
	t.Parallel()
	srv, url := queueServer(t)
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	client := client.NewAPI(nc, 10*time.Second)
	ctx := context.Background()
	ids := addTasks(t, client, "default", 2, 3)
	held, err := client.WorkerSource().Claim(ctx, "default", "w/1", 5*time.Second)
	if err != nil || held == nil || held.Task == nil || held.Task.TaskID != ids[0] {
		t.Fatalf("claim: %+v, %v", held, err)
	}
	// The requests as the worker sent them, arriving after their deadline.
	late := func(op string, body any, deadline string) string {
		data, _ := json.Marshal(body)
		m := nats.NewMsg(natsapi.Prefix + op)
		m.Data = data
		m.Header.Set(natsapi.HeaderDeadline, deadline)
		reply, err := nc.RequestMsg(m, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return string(reply.Data)
	}
	gone := time.Now().Add(-time.Second).UTC().Format(time.RFC3339Nano)
	if r := late(natsapi.OpQueueClaim, map[string]any{"queue": "default", "worker": "gone/0", "wait_ms": 500}, gone); !strings.Contains(r, "after its deadline") {
		t.Fatalf("late claim answered %s", r)
	}
	if r := late(natsapi.OpQueueDone, trellis.DoneRequest{TaskID: ids[0], Worker: "w/1", WhatWasDone: "given up"}, gone); !strings.Contains(r, "after its deadline") {
		t.Fatalf("late done answered %s", r)
	}
	if r := late(natsapi.OpQueueDone, trellis.DoneRequest{TaskID: ids[0], Worker: "w/1", WhatWasDone: "x"}, "yesterday"); !strings.Contains(r, `"invalid"`) {
		t.Fatalf("done with a malformed deadline answered %s", r)
	}
	svc := srv.Service()
	if t1, err := svc.Show(ctx, ids[0]); err != nil || t1.Status != trellis.StatusClaimed || t1.ClaimedBy != "w/1" {
		t.Fatalf("task 1 after the abandoned done: %+v, %v", t1, err)
	}
	if t2, err := svc.Show(ctx, ids[1]); err != nil || t2.Status != trellis.StatusQueued || t2.Attempts != 0 {
		t.Fatalf("task 2 after the abandoned claim: %+v, %v", t2, err)
	}
	soon := time.Now().Add(20 * time.Second).UTC().Format(time.RFC3339Nano)
	if r := late(natsapi.OpQueueDone, trellis.DoneRequest{TaskID: ids[0], Worker: "w/1", WhatWasDone: "in time"}, soon); !strings.Contains(r, `"done"`) {
		t.Fatalf("done in time answered %s", r)
	}
}

// TestBulkAddKeepsOrder: `queue add --from` (a CLI process of its own,
// through a running server) stores its tasks in the file's order with
// ascending ids, and a `trellis worker` process with one slot runs them in
// that order.
func TestBulkAddKeepsOrder(t *testing.T) {
	t.Parallel()
	_, url := queueServer(t)
	dir := t.TempDir()
	var b strings.Builder
	const n = 60
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, `{"objective": "unit %d"}`+"\n", i)
	}
	plan := filepath.Join(dir, "plan.jsonl")
	if err := os.WriteFile(plan, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := cli(t, "queue", "add", "--nats-url", url, "--from", plan, "--queue", "ordered", "--json")
	var res trellis.AddManyResult
	mustJSON(t, out, &res)
	if code != 0 || len(res.Tasks) != n || len(res.Errors) != 0 {
		t.Fatalf("add --from: exit %d, %d tasks, %v; %s", code, len(res.Tasks), res.Errors, errs)
	}
	for i := 1; i < n; i++ {
		if res.Tasks[i].TaskID <= res.Tasks[i-1].TaskID {
			t.Fatalf("task %d's id %s does not follow task %d's %s", i, res.Tasks[i].TaskID, i-1, res.Tasks[i-1].TaskID)
		}
	}
	ledger := filepath.Join(dir, "ledger")
	startProc(t, workerArgs(url, "ordered", "wo", "--exec", ledgerExec(ledger, "true"))...)
	deadline := time.Now().Add(60 * time.Second)
	for {
		raw, _ := os.ReadFile(ledger)
		ran := strings.Fields(string(raw))
		if len(ran) == n {
			for i, id := range ran {
				if id != res.Tasks[i].TaskID {
					t.Fatalf("run %d was task %s (%s); want %s (unit %d): claims do not follow add order", i, id, objectiveOf(res, id), res.Tasks[i].TaskID, i)
				}
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d tasks ran", len(ran), n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func objectiveOf(res trellis.AddManyResult, id string) string {
	for _, task := range res.Tasks {
		if task.TaskID == id {
			return task.Objective
		}
	}
	return "?"
}

// TestRevokedWorkerExits: a token worker process whose token is revoked
// stops with exit 6, naming the token.
func TestRevokedWorkerExits(t *testing.T) {
	t.Parallel()
	admin, url, workerToken := authServe(t)
	tok := workerToken("doomed", "rq")
	p := startProc(t, "worker", "--nats-url", url, "--token", tok, "--queue", "rq", "--metrics-addr", "", "--exec", "true")
	task := cliTask(t, append(admin, "queue", "add", "--queue", "rq", "--objective", "before the revoke")...)
	waitTask(t, admin, task.TaskID, trellis.StatusDone, 60*time.Second)
	if code, _, errs := cli(t, append(admin, "token", "revoke", "doomed")...); code != 0 {
		t.Fatalf("revoke: exit %d %s", code, errs)
	}
	err := p.wait(t, 60*time.Second)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 6 {
		t.Fatalf("revoked worker exited with %v; want exit 6", err)
	}
	if s := p.stderr.String(); !strings.Contains(s, `"doomed"`) || !strings.Contains(s, "revoked") {
		t.Fatalf("the revoked worker's last words do not name its token as revoked:\n%s", s)
	}
}

// TestTaskTimeouts: a `trellis worker` process stops a command that runs
// past the task's --timeout (or its own --task-timeout for a task without
// one) and fails the attempt with a timeout error; the task is retried
// per its max attempts, then dead.
func TestTaskTimeouts(t *testing.T) {
	t.Parallel()
	srv, url := queueServer(t)
	svc := srv.Service()
	ctx := context.Background()
	own, err := svc.Add(ctx, trellis.AddTaskRequest{Queue: "hung", Objective: "hangs, own timeout", Timeout: "1s", MaxAttempts: 2})
	if err != nil {
		t.Fatal(err)
	}
	if own.TimeoutMS != 1000 {
		t.Fatalf("task timeout = %d ms; want 1000", own.TimeoutMS)
	}
	pools, err := svc.Add(ctx, trellis.AddTaskRequest{Queue: "hung", Objective: "hangs, the pool's timeout", MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"0s", "500ms", "25h", "soon"} {
		if _, err := svc.Add(ctx, trellis.AddTaskRequest{Queue: "hung", Objective: "x", Timeout: bad}); trellis.ErrorCode(err) != trellis.CodeInvalid {
			t.Fatalf("timeout %q: %v; want invalid", bad, err)
		}
	}
	ledger := filepath.Join(t.TempDir(), "ledger")
	startProc(t, workerArgs(url, "hung", "wt", "--concurrency", "2", "--task-timeout", "3s", "--backoff", "100ms", "--exec", ledgerExec(ledger, "sleep 300"))...)
	waitAll(t, svc, []string{own.TaskID, pools.TaskID}, trellis.StatusDead, 60*time.Second)
	runs := readLedger(t, ledger)
	for id, want := range map[string]int{own.TaskID: 2, pools.TaskID: 1} {
		task, err := svc.Show(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(task.LastError, "timeout") || runs[id] != want {
			t.Fatalf("task %q: last error %q after %d runs; want a timeout after %d", task.Objective, task.LastError, runs[id], want)
		}
	}
}
