package vinegraph_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/vine"
)

// messy is a valid graph in non-canonical form: an old magic line, unsorted
// dependencies, annotations out of order, a trailing delimiter. It has a
// reference (lib) for the expansion cases and a task (b) to claim.
const messy = `vine 1.1.0
title: Messy plan
---
[root] Ship it (notstarted)   @zeta(2)   @alpha(1, 2)
-> lib
-> b
---
[b] Build (notstarted)
> built before
-> a
---
ref [lib] Library (./lib.vine)
-> a
---
[a] Analyse (complete)
---
`

// libChild is the child graph of messy's reference lib.
const libChild = `vine 1.2.0
---
[lib-root] Library root (notstarted)
-> core
---
[core] Core (notstarted)
`

// fileState prepares a .vine file in one of the states a refused command
// must leave alone, and returns the events the log should hold after it
// (the log may learn what the file holds; the file must not change).
type fileState struct {
	name    string
	prepare func(t *testing.T, b *vineBundle, name string) string
	events  string
}

func atomicStates() []fileState {
	return []fileState{
		{
			name: "never imported, non-canonical",
			prepare: func(t *testing.T, b *vineBundle, name string) string {
				return b.file(t, name, messy)
			},
			events: "imported",
		},
		{
			name: "imported, then hand-edited validly",
			prepare: func(t *testing.T, b *vineBundle, name string) string {
				f := b.file(t, name, messy)
				if _, err := b.svc.VineImport(context.Background(), trellis.VineFileRequest{File: f}); err != nil {
					t.Fatal(err)
				}
				return b.file(t, name, strings.Replace(messy, "[b] Build (notstarted)", "[b] Build it   (planning)", 1))
			},
			events: "imported hand_edited",
		},
		{
			name: "imported and unchanged since Trellis wrote it",
			prepare: func(t *testing.T, b *vineBundle, name string) string {
				f := b.file(t, name, messy)
				if _, err := b.svc.VineWrite(context.Background(), trellis.VineWriteRequest{File: f, Operations: []vine.Op{
					{Op: "update", ID: "b", Decisions: []string{"second thoughts"}},
				}}); err != nil {
					t.Fatal(err)
				}
				return f
			},
			events: "imported batch_applied",
		},
	}
}

// refusedCommand is a command that must fail and leave the file alone.
type refusedCommand struct {
	name string
	code trellis.Code
	run  func(ctx context.Context, b *vineBundle, file string) error
}

func refusedWrites() []refusedCommand {
	write := func(ops ...vine.Op) func(ctx context.Context, b *vineBundle, file string) error {
		return func(ctx context.Context, b *vineBundle, file string) error {
			_, err := b.svc.VineWrite(ctx, trellis.VineWriteRequest{File: file, Operations: ops})
			return err
		}
	}
	return []refusedCommand{
		{"write: unknown op", trellis.CodeInvalid, write(vine.Op{Op: "explode", ID: "a"})},
		{"write: missing argument", trellis.CodeInvalid, write(vine.Op{Op: "set_status", ID: "b"})},
		{"write: cycle", trellis.CodeInvalid, write(vine.Op{Op: "add_dep", TaskID: "a", DepID: "root"})},
		{"write: island", trellis.CodeInvalid, write(vine.Op{Op: "add_task", ID: "lonely", Name: "Lonely"})},
		{"write: unknown id", trellis.CodeNotFound, write(vine.Op{Op: "set_status", ID: "ghost", Status: "complete"})},
		{"write: valid op then bad one", trellis.CodeInvalid, write(
			vine.Op{Op: "set_status", ID: "b", Status: "complete"},
			vine.Op{Op: "add_dep", TaskID: "a", DepID: "ghost"})},
		{"write: claim of a task that is not ready", trellis.CodeConflict, write(vine.Op{Op: "claim", ID: "root"})},
		{"write: reference escaping the workspace", trellis.CodeInvalid, write(vine.Op{Op: "add_ref", ID: "x", Name: "X", Vine: "../../../etc/x.vine"})},
		{"claim by id of a task that is not ready", trellis.CodeConflict, func(ctx context.Context, b *vineBundle, file string) error {
			_, err := b.svc.VineClaim(ctx, trellis.VineClaimRequest{File: file, ID: "root", Agent: "agent-1"})
			return err
		}},
	}
}

