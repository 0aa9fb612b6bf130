package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/server"
	"github.com/trellis/trellis/vine"
)

// TestVineWriteHelpListsEveryOp: `vine write --help` and the VINE guide (docs/vine.md) list
// every operation the vine package knows, with its arguments.
func TestVineWriteHelpListsEveryOp(t *testing.T) {
	t.Parallel()
	code, help, errs := cli(t, "vine", "write", "--help")
	if code != 0 {
		t.Fatalf("vine write --help: exit %d: %s", code, errs)
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "docs", "vine.md"))
	if err != nil {
		t.Fatal(err)
	}
	ops := vine.Ops()
	if len(ops) < 11 {
		t.Fatalf("vine.Ops() lists %d operations", len(ops))
	}
	for _, s := range ops {
		if !strings.Contains(help, s.Signature()+"\n      "+s.Effect) {
			t.Errorf("vine write --help lacks %q with its effect", s.Signature())
		}
		if !strings.Contains(string(readme), "`"+s.Signature()+"`") {
			t.Errorf("docs/vine.md lacks `%s`", s.Signature())
		}
	}
	for _, f := range vine.OpArgumentForms() {
		if !strings.Contains(help, f) {
			t.Errorf("vine write --help lacks %q", f)
		}
	}
}

// vineServer starts Trellis in-process with its NATS API and serve.json on
// a data dir, with ws as the workspace root, so CLI commands go to it.
func vineServer(t *testing.T) (data, ws string) {
	t.Helper()
	data, ws = t.TempDir(), t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := server.Start(ctx, server.Config{DataDir: data, NATSAddr: "127.0.0.1:0", ServeAPI: true, WriteInfo: true,
		SyncInterval: time.Second, Workspaces: []string{ws}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return data, ws
}

const cliGraph = `vine 1.1.0
title: Release
---
[root] Ship (notstarted)
-> docs
-> b
---
[b] Build (notstarted)
Compile everything.
-> a
---
ref [docs] Docs (./docs.vine)
---
[a] Analyse (reviewing)
> inputs look fine
@artifact text/plain ./report.txt
`

// TestVineCLIOutput: through a running server, next, claim and read print
// graph_id with --json, and read prints people's text without it.
func TestVineCLIOutput(t *testing.T) {
	t.Parallel()
	data, ws := vineServer(t)
	f := filepath.Join(ws, "rel.vine")
	if err := os.WriteFile(f, []byte(cliGraph), 0o644); err != nil {
		t.Fatal(err)
	}
	gid := events.GraphID("rel.vine")
	d := "--data=" + data
	run := func(args ...string) string {
		t.Helper()
		code, out, errs := cli(t, append(args, d)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
		return out
	}

	var fr struct {
		GraphID      string      `json:"graph_id"`
		ReadyToStart []vine.Node `json:"ready_to_start"`
	}
	mustJSON(t, run("vine", "next", f, "--json"), &fr)
	if fr.GraphID != gid || len(fr.ReadyToStart) != 1 || fr.ReadyToStart[0].ID != "b" {
		t.Fatalf("next --json = %+v; want graph_id %s and b ready", fr, gid)
	}

	var cl struct {
		GraphID              string                    `json:"graph_id"`
		Task                 *vine.Node                `json:"task"`
		ResolvedDependencies []vine.ResolvedDependency `json:"resolved_dependencies"`
		Progress             vine.Progress             `json:"progress"`
	}
	mustJSON(t, run("vine", "claim", f, "--agent", "agent-1", "--json"), &cl)
	if cl.GraphID != gid || cl.Task == nil || cl.Task.ID != "b" || len(cl.ResolvedDependencies) != 1 || cl.ResolvedDependencies[0].Decisions[0] != "inputs look fine" || cl.Progress.Total != 4 {
		t.Fatalf("claim --json = %+v", cl)
	}
	cl.Task = &vine.Node{}
	mustJSON(t, run("vine", "claim", f, "--agent", "agent-2", "--json"), &cl)
	if cl.GraphID != gid || cl.Task != nil {
		t.Fatalf("claim --json with nothing ready = %+v; want graph_id and task null", cl)
	}
	if out := run("vine", "claim", f, "--agent", "agent-2"); !strings.HasPrefix(out, "nothing claimed: no task is ready") {
		t.Fatalf("claim with nothing ready printed %q", out)
	}

	var rd struct {
		GraphID string       `json:"graph_id"`
		Action  string       `json:"action"`
		Result  vine.Summary `json:"result"`
	}
	mustJSON(t, run("vine", "read", f, "summary", "--json"), &rd)
	if rd.GraphID != gid || rd.Action != "summary" || rd.Result.Total != 4 || rd.Result.RootID != "root" {
		t.Fatalf("read summary --json = %+v", rd)
	}

	// Without --json: text for people, one case per action.
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"summary"}, []string{"graph " + gid + ` "Release"`, "root:      root: Ship (notstarted)", "4 (2 leaves, 1 references)", "started 1"}},
		{[]string{"list"}, []string{"4 node(s)", "b ", "started", "docs", "ref", "Docs -> ./docs.vine"}},
		{[]string{"list", "--status", "reviewing"}, []string{"1 node(s)", "Analyse"}},
		{[]string{"task", "--id", "a"}, []string{"a: Analyse (reviewing)", "> inputs look fine", "@artifact text/plain ./report.txt"}},
		{[]string{"context", "--id", "b"}, []string{"b: Build (started)", "Compile everything.", "dependencies:", "> inputs look fine", "dependants:", "root"}},
		{[]string{"descendants", "--id", "a"}, []string{"2 node(s) depend on it", "b", "root"}},
		{[]string{"search", "--query", "compile"}, []string{"1 node(s)", "Build"}},
		{[]string{"refs"}, []string{"1 node(s)", "docs", "./docs.vine"}},
		{[]string{"validate"}, []string{"valid: graph " + gid + ", 4 nodes"}},
	} {
		out := run(append([]string{"vine", "read", f}, c.args...)...)
		if json.Valid([]byte(out)) {
			t.Errorf("read %v printed JSON without --json:\n%s", c.args, out)
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("read %v lacks %q:\n%s", c.args, w, out)
			}
		}
	}
}

