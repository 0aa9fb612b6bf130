package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trellis/trellis"
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
