package vinegraph

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events/eventstest"
)

// TestFileBehindAnotherWriterIsReplaced: two servers write one graph's
// file behind the log. When the file changed since this server's command
// read it because another server's writer put an older state of the log
// there, this server's newer state replaces it (it used to give up as if a
// person had saved, leaving the file behind the log until the next
// command); a person's save, or a newer state, is left alone.
func TestFileBehindAnotherWriterIsReplaced(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ws := t.TempDir()
	path := filepath.Join(ws, "plan.vine")
	if err := os.WriteFile(path, []byte(twoLeaves), 0o644); err != nil {
		t.Fatal(err)
	}
	one := NewHandler(b.Store, Config{Roots: []string{ws}})
	two := NewHandler(b.Store, Config{Roots: []string{ws}})
	claim := func(v *Handler, agent string) {
		t.Helper()
		c, err := v.Claim(ctx, trellis.VineClaimRequest{File: path, Agent: agent})
		if err != nil || c.Node == nil {
			t.Fatalf("claim by %s: %+v, %v", agent, c, err)
		}
		v.Close() // the claim's file write is done
	}
	read := func() string {
		t.Helper()
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	claim(one, "agent-1")
	older := read() // the log's state after the first claim
	f, err := one.resolve(path)
	if err != nil {
		t.Fatal(err)
	}
	claim(two, "agent-2")
	newest := read()
	if newest == older {
		t.Fatal("the second claim did not change the file")
	}
	st, err := one.graphs.Load(ctx, f.graphID)
	if err != nil {
		t.Fatal(err)
	}
	// job is server one's write of the newest state, whose command read
	// the file before it changed.
	job := func() *writeJob {
		return &writeJob{f: f, st: st, read: fileRead{exists: true, stamp: fileStamp{}}}
	}
	// Another writer left the older state of the log.
	if err := os.WriteFile(path, []byte(older), 0o644); err != nil {
		t.Fatal(err)
	}
	stale := job()
	stale.read.stamp = stampOf(path)
	if err := os.WriteFile(path, []byte(older), 0o600); err != nil { // a new stamp, the same older text
		t.Fatal(err)
	}
	if err := one.writeState(stale); err != nil {
		t.Fatal(err)
	}
	if got := read(); got != newest {
		t.Fatalf("the file stayed at an older state of the log:\n%s\nwant\n%s", got, newest)
	}
	// A person's save is left for the next command to merge.
	saved := newest + "\n"
	if err := os.WriteFile(path, []byte(saved), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := one.writeState(stale); err != nil {
		t.Fatal(err)
	}
	if got := read(); got != saved {
		t.Fatalf("a person's save was overwritten:\n%s", got)
	}
}
