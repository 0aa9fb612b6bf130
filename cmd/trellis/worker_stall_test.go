package main

import (
	"context"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/taskqueue"
)

// TestStalledPoolLeavesFetchedDispatchToItsNewHolder: worker A (one slot)
// runs one task and holds the next one's dispatch fetched ahead, not
// started, when it is stopped (SIGSTOP) past its lease. Worker B takes
// both dispatches over and runs both tasks; a third slot of B is free.
// A resumes (SIGCONT) and finds the dispatch it fetched ahead stale: it
// must drop it untouched. A nak of it (JetStream acknowledges by stream
// sequence) would hand the dispatch B now holds to B's free slot at once,
// which records B's lease as expired and runs the task a second time
// (before the fix: the task ran twice, with a lease_expired for B).
func TestStalledPoolLeavesFetchedDispatchToItsNewHolder(t *testing.T) {
	t.Parallel()
	srv, url := queueServer(t)
	svc := srv.Service()
	ctx := context.Background()
	dir := t.TempDir()
	ledger, gate := filepath.Join(dir, "ledger"), filepath.Join(dir, "go")
	const queue, lease = "ahead", "12s"
	// Both tasks are queued before A starts: its first pull fetches both
	// (its free slot and one ahead).
	ids := addTasks(t, svc, queue, 2, 5)
	a := startProc(t, workerArgs(url, queue, "wa", "--lease", lease, "--claim-window", "-1s", "--exec", gated(ledger, gate))...)
	waitFor(t, 60*time.Second, "A's handler never started", func() bool { return readLedger(t, ledger)[ids[0]] == 1 })
	if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := true
	defer func() {
		if stopped {
			_ = a.cmd.Process.Signal(syscall.SIGCONT)
		}
	}()
	cons, err := srv.Store().JetStream().Consumer(ctx, events.StreamQueue, taskqueue.ConsumerName(queue))
	if err != nil {
		t.Fatal(err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.NumAckPending != 2 {
		// A gave the second dispatch back (a quarter of its lease passed
		// before it could be stopped), or fetched only one.
		t.Skipf("A holds %d dispatches when stopped; want 2 (one running, one fetched ahead): nothing to reproduce", info.NumAckPending)
	}
	if tk, err := svc.Show(ctx, ids[1]); err != nil || tk.Status != trellis.StatusQueued {
		t.Fatalf("the task A fetched ahead: %+v, %v; want queued (not started)", tk, err)
	}
	startProc(t, workerArgs(url, queue, "wb", "--concurrency", "3", "--lease", lease, "--exec", gated(ledger, gate))...)
	for _, id := range ids {
		taskShows(t, svc, id, 90*time.Second, "claimed by B after A's lease", func(tk *trellis.Task) bool {
			return tk.Status == trellis.StatusClaimed && strings.HasPrefix(tk.ClaimedBy, "wb/")
		})
	}
	if err := a.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	stopped = false
	// A now finds the dispatch it fetched ahead stale: dropped (the fix),
	// or given back and claimed again by B's free slot.
	expired := func() int { return eventCounts(t, srv.Store())[taskqueue.LeaseExpired][ids[1]] }
	waitFor(t, 60*time.Second, "A never dealt with the dispatch it fetched ahead", func() bool {
		return a.stderrHas("fetched ahead and held past its lease") || expired() > 0
	})
	if n := expired(); n != 0 {
		t.Fatalf("B's claim of the task A had fetched ahead was cut short: %d lease expiries", n)
	}
	touch(t, gate)
	waitAll(t, svc, ids, trellis.StatusDone, 60*time.Second)
	if runs := readLedger(t, ledger)[ids[1]]; runs != 1 {
		t.Fatalf("the task A had fetched ahead ran %d times; want 1 (by B)", runs)
	}
	n := eventCounts(t, srv.Store())
	if n[taskqueue.Completed][ids[1]] != 1 || n[taskqueue.LeaseExpired][ids[1]] != 0 || n[taskqueue.Claimed][ids[1]] != 1 {
		t.Fatalf("the task A had fetched ahead: %d claims, %d completions, %d lease expiries; want 1, 1, 0",
			n[taskqueue.Claimed][ids[1]], n[taskqueue.Completed][ids[1]], n[taskqueue.LeaseExpired][ids[1]])
	}
}
