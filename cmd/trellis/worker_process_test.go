package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/client"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/server"
	"github.com/trellis/trellis/taskqueue"
)

// These tests run real `trellis` processes (built once) against a real
// server: workers killed with SIGKILL, drained with SIGTERM, and a server
// restarted under them.

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

func trellisBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		binPath = filepath.Join(buildDir, "trellis")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// proc is a running trellis process.
type proc struct {
	cmd    *exec.Cmd
	stderr *bytes.Buffer
	done   chan error
}

func startProc(t *testing.T, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(trellisBinary(t), args...)
	p := &proc{cmd: cmd, stderr: &bytes.Buffer{}, done: make(chan error, 1)}
	cmd.Stderr = &lockedWriter{w: p.stderr}
	cmd.Stdout = &lockedWriter{w: &bytes.Buffer{}}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("trellis %v stderr:\n%s", args, p.stderr.String())
		}
	})
	return p
}

type lockedWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func (p *proc) wait(t *testing.T, within time.Duration) error {
	t.Helper()
	select {
	case err := <-p.done:
		p.done <- err
		return err
	case <-time.After(within):
		t.Fatalf("process did not exit within %s", within)
		return nil
	}
}

// queueServer starts Trellis in-process with its NATS reachable on loopback.
func queueServer(t *testing.T) (*server.Server, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := server.Start(ctx, server.Config{DataDir: t.TempDir(), NATSAddr: "127.0.0.1:0", ServeAPI: true, SyncInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv, srv.Info().NATSURL
}

func addTasks(t *testing.T, q trellis.QueueService, queue string, n, maxAttempts int) []string {
	t.Helper()
	var ids []string
	for i := 0; i < n; i++ {
		task, err := q.Add(context.Background(), trellis.AddTaskRequest{Queue: queue, Objective: fmt.Sprintf("task %d", i), MaxAttempts: maxAttempts})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, task.TaskID)
	}
	return ids
}

// waitAll polls until every task has status s.
func waitAll(t *testing.T, q trellis.QueueService, ids []string, s trellis.Status, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		n := 0
		for _, id := range ids {
			task, err := q.Show(context.Background(), id)
			if err == nil && task.Status == s {
				n++
			}
		}
		if n == len(ids) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d tasks are %s after %s", n, len(ids), s, within)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// eventCounts counts events per type and task; a claim carried by its
// outcome counts as a claimed event.
func eventCounts(t *testing.T, store *events.Store) map[string]map[string]int {
	t.Helper()
	out := map[string]map[string]int{}
	err := store.Read(context.Background(), events.StreamQueue, "", 0, func(rec events.Recorded) error {
		for _, r := range taskqueue.ExpandClaims([]events.Recorded{rec}) {
			if out[r.Type] == nil {
				out[r.Type] = map[string]int{}
			}
			out[r.Type][r.AggregateID]++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func workerArgs(url, queue, id string, extra ...string) []string {
	return append([]string{"worker", "--nats-url", url, "--queue", queue, "--worker-id", id, "--metrics-addr", ""}, extra...)
}

// TestWorkerProcessesSurviveSIGKILL: 3 worker processes × concurrency 3
// over 300 tasks; worker w0 (whose command takes 2 s, so its claims are
// held for a while) is killed with SIGKILL once the board shows it holding
// a claim. Every task ends done with exactly one completion; at least one
// task was taken over, and every task w0 held went lease_expired, then was
// claimed and completed by another worker.
func TestWorkerProcessesSurviveSIGKILL(t *testing.T) {
	t.Parallel()
	srv, url := queueServer(t)
	svc := srv.Service()
	ids := addTasks(t, svc, "fleet", 300, 0)
	fast := `sleep 0.05; echo '{"what_was_done":"processed","steps_used":1}'`
	slow := `sleep 2; echo '{"what_was_done":"processed slowly","steps_used":1}'`
	var procs []*proc
	for i := 0; i < 3; i++ {
		cmd := fast
		if i == 0 {
			cmd = slow
		}
		procs = append(procs, startProc(t, workerArgs(url, "fleet", "w"+strconv.Itoa(i), "--concurrency", "3", "--exec", cmd, "--lease", "2s")...))
	}
	// Kill w0 only while it holds a claim.
	deadline := time.Now().Add(30 * time.Second)
	for held := ""; held == ""; {
		l, err := svc.List(context.Background(), trellis.ListRequest{Queue: "fleet", Status: trellis.StatusClaimed})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range l.Tasks {
			if strings.HasPrefix(r.ClaimedBy, "w0/") {
				held = r.TaskID
			}
		}
		if held == "" && time.Now().After(deadline) {
			t.Fatal("worker w0 never held a claim")
		}
		if held == "" {
			time.Sleep(10 * time.Millisecond)
		}
	}
	if err := procs[0].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitAll(t, svc, ids, trellis.StatusDone, 90*time.Second)
	counts := eventCounts(t, srv.Store())
	for _, id := range ids {
		if n := counts[taskqueue.Completed][id]; n != 1 {
			t.Fatalf("task %s has %d completion events", id, n)
		}
	}
	claims := 0
	for _, n := range counts[taskqueue.Claimed] {
		claims += n
	}
	t.Logf("300 tasks, %d claims: %d re-executions after the SIGKILL, %d lease expiries recorded",
		claims, claims-300, len(counts[taskqueue.LeaseExpired]))
	if claims-300 != len(counts[taskqueue.LeaseExpired]) {
		t.Fatalf("%d re-executions but %d lease expiries: every re-execution must follow an expired lease", claims-300, len(counts[taskqueue.LeaseExpired]))
	}
	// The tasks w0 held when it died: claimed by w0, never completed by it.
	takenOver := 0
	for _, id := range ids {
		recs, err := svc.Audit(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		recs = taskqueue.ExpandClaims(recs)
		var hist []string
		heldByW0, starved := false, 0
		for i, r := range recs {
			hist = append(hist, r.Type+"/"+r.Actor)
			if r.Type == taskqueue.Claimed && strings.HasPrefix(r.Actor, "w0/") {
				heldByW0 = true
				// The killed worker's claim ends in an expired lease,
				// never in an outcome of its own.
				if i+1 >= len(recs) || recs[i+1].Type != taskqueue.LeaseExpired {
					t.Fatalf("history of a task w0 held when it was killed: %v (its claim must end in lease_expired)", hist)
				}
			}
			if r.Type == taskqueue.LeaseExpired && i > 0 && !strings.HasPrefix(recs[i-1].Actor, "w0/") {
				starved++
			}
		}
		if !heldByW0 {
			if starved > 0 {
				// A live worker starved of CPU for a whole lease (a
				// loaded machine) loses its claim like a dead one:
				// at-least-once, still one completion.
				t.Logf("a live worker's lease expired (a busy machine): %v", hist)
			}
			continue
		}
		takenOver++
		last := recs[len(recs)-1]
		if last.Type != taskqueue.Completed || strings.HasPrefix(last.Actor, "w0/") {
			t.Fatalf("history of a task w0 held when it was killed: %v (want it completed by another worker)", hist)
		}
	}
	if takenOver == 0 {
		t.Fatal("no task was taken over from the killed worker")
	}
	t.Logf("%d tasks held by the killed worker were taken over", takenOver)
	for _, p := range procs[1:] {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		if err := p.wait(t, 20*time.Second); err != nil {
			t.Fatalf("worker exit after SIGTERM: %v", err)
		}
	}
}

// TestWorkerAlwaysFailingGoesDead: a command that always fails is tried 3
// times with growing backoff, then the task is dead and can be retried.
func TestWorkerAlwaysFailingGoesDead(t *testing.T) {
	t.Parallel()
	srv, url := queueServer(t)
	svc := srv.Service()
	ids := addTasks(t, svc, "broken", 1, 3)
	startProc(t, workerArgs(url, "broken", "wf", "--exec", "echo boom >&2; exit 3", "--backoff", "400ms")...)
	waitAll(t, svc, ids, trellis.StatusDead, 30*time.Second)
	recs, err := svc.Audit(context.Background(), ids[0])
	if err != nil {
		t.Fatal(err)
	}
	recs = taskqueue.ExpandClaims(recs)
	var types []string
	var claimed []time.Time
	for _, r := range recs {
		types = append(types, r.Type)
		if r.Type == taskqueue.Claimed {
			claimed = append(claimed, r.Time)
		}
	}
	if fmt.Sprint(types) != "[added claimed attempt_failed claimed attempt_failed claimed dead]" {
		t.Fatalf("history = %v", types)
	}
	g1, g2 := claimed[1].Sub(claimed[0]), claimed[2].Sub(claimed[1])
	t.Logf("attempts at +0, +%s, +%s (backoff 400 ms doubling, ±20%% jitter)", g1.Round(time.Millisecond), (g1 + g2).Round(time.Millisecond))
	if g1 < 320*time.Millisecond || g2 < 640*time.Millisecond {
		t.Fatalf("backoff not visible in the event times: gaps %s, %s", g1, g2)
	}
	dead, _ := svc.Show(context.Background(), ids[0])
	if dead.LastError == "" || dead.Checkpoint == nil || dead.Checkpoint.Error == "" {
		t.Fatalf("dead task lacks its error: %+v", dead)
	}
	l, err := svc.List(context.Background(), trellis.ListRequest{Status: trellis.StatusDead})
	if err != nil || len(l.Tasks) != 1 {
		t.Fatalf("list --status dead = %+v, %v", l, err)
	}
}

// TestWorkerSIGTERMDrain: SIGTERM with commands in flight: the worker stops
// claiming, waits the grace period, releases what is left; nothing stays
// claimed.
func TestWorkerSIGTERMDrain(t *testing.T) {
	t.Parallel()
	srv, url := queueServer(t)
	svc := srv.Service()
	ids := addTasks(t, svc, "drain", 4, 0)
	p := startProc(t, workerArgs(url, "drain", "wd", "--concurrency", "2", "--exec", "sleep 30", "--grace", "1s")...)
	deadline := time.Now().Add(20 * time.Second)
	for {
		l, err := svc.List(context.Background(), trellis.ListRequest{Queue: "drain", Status: trellis.StatusClaimed})
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Tasks) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("worker never claimed 2 tasks")
		}
		time.Sleep(50 * time.Millisecond)
	}
	start := time.Now()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if err := p.wait(t, 20*time.Second); err != nil {
		t.Fatalf("worker exit: %v", err)
	}
	t.Logf("drained in %s", time.Since(start).Round(time.Millisecond))
	waitAll(t, svc, ids, trellis.StatusQueued, 5*time.Second)
	if n := len(eventCounts(t, srv.Store())[taskqueue.Released]); n != 2 {
		t.Fatalf("%d release events; want 2", n)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestServeRestartMidRun: `trellis serve` (a real process) is restarted
// while workers run; the workers reconnect by themselves and no task is
// lost or completed twice.
func TestServeRestartMidRun(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	addr := freeAddr(t)
	serve := func() *proc {
		p := startProc(t, "serve", "--data", data, "--nats-addr", addr, "--http-addr", "")
		deadline := time.Now().Add(30 * time.Second)
		for {
			if info, _ := server.ReadInfo(data); info != nil {
				return p
			}
			if time.Now().After(deadline) {
				t.Fatalf("serve did not start:\n%s", p.stderr.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	first := serve()
	url := "nats://" + addr
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	client := client.NewAPI(nc, 10*time.Second)
	ids := addTasks(t, client, "restart", 100, 0)
	for i := 0; i < 2; i++ {
		startProc(t, workerArgs(url, "restart", "wr"+strconv.Itoa(i), "--concurrency", "2", "--exec", "sleep 0.05", "--lease", "3s")...)
	}
	// Restart once some work is done.
	for {
		l, err := client.List(context.Background(), trellis.ListRequest{Queue: "restart", Status: trellis.StatusDone})
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Tasks) >= 15 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = first.cmd.Process.Signal(syscall.SIGTERM)
	if err := first.wait(t, 30*time.Second); err != nil {
		t.Fatalf("serve exit: %v", err)
	}
	serve()
	waitAll(t, client, ids, trellis.StatusDone, 90*time.Second)
	store, err := events.NewStore(nc, events.StoreConfig{})
	if err != nil {
		t.Fatal(err)
	}
	counts := eventCounts(t, store)
	for _, id := range ids {
		if counts[taskqueue.Completed][id] != 1 {
			t.Fatalf("task %s completed %d times", id, counts[taskqueue.Completed][id])
		}
	}
}

// TestWorkerSIGKILLTakesHandlerProcesses: when a worker is killed with
// SIGKILL, the command it runs and that command's own children die with it
// (nothing it started keeps running unsupervised).
func TestWorkerSIGKILLTakesHandlerProcesses(t *testing.T) {
	t.Parallel()
	srv, url := queueServer(t)
	addTasks(t, srv.Service(), "orphans", 1, 0)
	dir := t.TempDir()
	handlerPID, childPID := filepath.Join(dir, "handler.pid"), filepath.Join(dir, "child.pid")
	// The handler records its pid, starts a long-running child, records
	// the child's pid (each file written whole, then renamed) and waits.
	script := fmt.Sprintf(`echo $$ > %[1]s.tmp && mv %[1]s.tmp %[1]s; sleep 300 & echo $! > %[2]s.tmp && mv %[2]s.tmp %[2]s; wait`, handlerPID, childPID)
	p := startProc(t, workerArgs(url, "orphans", "wk", "--exec", script)...)
	pids := map[string]int{}
	deadline := time.Now().Add(30 * time.Second)
	for len(pids) < 2 {
		for name, path := range map[string]string{"handler": handlerPID, "child": childPID} {
			if b, err := os.ReadFile(path); err == nil {
				pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
				if err != nil {
					t.Fatalf("%s pid file: %v", name, err)
				}
				pids[name] = pid
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the handler never started its child (pids so far %v)", pids)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Cleanup(func() {
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	for name, pid := range pids {
		if !alive(pid) {
			t.Fatalf("the %s (pid %d) is not running before the worker is killed", name, pid)
		}
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = p.wait(t, 10*time.Second)
	for name, pid := range pids {
		deadline := time.Now().Add(10 * time.Second)
		for alive(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("the handler's %s (pid %d) still runs 10 s after its worker was killed", name, pid)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// alive reports whether a process exists and is not a zombie (a killed
// process whose parent has not reaped it yet is gone for our purpose).
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name: "pid (comm) S ...".
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// TestWorkerEmbedded: `worker --embedded` brings its own server, records
// it in serve.json, and other commands on the data dir work through it
// while the worker runs: a task added with `queue add` is done by the
// worker. SIGTERM drains the worker and removes serve.json.
func TestWorkerEmbedded(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	p := startProc(t, "worker", "--embedded", "--data", data, "--queue", "emb", "--worker-id", "we", "--metrics-addr", "",
		"--exec", `echo '{"what_was_done":"embedded run"}'`)
	deadline := time.Now().Add(30 * time.Second)
	for {
		info, _ := server.ReadInfo(data)
		if info != nil && info.PID == p.cmd.Process.Pid {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the embedded worker never recorded its server in serve.json")
		}
		time.Sleep(20 * time.Millisecond)
	}
	code, out, errs := cli(t, "queue", "add", "--data", data, "--queue", "emb", "--objective", "through the worker's server", "--json")
	if code != 0 {
		t.Fatalf("queue add next to an embedded worker: exit %d: %s", code, errs)
	}
	var task trellis.Task
	mustJSON(t, out, &task)
	for {
		code, out, errs = cli(t, "queue", "show", task.TaskID, "--data", data, "--json")
		if code != 0 {
			t.Fatalf("queue show: exit %d: %s", code, errs)
		}
		var got trellis.Task
		mustJSON(t, out, &got)
		if got.Status == trellis.StatusDone {
			if got.ClaimedBy != "we/0" || got.Checkpoint.WhatWasDone != "embedded run" {
				t.Fatalf("task done as %+v / %+v", got, got.Checkpoint)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("task still %s", got.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if err := p.wait(t, 30*time.Second); err != nil {
		t.Fatalf("worker exit: %v", err)
	}
	if info, err := server.ReadInfo(data); info != nil || err != nil {
		t.Fatalf("serve.json left behind: %+v, %v", info, err)
	}
}
