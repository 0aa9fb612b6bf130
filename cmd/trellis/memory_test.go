package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/server"
)

// TestCLIAgentMemory drives seed 004's flow through the CLI contract.
func TestCLIAgentMemory(t *testing.T) {
	t.Parallel()
	d := "--data=" + t.TempDir()
	code, out, errs := cli(t, "task", "create", d, "--name", "fix-auth", "--objective", "Fix it", "--json")
	if code != 0 {
		t.Fatalf("create: %d %s", code, errs)
	}
	var task trellis.AgentTaskView
	mustJSON(t, out, &task)
	if task.Branch != "task/fix-auth" || task.Objectives[0].ObjectiveID != "obj-1" || task.Objectives[0].Status != "todo" {
		t.Fatalf("task = %+v", task)
	}
	code, out, _ = cli(t, "task", "join", "fix-auth", d, "--agent", "a1", "--role", "implementer", "--json")
	var join trellis.AgentTaskJoinResult
	mustJSON(t, out, &join)
	if code != 0 || join.Branch != "task/fix-auth/a1" || join.TaskID != task.TaskID {
		t.Fatalf("join = %+v", join)
	}
	for _, text := range []string{"Fix the auth bug in the refresh path", "Fix the auth bug in the refresh path"} {
		if code, _, errs = cli(t, "observe", d, "--task", "fix-auth", "--agent", "a1", "--session", "s1", "--type", "insight", "--text", text); code != 0 {
			t.Fatalf("observe: %d %s", code, errs)
		}
	}
	if code, _, errs = cli(t, "task", "objective", "fix-auth", "obj-1", d, "--status", "done", "--agent", "a1"); code != 0 {
		t.Fatalf("objective: %d %s", code, errs)
	}
	if code, _, errs = cli(t, "task", "objective", "fix-auth", "obj-1", d, "--status", "todo"); code != 4 {
		t.Fatalf("done -> todo: exit %d %s; want 4", code, errs)
	}
	if code, _, errs = cli(t, "task", "create", d, "--name", "fix-auth"); code != 4 || !strings.Contains(errs, "already open") {
		t.Fatalf("duplicate name: exit %d %s; want 4", code, errs)
	}
	if code, out, errs = cli(t, "task", "complete-agent", "fix-auth", d, "--agent", "a1"); code != 0 || !strings.Contains(out, "agent_complete") {
		t.Fatalf("complete-agent: %d %s %s", code, out, errs)
	}
	code, out, errs = cli(t, "task", "complete", "fix-auth", d, "--merge", "--json")
	var rep trellis.ConsolidationReport
	mustJSON(t, out, &rep)
	if code != 0 || len(rep.Durable) != 1 || len(rep.Ephemeral) != 0 {
		t.Fatalf("complete: %d %+v %s", code, rep, errs)
	}
	code, out, _ = cli(t, "facts", d, "--branch", "main", "--json")
	var facts []trellis.FactView
	mustJSON(t, out, &facts)
	if code != 0 || len(facts) != 1 || facts[0].Category != "bug_fix" || facts[0].Confidence != 0.8 {
		t.Fatalf("facts on main = %+v", facts)
	}
	code, out, _ = cli(t, "consolidate", "history", d, "--task", "fix-auth", "--json")
	var runs []trellis.ConsolidationReport
	mustJSON(t, out, &runs)
	if code != 0 || len(runs) != 4 {
		t.Fatalf("history = %+v", runs)
	}
	if code, _, errs = cli(t, "consolidate", d, "--level", "session", "--session", "nope"); code != 3 {
		t.Fatalf("unknown session: exit %d %s; want 3", code, errs)
	}
}

