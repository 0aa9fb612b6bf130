package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/audit"
	"github.com/trellis/trellis/internal/servicetest"
)

// TestServeRetentionTwoServers: two `trellis serve` processes on one log,
// both with --retention and the same --archive, prune every 200 ms from
// their start while tasks finish beside them. Every finished task ends up
// named by exactly one prune record, every archive file by exactly one
// record (the prune that lost the record's check removed its own), the
// open tasks stay and still claim and finish, and `trellis audit verify`
// with the servers' audit key is OK: no double archive, no gap.
func TestServeRetentionTwoServers(t *testing.T) {
	t.Parallel()
	srv, url := queueServer(t)
	ctx := context.Background()
	q := srv.Service()
	open := addTasks(t, q, "retained", 3, 0)
	ids := finishedTasks(t, srv, "retained", 300)

	// Servers pruning one log hold one audit key: each one's records are
	// trusted by a verify with the other's.
	dataA, dataB := t.TempDir(), t.TempDir()
	key, err := audit.AnchorKey(dataA, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(audit.AnchorKeyPath(dataB)), 0o700); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(audit.AnchorKeyPath(dataA))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(audit.AnchorKeyPath(dataB), raw, 0o600); err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(t.TempDir(), "archive")
	retain := []string{"--nats-url", url, "--retention", "1ms", "--prune-every", "200ms", "--archive", archive}
	infoA, _, _ := serveProc(t, dataA, retain...)
	infoB, _, _ := serveProc(t, dataB, retain...)

	// More tasks finish while both prune.
	ids = append(ids, finishedTasks(t, srv, "retained", 100)...)

	deadline := time.Now().Add(90 * time.Second)
	for {
		named := map[string]bool{}
		for _, p := range pruneRecords(t, srv.Store()) {
			for _, agg := range p.Aggregates {
				_, id, _ := strings.Cut(agg, "/")
				named[id] = true
			}
		}
		left := 0
		for _, id := range ids {
			if !named[id] {
				left++
			}
		}
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d finished tasks not pruned within 90s", left, len(ids))
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("every finished task pruned after %s", time.Since(deadline.Add(-90*time.Second)))
	checkPruned(t, srv, archive, ids, true)

	// Every archive file is named by exactly one record (a server's
	// periodic prune keeps checking that it can write the directory: its
	// short-lived .prune-check-* file is not an archive).
	recs := pruneRecords(t, srv.Store())
	files, _ := filepath.Glob(filepath.Join(archive, "prune-*.jsonl"))
	for _, f := range files {
		if _, ok := recs[filepath.Base(f)]; !ok {
			t.Errorf("archive file %s is named by no prune record", filepath.Base(f))
		}
	}
	if len(files) != len(recs) {
		t.Errorf("%d archive files for %d prune records", len(files), len(recs))
	}
	var fs []audit.Finding
	if _, err := audit.Verify(ctx, srv.Store(), audit.VerifyOptions{AnchorKey: key}, func(f audit.Finding) error { fs = append(fs, f); return nil }); err != nil || len(fs) > 0 {
		t.Fatalf("audit verify with the servers' key: %v %v", err, fs)
	}

	// Both servers count what they pruned (a prune counts once it
	// returned, after removing its last batch); nothing failed.
	for deadline := time.Now().Add(60 * time.Second); ; {
		total := 0.0
		for _, u := range []string{infoA.HTTPURL, infoB.HTTPURL} {
			if v := servicetest.Metric(t, u, `trellis_retention_prunes_total{result="error"}`); v != 0 {
				t.Fatalf("%s: %v failed prunes", u, v)
			}
			total += servicetest.Metric(t, u, "trellis_retention_pruned_tasks_total")
		}
		if total == float64(len(ids)) {
			break
		}
		if total > float64(len(ids)) || time.Now().After(deadline) {
			t.Fatalf("the servers count %v pruned tasks; %d were pruned", total, len(ids))
		}
		time.Sleep(100 * time.Millisecond)
	}

	// The open tasks still claim and finish; the log still verifies.
	for range open {
		task, err := q.Next(ctx, trellis.NextRequest{Queue: "retained", Worker: "after-prune"})
		if err != nil || task == nil {
			t.Fatalf("claim after the prune: %v %v", task, err)
		}
		if _, err := q.Done(ctx, trellis.DoneRequest{TaskID: task.TaskID, Worker: "after-prune", WhatWasDone: "still works"}); err != nil {
			t.Fatal(err)
		}
	}
	if code, out, errs := cli(t, "--data", dataA, "--nats-url", url, "audit", "verify"); code != 0 {
		t.Fatalf("trellis audit verify: exit %d\n%s%s", code, out, errs)
	}
}

// TestServeRetentionBadInput: serve refuses --retention without
// --archive and the reverse, a retention that is not a positive duration,
// an interval out of bounds, and an archive that is a file or lies in the
// log's own store, with exit code 2 (invalid) and a message naming the
// flag, before it starts anything.
func TestServeRetentionBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "a-file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	archive := filepath.Join(dir, "archive")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--retention", "720h"}, "archive: is required with --retention"},
		{[]string{"--archive", archive}, "--archive needs --retention"},
		{[]string{"--prune-every", "1m"}, "--prune-every needs --retention"},
		{[]string{"--prune-rate", "100"}, "--prune-rate needs --retention"},
		{[]string{"--retention", "1h", "--archive", archive, "--prune-rate", "-1"}, "prune_rate: must be between 0"},
		{[]string{"--retention", "1h", "--archive", archive, "--prune-rate", "2000000"}, "prune_rate: must be between 0"},
		{[]string{"--retention", "1h", "--archive", archive, "--prune-rate", "fast"}, "invalid argument \"fast\""},
		{[]string{"--retention", "-1h", "--archive", archive}, "retention: must be positive"},
		{[]string{"--retention", "0s", "--archive", archive}, "retention: must be positive"},
		{[]string{"--retention", "0d", "--archive", archive}, "retention: must be positive"},
		{[]string{"--retention", "soon", "--archive", archive}, "retention: \"soon\" is not a duration"},
		{[]string{"--retention", "1000000d", "--archive", archive}, "at most"},
		{[]string{"--retention", "1h", "--archive", archive, "--prune-every", "1ms"}, "prune_every: must be between"},
		{[]string{"--retention", "1h", "--archive", archive, "--prune-every", "-5m"}, "prune_every: must be between"},
		{[]string{"--retention", "1h", "--archive", file}, "is a file"},
		{[]string{"--retention", "1h", "--archive", filepath.Join(data, "jetstream", "archive")}, "inside the log"},
	} {
		args := append([]string{"serve", "--data", data, "--nats-addr", "127.0.0.1:0", "--http-addr", ""}, c.args...)
		code, _, stderr := cli(t, args...)
		if code != trellis.ExitCode(trellis.CodeInvalid) || !strings.Contains(stderr, c.want) {
			t.Errorf("trellis serve %v: exit %d, stderr %q; want invalid mentioning %q", c.args, code, stderr, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(data, "jetstream")); err == nil {
		t.Error("a refused serve started its NATS server")
	}
	if _, err := os.Stat(archive); err == nil {
		t.Error("a refused serve created its archive directory")
	}
}
