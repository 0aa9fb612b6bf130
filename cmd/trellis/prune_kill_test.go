package main

import (
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/trellis/trellis/events"
)

// The prune process tests kill a `trellis prune` in the middle of its work
// and run it again; these are their shared steps.

// pruneData is the data directory (its audit key signs the records) of
// the prunes archiving into archive: one per test, as every prune of a
// log must hold one key (a prune acts only on records signed with its
// own).
func pruneData(archive string) string { return filepath.Join(filepath.Dir(archive), "data") }

// killPruneAfterArchives starts `trellis prune` on the server at url
// (archiving into archive) and kills it with SIGKILL once it has written
// archives archives (60 s at most).
func killPruneAfterArchives(t *testing.T, url, archive string, archives int) {
	t.Helper()
	p := startProc(t, "prune", "--nats-url", url, "--data", pruneData(archive), "--older-than", "1ms", "--archive", archive)
	deadline := time.Now().Add(60 * time.Second)
	for {
		if m, _ := filepath.Glob(filepath.Join(archive, "prune-*.jsonl")); len(m) >= archives {
			break
		}
		select {
		case err := <-p.done:
			p.done <- err
			t.Fatalf("prune ended before writing %d archive(s): %v", archives, err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("not %d archive(s) within 60s", archives)
		}
		time.Sleep(time.Millisecond)
	}
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = p.wait(t, 30*time.Second)
}

// pruneAgain runs `trellis prune` to its end on the server at url.
func pruneAgain(t *testing.T, url, archive string) {
	t.Helper()
	out, err := exec.Command(trellisBinary(t), "prune", "--nats-url", url, "--data", pruneData(archive), "--older-than", "1ms", "--archive", archive, "--json").Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("prune again: %v\n%s\n%s", err, out, stderr)
	}
}

// continuedByPrune reports whether a prune record names first (an
// aggregate's first live event) as where the aggregate continues.
func continuedByPrune(t *testing.T, store *events.Store, first events.Recorded) bool {
	t.Helper()
	for _, p := range pruneRecords(t, store) {
		for _, c := range p.Continued {
			if c.Seq == first.Seq && c.Prev == first.Prev {
				return true
			}
		}
	}
	return false
}
