package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/auth"
	"github.com/trellis/trellis/client"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/taskqueue"
)

// These tests put a worker process through faults of its server: a serve
// process stopped (SIGSTOP) or killed and restarted under it while it runs
// a task, and a worker process stopped past its lease.

// reconnectingClient is an API client on url that survives a restart of
// its server.
func reconnectingClient(t *testing.T, url string, opts ...nats.Option) (*client.API, *nats.Conn) {
	t.Helper()
	nc, err := nats.Connect(url, append([]nats.Option{nats.MaxReconnects(-1), nats.ReconnectWait(100 * time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return client.NewAPI(nc, 10*time.Second), nc
}

// gated is a --exec command that records its run in ledger, then waits
// until the file gate exists.
func gated(ledger, gate string) string {
	return ledgerExec(ledger, fmt.Sprintf(`while [ ! -e %s ]; do sleep 0.05; done; echo '{"what_was_done":"gated"}'`, gate))
}

func touch(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// waitFor polls cond until it holds, failing after within.
func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", within, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stderrHas reports whether a process has logged s.
func (p *proc) stderrHas(s string) bool {
	l := p.cmd.Stderr.(*lockedWriter)
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Contains(l.w.String(), s)
}

// taskShows polls the task through c until cond holds.
func taskShows(t *testing.T, c trellis.QueueService, id string, within time.Duration, what string, cond func(*trellis.Task) bool) *trellis.Task {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		task, err := c.Show(context.Background(), id)
		if err == nil && cond(task) {
			return task
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: task %s is not %s (last seen %+v, %v)", within, id, what, task, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// queueEvents counts a task's events by type (a claim carried by its
// outcome counts as a claimed event), read from the log.
func queueEvents(t *testing.T, nc *nats.Conn, id string) map[string]int {
	t.Helper()
	store, err := events.NewStore(nc, events.StoreConfig{})
	if err != nil {
		t.Fatal(err)
	}
	recs, _, err := store.Load(context.Background(), events.StreamQueue, taskqueue.Filter(id))
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, r := range taskqueue.ExpandClaims(recs) {
		n[r.Type]++
	}
	return n
}

// TestHeldClaimStoredLateIsTheWorkersOwn: a `trellis worker` process holds
// a task whose claim is not recorded yet (its claim window is long); the
// serve process is stopped (SIGSTOP) when the window passes, so the
// worker's claim write times out and the worker gives up on it; on SIGCONT
// the server stores that write after all. The worker finds its own claim
// on the log: the outcome is recorded, the task is done after one run,
// with no lease expired (before the fix the worker took its own claim for
// "task changed", dropped the outcome and acknowledged the dispatch: the
// task stayed claimed for ever).
func TestHeldClaimStoredLateIsTheWorkersOwn(t *testing.T) {
	t.Parallel()
	data, addr := t.TempDir(), freeAddr(t)
	serve := serveAt(t, data, addr)
	url := "nats://" + addr
	client, nc := reconnectingClient(t, url)
	dir := t.TempDir()
	ledger, gate := filepath.Join(dir, "ledger"), filepath.Join(dir, "go")
	w := startProc(t, workerArgs(url, "late", "wl", "--lease", "20s", "--claim-window", "5s", "--exec", gated(ledger, gate))...)
	task, err := client.Add(context.Background(), trellis.AddTaskRequest{Queue: "late", Objective: "held", MaxAttempts: 3})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "the handler never started", func() bool { return readLedger(t, ledger)[task.TaskID] == 1 })
	if err := serve.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := true
	defer func() {
		if stopped {
			_ = serve.cmd.Process.Signal(syscall.SIGCONT)
		}
	}()
	waitFor(t, 60*time.Second, "the worker never gave up on its claim write", func() bool { return w.stderrHas("claim not recorded after its window") })
	if err := serve.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	stopped = false
	taskShows(t, client, task.TaskID, 60*time.Second, "claimed by the worker (its late write stored)", func(tk *trellis.Task) bool {
		return tk.Status == trellis.StatusClaimed && tk.ClaimedBy == "wl/0"
	})
	touch(t, gate)
	taskShows(t, client, task.TaskID, 60*time.Second, "done", func(tk *trellis.Task) bool { return tk.Status == trellis.StatusDone })
	if runs := readLedger(t, ledger)[task.TaskID]; runs != 1 {
		t.Fatalf("the task ran %d times; want 1", runs)
	}
	n := queueEvents(t, nc, task.TaskID)
	if n[taskqueue.Claimed] != 1 || n[taskqueue.Completed] != 1 || n[taskqueue.LeaseExpired] != 0 {
		t.Fatalf("events %v; want one claim, one completion, no lease expired", n)
	}
}

// TestHeldClaimConflictLeavesAnothersDispatch: worker A holds a task with
// its claim not recorded and is stopped (SIGSTOP) past its lease; worker B
// gets the dispatch again and claims the task. A resumes, finishes, finds
// the task claimed by B and drops its outcome, leaving the dispatch alone
// (JetStream acknowledges by stream sequence: A's acknowledgement would end
// B's lease). B is then killed with SIGKILL: its lease expires and the task
// is taken over and done (before the fix it stayed claimed by the dead B
// for ever).
func TestHeldClaimConflictLeavesAnothersDispatch(t *testing.T) {
	t.Parallel()
	srv, url := queueServer(t)
	svc := srv.Service()
	dir := t.TempDir()
	ledger, gate := filepath.Join(dir, "ledger"), filepath.Join(dir, "go")
	a := startProc(t, workerArgs(url, "held", "wa", "--lease", "10s", "--claim-window", "3s", "--exec", gated(ledger, gate))...)
	task, err := svc.Add(context.Background(), trellis.AddTaskRequest{Queue: "held", Objective: "held", MaxAttempts: 5})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "A's handler never started", func() bool { return readLedger(t, ledger)[task.TaskID] == 1 })
	if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := true
	defer func() {
		if stopped {
			_ = a.cmd.Process.Signal(syscall.SIGCONT)
		}
	}()
	if tk, err := svc.Show(context.Background(), task.TaskID); err != nil || tk.Status != trellis.StatusQueued {
		_ = a.cmd.Process.Signal(syscall.SIGCONT)
		stopped = false
		t.Skipf("A's claim was recorded before it could be stopped inside its claim window (task %+v, %v): nothing to reproduce", tk, err)
	}
	b := startProc(t, workerArgs(url, "held", "wb", "--exec", ledgerExec(ledger, "sleep 600"))...)
	taskShows(t, svc, task.TaskID, 60*time.Second, "claimed by B after A's lease", func(tk *trellis.Task) bool {
		return tk.Status == trellis.StatusClaimed && tk.ClaimedBy == "wb/0"
	})
	if err := a.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	stopped = false
	touch(t, gate)
	waitFor(t, 60*time.Second, "A never found the task claimed by B", func() bool { return a.stderrHas("held task changed") })
	if err := b.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	taskShows(t, svc, task.TaskID, 90*time.Second, "done (taken over from the killed B)", func(tk *trellis.Task) bool { return tk.Status == trellis.StatusDone })
	n := eventCounts(t, srv.Store())
	if n[taskqueue.Completed][task.TaskID] != 1 || n[taskqueue.LeaseExpired][task.TaskID] != 1 {
		t.Fatalf("%d completions, %d lease expiries; want 1 and 1 (B's)", n[taskqueue.Completed][task.TaskID], n[taskqueue.LeaseExpired][task.TaskID])
	}
}

// TestOutcomeKeptAcrossServeRestart: a worker process (a local pool, and a
// token pool working through the server's API) runs a task; its serve
// process is killed with SIGKILL while the handler runs, the handler ends
// while no server answers, and serve is restarted on the same data dir and
// address. The worker keeps the outcome and records it after the
// reconnect: the task is done once, after one run (its lease held).
func TestOutcomeKeptAcrossServeRestart(t *testing.T) {
	t.Parallel()
	for _, token := range []bool{false, true} {
		name := "local pool"
		if token {
			name = "token pool"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			data, addr := t.TempDir(), freeAddr(t)
			var extra []string
			if token {
				extra = []string{"--auth"}
			}
			serve := serveAt(t, data, addr, extra...)
			url := "nats://" + addr
			dir := t.TempDir()
			ledger, gate := filepath.Join(dir, "ledger"), filepath.Join(dir, "go")
			args := []string{"worker", "--nats-url", url, "--queue", "outage", "--lease", "40s", "--metrics-addr", "", "--exec", gated(ledger, gate)}
			var client *client.API
			var nc *nats.Conn
			if token {
				raw, err := os.ReadFile(filepath.Join(data, "auth", "admin.token"))
				if err != nil {
					t.Fatal(err)
				}
				admin := strings.TrimSpace(string(raw))
				code, out, errs := cli(t, "--data", data, "--token", admin, "token", "create", "--name", "wt", "--role", "worker", "--queue", "outage", "--json")
				if code != 0 {
					t.Fatalf("token create: exit %d %s", code, errs)
				}
				var created map[string]string
				mustJSON(t, out, &created)
				args = append(args, "--token", created["token"])
				client, nc = reconnectingClient(t, url, nats.Token(admin), nats.CustomInboxPrefix(auth.InboxPrefix(admin)))
				client = client.WithToken(admin)
			} else {
				args = append(args, "--worker-id", "wo")
				client, nc = reconnectingClient(t, url)
			}
			w := startProc(t, args...)
			task, err := client.Add(context.Background(), trellis.AddTaskRequest{Queue: "outage", Objective: "across an outage", MaxAttempts: 3})
			if err != nil {
				t.Fatal(err)
			}
			taskShows(t, client, task.TaskID, 60*time.Second, "claimed (recorded)", func(tk *trellis.Task) bool { return tk.Status == trellis.StatusClaimed })
			_ = serve.cmd.Process.Kill()
			_ = serve.wait(t, 30*time.Second)
			touch(t, gate)
			waitFor(t, 60*time.Second, "the worker never noticed the server gone", func() bool {
				return w.stderrHas("finish not recorded") || w.stderrHas("outcome not recorded yet")
			})
			restarted := time.Now()
			serveAt(t, data, addr, extra...)
			t.Logf("serve restarted in %s", time.Since(restarted).Round(time.Millisecond))
			taskShows(t, client, task.TaskID, 60*time.Second, "done", func(tk *trellis.Task) bool { return tk.Status == trellis.StatusDone })
			t.Logf("done %s after the restart began", time.Since(restarted).Round(time.Millisecond))
			if runs := readLedger(t, ledger)[task.TaskID]; runs != 1 {
				t.Fatalf("the task ran %d times; want 1", runs)
			}
			if !token {
				if n := queueEvents(t, nc, task.TaskID); n[taskqueue.Completed] != 1 || n[taskqueue.Claimed] != 1 {
					t.Fatalf("events %v; want one claim, one completion", n)
				}
			}
		})
	}
}
