package agentmemory_test

import (
	"context"
	"strings"
	"testing"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/internal/servicetest"
)

func TestMemoryTwoAgentsCollapseAndMerge(t *testing.T) {
	t.Parallel()
	svc, _ := servicetest.Start(t)
	ctx := context.Background()
	task, err := svc.TaskCreate(ctx, trellis.AgentTaskCreateRequest{Name: "fix-auth", Description: "Fix auth", Objectives: []string{"Fix middleware", "Add tests"}})
	if err != nil {
		t.Fatal(err)
	}
	if task.Branch != "task/fix-auth" || len(task.Objectives) != 2 || task.Objectives[0].Status != "todo" || task.Objectives[0].ObjectiveID == "" {
		t.Fatalf("task = %+v", task)
	}
	j, err := svc.TaskJoin(ctx, trellis.AgentTaskJoinRequest{Task: "fix-auth", Agent: "agent_1", Role: "implementer"})
	if err != nil || j.Branch != "task/fix-auth/agent_1" {
		t.Fatalf("join = %+v, %v", j, err)
	}
	if _, err := svc.TaskJoin(ctx, trellis.AgentTaskJoinRequest{Task: task.TaskID, Agent: "agent_2", Role: "reviewer"}); err != nil {
		t.Fatal(err)
	}
	obs := func(agent, session, typ, text string) {
		t.Helper()
		if _, err := svc.Observe(ctx, trellis.ObserveRequest{Task: "fix-auth", Agent: agent, Session: session, Type: typ, Text: text}); err != nil {
			t.Fatal(err)
		}
	}
	// The same finding twice in one session: one fact, boosted.
	obs("agent_1", "s1", "insight", "The auth middleware skips expired token validation on refresh")
	obs("agent_1", "s1", "insight", "The auth middleware skips expired token validation on refresh!")
	obs("agent_1", "s1", "note", "lunch")
	obs("agent_1", "s1", "decision", "Use a shared validator for all token paths")
	// Agent 2 finds the same bug.
	obs("agent_2", "s2", "insight", "The auth middleware skips expired token validation on refresh")
	rep, err := svc.Consolidate(ctx, trellis.ConsolidateRequest{Level: "session", Session: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Type != "session_end" || rep.Created != 2 || rep.Updated != 1 || rep.Processed != 4 {
		t.Fatalf("session run = %+v", rep)
	}
	facts, _ := svc.Facts(ctx, trellis.FactsRequest{Branch: "task/fix-auth/agent_1", Status: "active"})
	if len(facts) != 2 || facts[0].Confidence != 0.8 || facts[0].Category != "security" || facts[1].Category != "decision" {
		t.Fatalf("agent_1 facts = %+v", facts)
	}
	if _, err := svc.TaskCompleteAgent(ctx, trellis.AgentCompleteRequest{Task: "fix-auth", Agent: "agent_1"}); err != nil {
		t.Fatal(err)
	}
	r2, err := svc.TaskCompleteAgent(ctx, trellis.AgentCompleteRequest{Task: "fix-auth", Agent: "agent_2"})
	if err != nil {
		t.Fatal(err)
	}
	if r2.Type != "agent_complete" || r2.Deduplicated+r2.Updated != 1 || r2.Created != 0 {
		t.Fatalf("agent_2's duplicate finding did not collapse into the task branch: %+v", r2)
	}
	tf, _ := svc.Facts(ctx, trellis.FactsRequest{Branch: "task/fix-auth", Status: "active"})
	if len(tf) != 2 {
		t.Fatalf("task facts = %+v", tf)
	}
	for _, obj := range []string{"obj-1", "obj-2"} {
		for _, st := range []string{"active", "done"} {
			if _, err := svc.TaskObjective(ctx, trellis.AgentTaskObjectiveRequest{Task: "fix-auth", ObjectiveID: obj, Status: st}); err != nil {
				t.Fatal(err)
			}
		}
	}
	done, err := svc.TaskComplete(ctx, trellis.AgentTaskCompleteRequest{Task: "fix-auth", Merge: true})
	if err != nil {
		t.Fatal(err)
	}
	if done.Type != "task_checkpoint" || len(done.Durable) != 1 || len(done.Ephemeral) != 1 || len(done.Runs) != 1 || done.Runs[0].Type != "merge" {
		t.Fatalf("task run = %+v", done)
	}
	main, _ := svc.Facts(ctx, trellis.FactsRequest{Branch: "main"})
	if len(main) != 1 || !strings.Contains(main[0].FactText, "expired token") || main[0].SourceFact == "" {
		t.Fatalf("main facts = %+v", main)
	}
	hist, _ := svc.History(ctx, trellis.HistoryRequest{Task: "fix-auth"})
	var types []string
	for _, h := range hist {
		types = append(types, h.Type)
	}
	if strings.Join(types, " ") != "session_end agent_complete session_end agent_complete task_checkpoint merge" {
		t.Fatalf("history = %v", types)
	}
	// The name is free again once the task is completed.
	if _, err := svc.TaskCreate(ctx, trellis.AgentTaskCreateRequest{Name: "fix-auth"}); err != nil {
		t.Fatalf("reuse of a completed task's name: %v", err)
	}
	// Replay rebuilds the same facts.
	before, _ := svc.Facts(ctx, trellis.FactsRequest{})
	if _, err := svc.Replay(ctx); err != nil {
		t.Fatal(err)
	}
	after, _ := svc.Facts(ctx, trellis.FactsRequest{})
	if len(before) != len(after) {
		t.Fatalf("replay: %d facts, then %d", len(before), len(after))
	}
}

func TestMemoryBadInput(t *testing.T) {
	t.Parallel()
	svc, b := servicetest.Start(t)
	ctx := context.Background()
	if _, err := svc.TaskCreate(ctx, trellis.AgentTaskCreateRequest{Name: "t1", Objectives: []string{"a"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.TaskJoin(ctx, trellis.AgentTaskJoinRequest{Task: "t1", Agent: "a1", Role: "r"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.TaskObjective(ctx, trellis.AgentTaskObjectiveRequest{Task: "t1", ObjectiveID: "obj-1", Status: "done"}); err != nil {
		t.Fatal(err)
	}
	seqT, _ := b.Store.LastSeq(ctx, events.StreamTasks)
	seqM, _ := b.Store.LastSeq(ctx, events.StreamMemory)
	cases := []struct {
		name string
		call func() error
		code trellis.Code
	}{
		{"duplicate name", func() error { _, err := svc.TaskCreate(ctx, trellis.AgentTaskCreateRequest{Name: "t1"}); return err }, trellis.CodeConflict},
		{"bad name", func() error {
			_, err := svc.TaskCreate(ctx, trellis.AgentTaskCreateRequest{Name: "no spaces"})
			return err
		}, trellis.CodeInvalid},
		{"unknown task", func() error {
			_, err := svc.TaskJoin(ctx, trellis.AgentTaskJoinRequest{Task: "nope", Agent: "a", Role: "r"})
			return err
		}, trellis.CodeNotFound},
		{"join twice", func() error {
			_, err := svc.TaskJoin(ctx, trellis.AgentTaskJoinRequest{Task: "t1", Agent: "a1", Role: "r"})
			return err
		}, trellis.CodeConflict},
		{"done -> todo", func() error {
			_, err := svc.TaskObjective(ctx, trellis.AgentTaskObjectiveRequest{Task: "t1", ObjectiveID: "obj-1", Status: "todo"})
			return err
		}, trellis.CodeConflict},
		{"bad status", func() error {
			_, err := svc.TaskObjective(ctx, trellis.AgentTaskObjectiveRequest{Task: "t1", ObjectiveID: "obj-1", Status: "finished"})
			return err
		}, trellis.CodeInvalid},
		{"unknown objective", func() error {
			_, err := svc.TaskObjective(ctx, trellis.AgentTaskObjectiveRequest{Task: "t1", ObjectiveID: "obj-9", Status: "active"})
			return err
		}, trellis.CodeNotFound},
		{"unknown agent observes", func() error {
			_, err := svc.Observe(ctx, trellis.ObserveRequest{Task: "t1", Agent: "ghost", Session: "s", Type: "insight", Text: "x"})
			return err
		}, trellis.CodeNotFound},
		{"empty text", func() error {
			_, err := svc.Observe(ctx, trellis.ObserveRequest{Branch: "main", Session: "s", Type: "insight", Text: "  "})
			return err
		}, trellis.CodeInvalid},
		{"no branch", func() error {
			_, err := svc.Observe(ctx, trellis.ObserveRequest{Session: "s", Type: "insight", Text: "x"})
			return err
		}, trellis.CodeInvalid},
		{"unknown session", func() error {
			_, err := svc.Consolidate(ctx, trellis.ConsolidateRequest{Level: "session", Session: "never"})
			return err
		}, trellis.CodeNotFound},
		{"bad level", func() error { _, err := svc.Consolidate(ctx, trellis.ConsolidateRequest{Level: "galaxy"}); return err }, trellis.CodeInvalid},
		{"unknown agent completes", func() error {
			_, err := svc.TaskCompleteAgent(ctx, trellis.AgentCompleteRequest{Task: "t1", Agent: "ghost"})
			return err
		}, trellis.CodeNotFound},
		{"bad fact status", func() error { _, err := svc.Facts(ctx, trellis.FactsRequest{Status: "gone"}); return err }, trellis.CodeInvalid},
	}
	for _, c := range cases {
		if err := c.call(); trellis.ErrorCode(err) != c.code {
			t.Errorf("%s: %v; want %s", c.name, err, c.code)
		}
	}
	if s, _ := b.Store.LastSeq(ctx, events.StreamTasks); s != seqT {
		t.Fatal("bad input changed the task log")
	}
	if s, _ := b.Store.LastSeq(ctx, events.StreamMemory); s != seqM {
		t.Fatal("bad input changed the memory log")
	}
}

// TestTaskCompleteNeedsForce: completing a task whose objectives are not
// all done, or whose agents are still working, is a conflict naming each
// of them, and nothing is recorded; force completes it anyway; a task with
// everything finished completes without force.
func TestTaskCompleteNeedsForce(t *testing.T) {
	t.Parallel()
	svc, b := servicetest.Start(t)
	ctx := context.Background()
	if _, err := svc.TaskCreate(ctx, trellis.AgentTaskCreateRequest{Name: "busy", Objectives: []string{"Fix middleware", "Add tests", "Write docs"}}); err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{"agent_1", "agent_2"} {
		if _, err := svc.TaskJoin(ctx, trellis.AgentTaskJoinRequest{Task: "busy", Agent: a, Role: "implementer"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, u := range []trellis.AgentTaskObjectiveRequest{
		{Task: "busy", ObjectiveID: "obj-1", Status: "active"}, {Task: "busy", ObjectiveID: "obj-1", Status: "done"},
		{Task: "busy", ObjectiveID: "obj-2", Status: "active"}, {Task: "busy", ObjectiveID: "obj-3", Status: "blocked"},
	} {
		if _, err := svc.TaskObjective(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := svc.TaskCompleteAgent(ctx, trellis.AgentCompleteRequest{Task: "busy", Agent: "agent_1"}); err != nil {
		t.Fatal(err)
	}
	_, last, err := b.Store.Load(ctx, events.StreamTasks, events.TaskNameFilter("busy"))
	if err != nil {
		t.Fatal(err)
	}
	runs, err := svc.History(ctx, trellis.HistoryRequest{Task: "busy"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = svc.TaskComplete(ctx, trellis.AgentTaskCompleteRequest{Task: "busy", Merge: true})
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	if trellis.ErrorCode(err) != trellis.CodeConflict {
		t.Fatalf("complete with unfinished work: %v; want conflict", err)
	}
	for _, want := range []string{"obj-2 (active)", "obj-3 (blocked)", "agent_2", "force"} {
		if !strings.Contains(msg, want) {
			t.Errorf("conflict %q does not name %q", msg, want)
		}
	}
	if strings.Contains(msg, "obj-1") || strings.Contains(msg, "agent_1") {
		t.Errorf("conflict %q names finished work", msg)
	}
	_, after, err := b.Store.Load(ctx, events.StreamTasks, events.TaskNameFilter("busy"))
	if err != nil || after != last {
		t.Fatalf("the refused completion appended events (last seq %d -> %d, %v)", last, after, err)
	}
	if hist, _ := svc.History(ctx, trellis.HistoryRequest{Task: "busy"}); len(hist) != len(runs) {
		t.Fatalf("the refused completion ran a consolidation: %+v", hist[len(runs):])
	}
	rep, err := svc.TaskComplete(ctx, trellis.AgentTaskCompleteRequest{Task: "busy", Force: true})
	if err != nil || rep.Type != "task_checkpoint" {
		t.Fatalf("forced completion: %+v, %v", rep, err)
	}
	if v, _ := svc.TaskShow(ctx, "busy"); v == nil || v.Status != events.AgentTaskStatusCompleted {
		t.Fatalf("forced task = %+v", v)
	}

	// Everything finished: no force needed.
	if _, err := svc.TaskCreate(ctx, trellis.AgentTaskCreateRequest{Name: "tidy", Objectives: []string{"One thing"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.TaskJoin(ctx, trellis.AgentTaskJoinRequest{Task: "tidy", Agent: "agent_1", Role: "implementer"}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"active", "done"} {
		if _, err := svc.TaskObjective(ctx, trellis.AgentTaskObjectiveRequest{Task: "tidy", ObjectiveID: "obj-1", Status: s}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := svc.TaskCompleteAgent(ctx, trellis.AgentCompleteRequest{Task: "tidy", Agent: "agent_1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.TaskComplete(ctx, trellis.AgentTaskCompleteRequest{Task: "tidy"}); err != nil {
		t.Fatalf("complete a finished task: %v", err)
	}
}
