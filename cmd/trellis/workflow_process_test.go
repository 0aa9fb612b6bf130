package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/server"
	"github.com/trellis/trellis/workflow"
)

// These tests run the README's example (go run ./workflow/example/order
// worker), a real `trellis serve` and the CLI as separate processes.

var (
	orderOnce sync.Once
	orderPath string
	orderErr  error
)

func orderBinary(t *testing.T) string {
	t.Helper()
	orderOnce.Do(func() {
		orderPath = filepath.Join(buildDir, "order")
		out, err := exec.Command("go", "build", "-o", orderPath, "github.com/trellis/trellis/workflow/example/order").CombinedOutput()
		if err != nil {
			orderErr = err
			t.Logf("%s", out)
		}
	})
	if orderErr != nil {
		t.Fatal(orderErr)
	}
	return orderPath
}

// startOrder runs the example's worker with env (ORDER_*).
func startOrder(t *testing.T, data string, env []string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(orderBinary(t), append([]string{"worker", "--data", data}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	p := &proc{cmd: cmd, stderr: &bytes.Buffer{}, done: make(chan error, 1)}
	cmd.Stderr = &lockedWriter{w: p.stderr}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("order worker stderr:\n%s", p.stderr.String())
		}
	})
	return p
}

// serveAt runs `trellis serve` on data and addr and waits until it is up.
func serveAt(t *testing.T, data, addr string, extra ...string) *proc {
	t.Helper()
	_ = os.Remove(server.InfoPath(data))
	p := startProc(t, append([]string{"serve", "--data", data, "--nats-addr", addr, "--http-addr", ""}, extra...)...)
	deadline := time.Now().Add(60 * time.Second)
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

// runCLI runs the trellis binary and returns its stdout.
func runCLI(t *testing.T, args ...string) string {
	t.Helper()
	return runCLIEnv(t, nil, args...)
}

// runCLIEnv runs the trellis binary with extra environment.
func runCLIEnv(t *testing.T, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(trellisBinary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("trellis %v: %v\n%s", args, err, msg)
	}
	return string(out)
}

// watcher reads runs from the log, for polling.
func watcher(t *testing.T, url string) *workflow.Engine {
	t.Helper()
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	store, err := events.NewStore(nc, events.StoreConfig{})
	if err != nil {
		t.Fatal(err)
	}
	return workflow.New(store, workflow.Config{})
}

// until polls the run until cond holds (60 s at most).
func until(t *testing.T, e *workflow.Engine, id string, what string, cond func(*workflow.Run) bool) *workflow.Run {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		r, err := e.Show(ctx, id)
		cancel()
		if err == nil && cond(r) {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s never %s (last: %+v, %v)", id, what, r, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func ledgerLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Fields(strings.ReplaceAll(string(b), "\n", " | "))
}

func countStep(lines []string, run, step string) int {
	n := 0
	for i := 0; i+1 < len(lines); i++ {
		if lines[i] == run && lines[i+1] == step {
			n++
		}
	}
	return n
}

func recorded(r *workflow.Run, step string) bool {
	for _, e := range r.Journal {
		if e.Kind == workflow.KindStep && e.Name == step && e.Status == workflow.EntryCompleted {
			return true
		}
	}
	return false
}

// TestWorkflowOrderSurvivesSIGKILLMidStep: the example's pool is killed
// with SIGKILL while the step charge runs; another pool takes the run over
// after the lease: the recorded step (reserve) never runs again, the step
// in flight (charge) runs again on the new pool, and the run completes
// through the CLI's contract (start --json, signal, show --json).
func TestWorkflowOrderSurvivesSIGKILLMidStep(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	addr := freeAddr(t)
	serveAt(t, data, addr)
	ledger := filepath.Join(t.TempDir(), "ledger")
	env := []string{"ORDER_LEDGER=" + ledger, "ORDER_STEP_DELAY=3s"}
	first := startOrder(t, data, env, "--lease", "2s")
	w := watcher(t, "nats://"+addr)
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := w.Definition(context.Background(), "order"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the order worker never registered")
		}
		time.Sleep(50 * time.Millisecond)
	}
	var started struct {
		RunID string `json:"run_id"`
	}
	mustJSON(t, runCLI(t, "--data", data, "workflow", "start", "order", "--input", `{"id":"o-9"}`, "--json"), &started)
	if started.RunID == "" {
		t.Fatal("start printed no run_id")
	}
	id := started.RunID
	until(t, w, id, "recorded reserve", func(r *workflow.Run) bool { return recorded(r, "reserve") })
	// charge is now in flight (3 s): kill the pool.
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-first.done
	first.done <- nil
	atKill := ledgerLines(t, ledger)
	if countStep(atKill, id, "reserve") != 1 {
		t.Fatalf("ledger at the kill: %v", atKill)
	}
	chargeBefore := countStep(atKill, id, "charge")
	// On a machine slow enough to let charge (3 s) finish before the kill,
	// nothing was in flight: the rerun is then not what is checked.
	killed, err := w.Show(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	inFlight := !recorded(killed, "charge")
	startOrder(t, data, env, "--lease", "2s")
	until(t, w, id, "waiting for ship", func(r *workflow.Run) bool { return r.Status == workflow.StatusWaiting })
	// signal's --data is the signal's data: the data dir comes from
	// TRELLIS_DATA (or --nats-url).
	runCLIEnv(t, []string{"TRELLIS_DATA=" + data}, "workflow", "signal", id, "ship", "--data", `{"carrier":"dhl"}`)
	until(t, w, id, "completed", func(r *workflow.Run) bool { return r.Status.Terminal() })
	var show struct {
		RunID    string          `json:"run_id"`
		Workflow string          `json:"workflow"`
		Version  int             `json:"version"`
		Status   string          `json:"status"`
		Output   json.RawMessage `json:"output"`
		Steps    []struct {
			Name   string `json:"name"`
			Status string `json:"status"`
		} `json:"steps"`
	}
	mustJSON(t, runCLI(t, "--data", data, "workflow", "show", id, "--json"), &show)
	var out bytes.Buffer
	_ = json.Compact(&out, show.Output)
	if show.RunID != id || show.Workflow != "order" || show.Version != 1 || show.Status != "completed" || out.String() != `{"id":"o-9","shipped_by":"dhl"}` {
		t.Fatalf("show = %+v %s", show, show.Output)
	}
	var names []string
	for _, s := range show.Steps {
		names = append(names, s.Name+":"+s.Status)
	}
	if strings.Join(names, ",") != "reserve:completed,charge:completed,ship:completed" {
		t.Fatalf("steps = %v", names)
	}
	final := ledgerLines(t, ledger)
	if n := countStep(final, id, "reserve"); n != 1 {
		t.Fatalf("reserve ran %d times (recorded before the kill: must never run again): %v", n, final)
	}
	if inFlight && countStep(final, id, "charge") <= chargeBefore {
		t.Fatalf("charge (in flight at the kill) did not run on the new pool: %v", final)
	}
	if !inFlight && countStep(final, id, "charge") != 1 {
		t.Fatalf("charge, recorded before the kill, ran again: %v", final)
	}
	if n := countStep(final, id, "ship"); n != 1 {
		t.Fatalf("ship ran %d times: %v", n, final)
	}
	var list struct {
		Runs []struct {
			RunID  string `json:"run_id"`
			Status string `json:"status"`
		} `json:"runs"`
	}
	mustJSON(t, runCLI(t, "--data", data, "workflow", "list", "--status", "completed", "--json"), &list)
	if len(list.Runs) != 1 || list.Runs[0].RunID != id {
		t.Fatalf("list --status completed = %+v", list)
	}
}

// TestWorkflowServeRestartDuringSleepAndWait: `trellis serve` is restarted
// while a run sleeps (its timer is a JetStream message schedule) and again
// while it waits for a signal; the run fires its timer, takes the signal
// and completes. A second run is cancelled through the CLI.
func TestWorkflowServeRestartDuringSleepAndWait(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	addr := freeAddr(t)
	srv := serveAt(t, data, addr)
	url := "nats://" + addr
	startOrder(t, data, []string{"ORDER_SLEEP=3s"}, "--nats-url", url, "--queue", "orders")
	w := watcher(t, url)
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := w.Definition(context.Background(), "order"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the order worker never registered")
		}
		time.Sleep(50 * time.Millisecond)
	}
	var started struct {
		RunID string `json:"run_id"`
	}
	mustJSON(t, runCLI(t, "--nats-url", url, "workflow", "start", "order", "--input", `{"id":"r-1"}`, "--json"), &started)
	id := started.RunID
	until(t, w, id, "sleeping", func(r *workflow.Run) bool { return r.Status == workflow.StatusSleeping })
	restart := func() {
		_ = srv.cmd.Process.Signal(syscall.SIGTERM)
		if err := srv.wait(t, 30*time.Second); err != nil {
			t.Fatalf("serve exit: %v", err)
		}
		srv = serveAt(t, data, addr)
	}
	restart()
	r := until(t, w, id, "waiting", func(r *workflow.Run) bool { return r.Status == workflow.StatusWaiting })
	if r.Queue != "orders-v1" {
		t.Fatalf("queue = %s, want orders-v1", r.Queue)
	}
	restart()
	runCLI(t, "--nats-url", url, "workflow", "signal", id, "ship", "--data", `{"carrier":"ups"}`)
	r = until(t, w, id, "completed", func(r *workflow.Run) bool { return r.Status.Terminal() })
	if r.Status != workflow.StatusCompleted || string(r.Output) != `{"id":"r-1","shipped_by":"ups"}` {
		t.Fatalf("run = %s %s %s", r.Status, r.Output, r.Error)
	}
	// cancel
	mustJSON(t, runCLI(t, "--nats-url", url, "workflow", "start", "order", "--input", `{"id":"r-2"}`, "--json"), &started)
	until(t, w, started.RunID, "sleeping", func(r *workflow.Run) bool { return r.Status == workflow.StatusSleeping })
	runCLI(t, "--nats-url", url, "workflow", "cancel", started.RunID)
	until(t, w, started.RunID, "cancelled", func(r *workflow.Run) bool { return r.Status == workflow.StatusCancelled })
}
