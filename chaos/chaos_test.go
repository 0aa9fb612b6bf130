package chaos

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// TestChaosSlice is the fixed slice of the fault matrix that runs with
// the rest of the suite: on one real cluster (three nats-server processes
// in their own network namespaces, R3 streams, two trellis serve on
// different nodes, two worker pools writing a ledger), the queue stream's
// leader is killed with SIGKILL and restarted, then the new leader is
// isolated by a partition and healed, then (where FUSE works) the leader
// loses power, its unsynced writes dropped by the power-loss filesystem
// under each node's store. From the log and the ledger alone:
// no acknowledged add may be lost, no task completed twice, and `trellis
// audit verify` must pass. Tasks still unfinished 90 s past lease and
// heal are logged, not failed on here (`make chaos` fails on them; the
// isolated-leader defect that left tasks undispatched is fixed, see
// docs/reliability.md); resume times are logged, never asserted.
func TestChaosSlice(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cluster of processes in network namespaces")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: network namespaces, veth pairs and tc")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := Available(ctx); err != nil {
		t.Skipf("network namespaces unavailable: %v", err)
	}
	bins, err := Build(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"kill-leader", "isolate-leader"}
	if _, err := os.Stat("/dev/fuse"); err == nil {
		names = append(names, "power-loss-leader")
	} else {
		t.Logf("no power loss in this slice: no /dev/fuse (%v)", err)
	}
	var faults []Fault
	for _, n := range names {
		f, err := FaultByName(n)
		if err != nil {
			t.Fatal(err)
		}
		faults = append(faults, f)
	}
	var log strings.Builder
	res, err := Run(ctx, Scenario{Faults: faults, Number: 1, Heal: 5 * time.Second, Duration: 6 * time.Second,
		Lease: 5 * time.Second, Dir: t.TempDir(), Binaries: bins, Octet: -1, Log: &log})
	t.Log("\n" + log.String())
	if err != nil {
		t.Fatal(err)
	}
	c := res.Check
	if c.Acked == 0 {
		t.Fatal("no add was acknowledged")
	}
	if c.Lost > 0 || c.CompletedTwice > 0 {
		t.Errorf("%d acknowledged adds lost, %d tasks completed twice (of %d acknowledged): %v", c.Lost, c.CompletedTwice, c.Acked, c.Examples)
	}
	if c.Stuck > 0 {
		// Reported, not failed on: the slice promises no loss and no
		// double completion; make chaos fails on stuck tasks. (An
		// isolated leader once left added tasks never dispatched: fixed,
		// TestClaimFindsItsOwnLateStoredClaim in taskqueue/.)
		t.Logf("%d acknowledged adds in the log but not completed 90 s past lease and heal: %v", c.Stuck, c.Examples)
	}
	if c.Verify != "ok" {
		t.Errorf("audit verify: %s", c.Verify)
	}
	t.Logf("%s: %d acknowledged adds, %d executions (%d tasks run more than once), resume %v", res.Fault, c.Acked, c.Executions, c.ExecutedTwice, res.Resume)
}

// TestCheckerFindsBrokenPromises: the checker counts what it must, on a
// log and a ledger made by hand (a checker that sees nothing would pass
// every chaos run).
func TestCheckerFindsBrokenPromises(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	evs := []logEvent{
		{Type: "added", AggregateID: "A", Stored: at},
		{Type: "added", AggregateID: "B", Stored: at},
		{Type: "added", AggregateID: "C", Stored: at},
		{Type: "completed", AggregateID: "A", Stored: at.Add(time.Second)},
		{Type: "completed", AggregateID: "B", Stored: at.Add(3 * time.Second)},
		{Type: "completed", AggregateID: "B", Stored: at.Add(4 * time.Second)},
	}
	acked := []string{"A", "B", "C", "D"}
	ledger := []string{"A 1", "B 1", "B 2", "C 1"}
	c := check(evs, acked, ledger)
	want := Check{Acked: 4, Lost: 1, CompletedTwice: 1, Executions: 4, ExecutedTwice: 1, Stuck: 1}
	if c.Acked != want.Acked || c.Lost != want.Lost || c.CompletedTwice != want.CompletedTwice || c.Executions != want.Executions ||
		c.ExecutedTwice != want.ExecutedTwice || c.Stuck != want.Stuck {
		t.Errorf("check = %+v, want %+v", c, want)
	}
	c.Verify = "ok"
	if !c.Failed() {
		t.Error("a run with a lost add does not fail")
	}
	if !(Check{Verify: "ok", Unanswered: 1}).Failed() {
		t.Error("a run with an unanswered API ping does not fail")
	}
	if d := resumeAfter(evs, at.Add(2*time.Second), time.Time{}); d != time.Second {
		t.Errorf("resume = %v, want 1s (from the fault to the first completion)", d)
	}
	stray := append(evs, logEvent{Type: "completed", AggregateID: "C", Stored: at.Add(2*time.Second + time.Millisecond)},
		logEvent{Type: "completed", AggregateID: "D", Stored: at.Add(9 * time.Second)})
	if d := resumeAfter(stray, at.Add(2*time.Second), time.Time{}); d != 5*time.Second {
		t.Errorf("resume with a stray completion right after the fault = %v, want the 5s gap after it", d)
	}
	if d := resumeAfter(stray, at.Add(2*time.Second), at.Add(5*time.Second)); d != time.Second {
		t.Errorf("resume within a window = %v, want 1s", d)
	}
	if d := resumeAfter(evs, at.Add(10*time.Second), time.Time{}); d != -1 {
		t.Errorf("resume with no later completion = %v, want -1", d)
	}
	if _, err := FaultByName("no-such-fault"); err == nil {
		t.Error("an unknown fault name is accepted")
	}
	if got := len(Mixed(7, 3)); got != 3 {
		t.Errorf("Mixed picked %d faults", got)
	}
	if a, b := Mixed(7, 3), Mixed(7, 3); a[0].Name != b[0].Name || a[1].Name != b[1].Name || a[2].Name != b[2].Name {
		t.Error("the same number picks different faults")
	}
}