// TestCLIConsolidateNothingNew: consolidating a session again when it has
// no new observations succeeds (exit 0) with zero counts and a summary
// saying there is nothing new, and appends no run; a session that never
// observed anything is still not found (exit 3), on its own and on a task.
func TestCLIConsolidateNothingNew(t *testing.T) {
	t.Parallel()
	d := "--data=" + t.TempDir()
	if code, _, errs := cli(t, "task", "create", d, "--name", "nn", "--objective", "x"); code != 0 {
		t.Fatalf("create: %d %s", code, errs)
	}
	if code, _, errs := cli(t, "task", "join", "nn", d, "--agent", "a1", "--role", "implementer"); code != 0 {
		t.Fatalf("join: %d %s", code, errs)
	}
	for _, args := range [][]string{
		{"--branch", "main", "--session", "s2", "--type", "insight", "--text", "The cache is rebuilt on every start"},
		{"--task", "nn", "--agent", "a1", "--session", "s3", "--type", "decision", "--text", "Keep one cache per process"},
	} {
		if code, _, errs := cli(t, append([]string{"observe", d}, args...)...); code != 0 {
			t.Fatalf("observe %v: %d %s", args, code, errs)
		}
	}
	history := func() int {
		t.Helper()
		code, out, errs := cli(t, "consolidate", "history", d, "--json")
		var runs []trellis.ConsolidationReport
		mustJSON(t, out, &runs)
		if code != 0 {
			t.Fatalf("history: %d %s", code, errs)
		}
		return len(runs)
	}
	for _, c := range []struct {
		name string
		args []string
	}{
		{"session", []string{"--session", "s2"}},
		{"session on a task", []string{"--session", "s3", "--task", "nn"}},
	} {
		base := append([]string{"consolidate", d, "--level", "session"}, c.args...)
		code, out, errs := cli(t, append(base, "--json")...)
		var first trellis.ConsolidationReport
		mustJSON(t, out, &first)
		if code != 0 || first.Created != 1 || first.Processed != 1 {
			t.Fatalf("%s: first run: %d %+v %s", c.name, code, first, errs)
		}
		runs := history()

		code, out, errs = cli(t, base...)
		if code != 0 || !strings.Contains(out, "nothing new to consolidate") || errs != "" {
			t.Fatalf("%s: second run: exit %d, %q, %q; want 0 and nothing new", c.name, code, out, errs)
		}
		code, out, errs = cli(t, append(base, "--json")...)
		var again trellis.ConsolidationReport
		mustJSON(t, out, &again)
		if code != 0 || again.Type != "session_end" || again.Created+again.Updated+again.Deduplicated+again.Superseded+again.Processed != 0 ||
			!strings.Contains(again.Summary, "nothing new to consolidate") || again.Session != c.args[1] || again.RunID != "" {
			t.Fatalf("%s: second run --json: %d %+v %s", c.name, code, again, errs)
		}
		if n := history(); n != runs {
			t.Fatalf("%s: nothing to consolidate appended runs: %d -> %d", c.name, runs, n)
		}
	}
	// Never observed: not found, also on a task where the session observed
	// nothing (s2 observed on main only).
	for _, args := range [][]string{{"--session", "nope"}, {"--session", "s2", "--task", "nn"}} {
		if code, _, errs := cli(t, append([]string{"consolidate", d, "--level", "session"}, args...)...); code != 3 {
			t.Fatalf("%v: exit %d %s; want 3", args, code, errs)
		}
	}
}

// TestCLITaskCompleteNeedsForce: `task complete` on a task with an
// objective not done or an agent still working exits 4 naming them and
// completes nothing; --force completes it and warns on stderr what was
// unfinished. Run in-process and through a running server (NATS API).
func TestCLITaskCompleteNeedsForce(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	served := t.TempDir()
	srv, err := server.Start(ctx, server.Config{DataDir: served, NATSAddr: "127.0.0.1:0", ServeAPI: true, WriteInfo: true, SyncInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	for name, data := range map[string]string{"in-process": t.TempDir(), "through a server": served} {
		d := "--data=" + data
		steps := [][]string{
			{"task", "create", d, "--name", "busy", "--objective", "Fix it", "--objective", "Test it"},
			{"task", "join", "busy", d, "--agent", "a1", "--role", "implementer"},
			{"task", "join", "busy", d, "--agent", "a2", "--role", "reviewer"},
			{"task", "objective", "busy", "obj-1", d, "--status", "done", "--agent", "a1"},
			{"task", "complete-agent", "busy", d, "--agent", "a1"},
		}
		for _, args := range steps {
			if code, _, errs := cli(t, args...); code != 0 {
				t.Fatalf("%s: %v: exit %d: %s", name, args, code, errs)
			}
		}
		code, out, errs := cli(t, "task", "complete", "busy", d)
		if code != 4 || !strings.Contains(errs, `obj-2 (todo) "Test it"`) || !strings.Contains(errs, "agent a2 (reviewer) still working") ||
			!strings.Contains(errs, "--force") || strings.Contains(errs, "obj-1") {
			t.Fatalf("%s: complete with unfinished work: exit %d, stdout %q, stderr %q; want 4 naming obj-2 and a2", name, code, out, errs)
		}
		code, out, _ = cli(t, "task", "show", "busy", d, "--json")
		var v trellis.AgentTaskView
		mustJSON(t, out, &v)
		if code != 0 || v.Status != "open" {
			t.Fatalf("%s: the refused completion changed the task: %+v", name, v)
		}
		code, out, errs = cli(t, "task", "complete", "busy", d, "--force", "--json")
		var rep trellis.ConsolidationReport
		mustJSON(t, out, &rep)
		if code != 0 || rep.Type != "task_checkpoint" || !strings.Contains(errs, "warning") || !strings.Contains(errs, "obj-2") || !strings.Contains(errs, "a2") {
			t.Fatalf("%s: forced completion: exit %d, %+v, stderr %q", name, code, rep, errs)
		}
		if code, out, _ = cli(t, "task", "show", "busy", d, "--json"); code != 0 || !strings.Contains(out, `"status": "completed"`) {
			t.Fatalf("%s: forced task: %s", name, out)
		}
	}
}