func refusedExpands() []refusedCommand {
	expand := func(ref, child string) func(ctx context.Context, b *vineBundle, file string) error {
		return func(ctx context.Context, b *vineBundle, file string) error {
			_, err := b.svc.VineExpand(ctx, trellis.VineExpandRequest{File: file, RefID: ref, ChildFile: child})
			return err
		}
	}
	return []refusedCommand{
		{"expand: unknown ref id", trellis.CodeNotFound, expand("ghost", "./lib.vine")},
		{"expand: id of a task, not a reference", trellis.CodeInvalid, expand("b", "./lib.vine")},
		{"expand: missing child file", trellis.CodeInvalid, expand("lib", "./nope.vine")},
		{"expand: invalid child file", trellis.CodeInvalid, expand("lib", "./broken.vine")},
		{"expand: child with a cycle", trellis.CodeInvalid, expand("lib", "./cyclic.vine")},
		{"expand: child escaping the workspace", trellis.CodeInvalid, expand("lib", "../../../etc/lib.vine")},
		{"expand: child ids colliding with the parent", trellis.CodeInvalid, expand("lib", "./collide.vine")},
	}
}

// TestVineRefusedCommandLeavesFileUnchanged: a refused vine_write, claim
// or vine_expand leaves the .vine file byte for byte as it was, whatever
// state the file was in; the log learns at most what the file holds
// (imported, hand_edited), never the refused change.
func TestVineRefusedCommandLeavesFileUnchanged(t *testing.T) {
	t.Parallel()
	b := setupVine(t)
	ctx := context.Background()
	b.file(t, "cases/lib.vine", libChild)
	b.file(t, "cases/broken.vine", "vine 1.2.0\n---\n[x X (notstarted)\n")
	b.file(t, "cases/cyclic.vine", "vine 1.2.0\n---\n[r] R (notstarted)\n-> s\n---\n[s] S (notstarted)\n-> r\n")
	// prefix "" keeps child ids as they are: "a" collides with the parent's a.
	b.file(t, "cases/collide.vine", "vine 1.2.0\nprefix: \n---\n[r] R (notstarted)\n-> a\n---\n[a] A (notstarted)\n")
	cmds := append(refusedWrites(), refusedExpands()...)
	n := 0
	for _, st := range atomicStates() {
		for _, c := range cmds {
			n++
			name := filepath.Join("cases", strings.NewReplacer(" ", "-", ",", "", ":", "").Replace(st.name+"-"+c.name)+".vine")
			f := st.prepare(t, b, name)
			before, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			gid := events.GraphID(filepath.ToSlash(name))
			logBefore := strings.Join(b.events(t, gid), " ")
			err = c.run(ctx, b, f)
			if err == nil {
				t.Errorf("%s / %s: accepted", st.name, c.name)
				continue
			}
			if got := trellis.ErrorCode(err); got != c.code {
				t.Errorf("%s / %s: %v; want code %s", st.name, c.name, err, c.code)
			}
			after, rerr := os.ReadFile(f)
			if rerr != nil {
				t.Fatalf("%s / %s: %v", st.name, c.name, rerr)
			}
			if !bytes.Equal(before, after) {
				t.Errorf("%s / %s: refused (%v) but modified the file:\n--- before\n%s--- after\n%s", st.name, c.name, err, before, after)
			}
			// The log may have learnt what the file holds (a command refused
			// before it looked at the file has not), never the refused change.
			if got := strings.Join(b.events(t, gid), " "); got != st.events && got != logBefore {
				t.Errorf("%s / %s: events %q; want %q (or %q as before)", st.name, c.name, got, st.events, logBefore)
			}
		}
	}
	if n < 3*15 {
		t.Fatalf("only %d cases ran", n)
	}
}