// TestVineCLIRefusedLeavesFile: the conformance check "failed but modified
// FILE": refused CLI commands through a running server leave a
// non-canonical file byte for byte unchanged.
func TestVineCLIRefusedLeavesFile(t *testing.T) {
	t.Parallel()
	data, ws := vineServer(t)
	f := filepath.Join(ws, "keep.vine")
	if err := os.WriteFile(f, []byte(cliGraph), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "docs.vine"), []byte("vine 1.2.0\n---\n[x] X (notstarted)\n-> a\n---\n[a] Clash (notstarted)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := "--data=" + data
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"vine", "write", f, "--ops", `[{"op":"explode","id":"a"}]`}, 2},
		{[]string{"vine", "write", f, "--ops", `[{"op":"add_dep","taskId":"a","depId":"root"}]`}, 2},
		{[]string{"vine", "write", f, "--ops", `[{"op":"set_status","id":"ghost","status":"complete"}]`}, 3},
		{[]string{"vine", "write", f, "--ops", `[{"op":"set_status","id":"b","status":"complete"},{"op":"remove_task","id":"root"}]`}, 2},
		{[]string{"vine", "claim", f, "--id", "root", "--agent", "agent-1"}, 4},
		{[]string{"vine", "expand", f, "docs", "./missing.vine"}, 2},
		{[]string{"vine", "expand", f, "b", "./docs.vine"}, 2},
		{[]string{"vine", "expand", f, "docs", "./docs.vine"}, 2}, // prefix "docs": no clash, but...
	} {
		if c.args[1] == "expand" && c.args[3] == "docs" && c.args[4] == "./docs.vine" {
			// ...an empty prefix makes the child's "a" collide with the parent's.
			if err := os.WriteFile(filepath.Join(ws, "docs.vine"), []byte("vine 1.2.0\nprefix: \n---\n[x] X (notstarted)\n-> a\n---\n[a] Clash (notstarted)\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		code, _, errs := cli(t, append(c.args, d)...)
		if code != c.code {
			t.Errorf("%v: exit %d (%s); want %d", c.args, code, errs, c.code)
		}
		if got, _ := os.ReadFile(f); string(got) != cliGraph {
			t.Fatalf("%v failed but modified %s:\n%s", c.args, f, got)
		}
	}
}

// TestVineRunStalled: `vine run` on a graph no agent can move forward
// exits 8 (stalled) naming what holds it, not 1 (internal).
func TestVineRunStalled(t *testing.T) {
	t.Parallel()
	data, ws := t.TempDir(), t.TempDir()
	blocked := filepath.Join(ws, "blocked.vine")
	if err := os.WriteFile(blocked, []byte("vine 1.2.0\n---\n[root] Ship (notstarted)\n-> lint\n---\n[lint] Lint (blocked)\n> linter crashed on main.go\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(ws, "missing.vine")
	if err := os.WriteFile(missing, []byte("vine 1.2.0\n---\n[root] Ship (notstarted)\n-> a\n-> lib\n---\n[a] A (notstarted)\n---\nref [lib] Library (./lib.vine)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		file string
		want []string
	}{
		{blocked, []string{"trellis: stalled: ", "root root is notstarted", "blocked: lint (linter crashed on main.go)", "trellis vine write"}},
		{missing, []string{"trellis: stalled: ", "cannot be expanded: lib (./lib.vine: ", "lib.vine does not exist"}},
	} {
		code, out, errs := cli(t, "vine", "run", c.file, "--agent", "agent-1", "--data", data, "--workspace", ws)
		if code != 8 {
			t.Fatalf("%s: exit %d, stderr %q; want 8 (stalled)", c.file, code, errs)
		}
		for _, w := range c.want {
			if !strings.Contains(errs, w) {
				t.Errorf("%s: stderr %q lacks %q", c.file, errs, w)
			}
		}
		if !strings.Contains(out, "agent-1: claimed") {
			t.Errorf("%s: no run report on stdout: %q", c.file, out)
		}
	}
	// The frontier printed by vine next says so too (exit 0: it is a read).
	code, out, _ := cli(t, "vine", "next", blocked, "--data", data, "--workspace", ws)
	if code != 0 || !strings.Contains(out, "stalled: ") {
		t.Fatalf("vine next on a stalled graph: exit %d\n%s", code, out)
	}
}
