package main

import (
	"strings"
	"testing"

	"github.com/trellis/trellis"
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
	var join trellis.TaskJoinResult
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
