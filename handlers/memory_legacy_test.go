package handlers

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/audit"
	"github.com/trellis/trellis/command"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
)

// TestMemoryLegacyTaskKeepsNameScope: a task created before memory was
// keyed by task id (its created event has no memory_scope) keeps reading
// and writing its memory in the name's scope, task-<name>; a new task of
// the same name gets its own scope, taskid-<id>; nothing is rewritten and
// audit verify finds the log untouched.
func TestMemoryLegacyTaskKeepsNameScope(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	svc := NewService(b.Store, ServiceConfig{DataDir: t.TempDir()})
	ctx := context.Background()
	if err := svc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Close() })

	// The created event as it was written before: no memory_scope.
	// (Appended through a command runner of the agent task's aggregate,
	// as agentmemory's handler appends, chained.)
	tasks := command.New(b.Store, command.Kind[*events.AgentTask]{Name: "agent task", Stream: events.StreamTasks,
		Filter: events.TaskNameFilter, Fold: events.ApplyAgentTask, Schema: events.TasksSchema}, command.Config{MaxAttempts: 1})
	st, err := tasks.Load(ctx, "fix-auth")
	if err != nil {
		t.Fatal(err)
	}
	oldID := events.NewID(time.Now())
	_, err = tasks.Run(ctx, st, "trellis", func(*events.AgentTask) (command.Decision, error) {
		return command.Decision{Subject: events.TasksSubject("fix-auth", events.AgentTaskCreated), Type: events.AgentTaskCreated,
			Payload: events.AgentTaskCreatedPayload{TaskID: oldID, Name: "fix-auth", ParentBranch: "main", Objectives: []events.ObjectiveSpec{}}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	const finding = "The auth middleware skips expired token validation on refresh"
	if _, err := svc.TaskJoin(ctx, trellis.AgentTaskJoinRequest{Task: "fix-auth", Agent: "agent_1", Role: "implementer"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Observe(ctx, trellis.ObserveRequest{Branch: "task/fix-auth/agent_1", Session: "s1", Type: "insight", Text: finding}); err != nil {
		t.Fatal(err)
	}
	if r, err := svc.TaskCompleteAgent(ctx, trellis.AgentCompleteRequest{Task: "fix-auth", Agent: "agent_1"}); err != nil || r.Created != 1 {
		t.Fatalf("agent completion = %+v, %v", r, err)
	}
	c, err := svc.TaskContext(ctx, "fix-auth")
	if err != nil || c.Task.TaskID != oldID || c.Task.Branch != "task/fix-auth" || len(c.KeyFacts) != 1 {
		t.Fatalf("legacy task's context = %+v, %v", c, err)
	}
	if _, err := svc.TaskComplete(ctx, trellis.AgentTaskCompleteRequest{Task: "fix-auth"}); err != nil {
		t.Fatal(err)
	}

	task, err := svc.TaskCreate(ctx, trellis.AgentTaskCreateRequest{Name: "fix-auth"})
	if err != nil {
		t.Fatal(err)
	}
	if c, err := svc.TaskContext(ctx, "fix-auth"); err != nil || c.Task.TaskID != task.TaskID || len(c.KeyFacts) != 0 {
		t.Fatalf("new task's context = %+v, %v", c, err)
	}
	if _, err := svc.TaskJoin(ctx, trellis.AgentTaskJoinRequest{Task: "fix-auth", Agent: "agent_1", Role: "implementer"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Observe(ctx, trellis.ObserveRequest{Task: task.TaskID, Agent: "agent_1", Session: "s2", Type: "insight", Text: finding}); err != nil {
		t.Fatal(err)
	}
	recs, _, err := b.Store.Load(ctx, events.StreamMemory, "trellis.memory.>")
	if err != nil {
		t.Fatal(err)
	}
	var subjects []string
	for _, r := range recs {
		subjects = append(subjects, r.Subject)
	}
	want := "trellis.memory.task-fix-auth.observed trellis.memory.task-fix-auth.consolidated trellis.memory.task-fix-auth.consolidated " +
		"trellis.memory.task-fix-auth.consolidated trellis.memory." + events.TaskScope(task.TaskID) + ".observed"
	if got := strings.Join(subjects, " "); got != want {
		t.Fatalf("memory subjects:\n got %s\nwant %s", got, want)
	}
	// The old task is read by its id, from its name's scope.
	if c, err := svc.TaskContext(ctx, oldID); err != nil || c.Task.TaskID != oldID || len(c.KeyFacts) != 1 || c.KeyFacts[0].TaskID != oldID {
		t.Fatalf("legacy task's context by id = %+v, %v", c, err)
	}
	// A restarted service folds the same log the same way.
	svc2 := NewService(b.Store, ServiceConfig{DataDir: t.TempDir()})
	if err := svc2.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc2.Close() })
	if c, err := svc2.TaskContext(ctx, oldID); err != nil || len(c.KeyFacts) != 1 {
		t.Fatalf("legacy task's context after a restart = %+v, %v", c, err)
	}
	rep, err := audit.Verify(ctx, b.Store, audit.VerifyOptions{}, func(f audit.Finding) error {
		t.Errorf("audit finding: %+v", f)
		return nil
	})
	if err != nil || !rep.OK {
		t.Fatalf("audit verify = %+v, %v", rep, err)
	}
}