// TestVineReadsLeaveFileUnchanged: next, read, import, export and a claim
// with nothing to claim never rewrite an existing file, in any state; a
// missing file is written back from the log.
func TestVineReadsLeaveFileUnchanged(t *testing.T) {
	t.Parallel()
	b := setupVine(t)
	ctx := context.Background()
	reads := []refusedCommand{
		{name: "next", run: func(ctx context.Context, b *vineBundle, f string) error {
			_, err := b.svc.VineNext(ctx, trellis.VineFileRequest{File: f})
			return err
		}},
		{name: "read summary", run: func(ctx context.Context, b *vineBundle, f string) error {
			_, err := b.svc.VineRead(ctx, trellis.VineReadRequest{File: f, Action: "summary"})
			return err
		}},
		{name: "read of an unknown id", code: trellis.CodeNotFound, run: func(ctx context.Context, b *vineBundle, f string) error {
			_, err := b.svc.VineRead(ctx, trellis.VineReadRequest{File: f, Action: "task", ID: "ghost"})
			return err
		}},
		{name: "import", run: func(ctx context.Context, b *vineBundle, f string) error {
			_, err := b.svc.VineImport(ctx, trellis.VineFileRequest{File: f})
			return err
		}},
		{name: "export", run: func(ctx context.Context, b *vineBundle, f string) error {
			if _, err := b.svc.VineImport(ctx, trellis.VineFileRequest{File: f}); err != nil {
				return err
			}
			_, err := b.svc.VineExport(ctx, trellis.VineExportRequest{Graph: f})
			return err
		}},
	}
	for _, st := range atomicStates() {
		for _, c := range reads {
			name := filepath.Join("reads", strings.NewReplacer(" ", "-", ",", "").Replace(st.name+"-"+c.name)+".vine")
			f := st.prepare(t, b, name)
			before, _ := os.ReadFile(f)
			err := c.run(ctx, b, f)
			if trellis.ErrorCode(err) != c.code {
				t.Errorf("%s / %s: %v; want code %q", st.name, c.name, err, c.code)
			}
			if after, _ := os.ReadFile(f); !bytes.Equal(before, after) {
				t.Errorf("%s / %s rewrote the file:\n--- before\n%s--- after\n%s", st.name, c.name, before, after)
			}
			if got := strings.Join(b.events(t, events.GraphID(filepath.ToSlash(name))), " "); got != st.events {
				t.Errorf("%s / %s: events %q; want %q", st.name, c.name, got, st.events)
			}
		}
	}
	// Nothing to claim (b is started by one agent, the rest waits on it):
	// a successful claim of nothing leaves the file alone too.
	f := b.file(t, "nothing.vine", messy)
	if _, err := b.svc.VineClaim(ctx, trellis.VineClaimRequest{File: f, Agent: "agent-1"}); err != nil {
		t.Fatal(err)
	}
	before := []byte(waitFile(t, f, holds("[b] Build (started)"))) // the claim's write follows it
	if c, err := b.svc.VineClaim(ctx, trellis.VineClaimRequest{File: f, Agent: "agent-2"}); err != nil || c.Node != nil {
		t.Fatalf("claim with nothing ready = %+v, %v", c, err)
	}
	if after, _ := os.ReadFile(f); !bytes.Equal(before, after) {
		t.Fatalf("a claim of nothing rewrote the file")
	}
	// A missing file is written back (canonical) by a read.
	os.Remove(f)
	if _, err := b.svc.VineNext(ctx, trellis.VineFileRequest{File: f}); err != nil {
		t.Fatal(err)
	}
	exp, err := b.svc.VineExport(ctx, trellis.VineExportRequest{Graph: f})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(f); string(got) != exp.Text {
		t.Fatalf("missing file written back as:\n%s\nwant:\n%s", got, exp.Text)
	}
}

// TestVineSuccessfulChangeRewritesCanonical: a change that succeeds on a
// non-canonical file rewrites it in canonical form, as the log has it.
func TestVineSuccessfulChangeRewritesCanonical(t *testing.T) {
	t.Parallel()
	b := setupVine(t)
	ctx := context.Background()
	b.file(t, "lib.vine", libChild)
	for _, c := range []struct {
		name string
		run  func(f string) error
	}{
		{"write", func(f string) error {
			_, err := b.svc.VineWrite(ctx, trellis.VineWriteRequest{File: f, Operations: []vine.Op{{Op: "set_status", ID: "b", Status: "planning"}}})
			return err
		}},
		{"claim", func(f string) error {
			_, err := b.svc.VineClaim(ctx, trellis.VineClaimRequest{File: f, Agent: "agent-1"})
			return err
		}},
		{"expand", func(f string) error {
			_, err := b.svc.VineExpand(ctx, trellis.VineExpandRequest{File: f, RefID: "lib", ChildFile: "./lib.vine"})
			return err
		}},
	} {
		f := b.file(t, c.name+".vine", messy)
		if err := c.run(f); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		exp, err := b.svc.VineExport(ctx, trellis.VineExportRequest{Graph: f})
		if err != nil {
			t.Fatal(err)
		}
		got := waitFile(t, f, func(s string) bool { return s != messy }) // a claim's write follows it
		if got != exp.Text || !strings.HasPrefix(exp.Text, "vine 1.2.0\n") {
			t.Fatalf("%s: file after the change:\n%s\nwant the canonical text:\n%s", c.name, got, exp.Text)
		}
	}
}
