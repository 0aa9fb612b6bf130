package agentmemory_test

import (
	"context"
	"testing"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/handlers"
	"github.com/trellis/trellis/internal/servicetest"
)

// reuseFinding is what both tasks named fix-auth find.
const reuseFinding = "The auth middleware skips expired token validation on refresh"

// finishTask runs one task named name the way an agent does: create, join,
// observe (the finding and a decision), complete the agent (session and
// agent consolidation onto the task branch), complete the task.
func finishTask(ctx context.Context, t *testing.T, svc *handlers.Service, name string, texts ...string) *trellis.AgentTaskView {
	t.Helper()
	task, err := svc.TaskCreate(ctx, trellis.AgentTaskCreateRequest{Name: name, Description: "Fix auth"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.TaskJoin(ctx, trellis.AgentTaskJoinRequest{Task: name, Agent: "agent_1", Role: "implementer"}); err != nil {
		t.Fatal(err)
	}
	for _, text := range texts {
		if _, err := svc.Observe(ctx, trellis.ObserveRequest{Task: name, Agent: "agent_1", Session: "s1", Type: "insight", Text: text}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := svc.TaskCompleteAgent(ctx, trellis.AgentCompleteRequest{Task: name, Agent: "agent_1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.TaskComplete(ctx, trellis.AgentTaskCompleteRequest{Task: name}); err != nil {
		t.Fatal(err)
	}
	return task
}

// TestMemoryTaskNameReuseKeepsMemoryApart: issue 18: a new fix-auth,
// created after the old fix-auth completed, got the old task's facts in its
// context, its dedup (its own finding "deduplicated" into the old fact) and
// its checkpoint. Each task's memory is its own; the old task's stays
// readable by its id.
func TestMemoryTaskNameReuseKeepsMemoryApart(t *testing.T) {
	t.Parallel()
	svc, _ := servicetest.Start(t)
	ctx := context.Background()
	old := finishTask(ctx, t, svc, "fix-auth", reuseFinding, "Use a shared validator for all token paths")

	task, err := svc.TaskCreate(ctx, trellis.AgentTaskCreateRequest{Name: "fix-auth", Description: "Fix auth again"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := svc.TaskContext(ctx, "fix-auth")
	if err != nil {
		t.Fatal(err)
	}
	if c.Task.TaskID != task.TaskID || len(c.KeyFacts) != 0 {
		t.Fatalf("the new task's context holds the old task's facts: %+v", c.KeyFacts)
	}
	for _, b := range []string{task.Branch, "task/fix-auth"} {
		if fs, err := svc.Facts(ctx, trellis.FactsRequest{Branch: b}); err != nil || len(fs) != 0 {
			t.Fatalf("facts on %s of the new task = %+v, %v", b, fs, err)
		}
	}
	// Writing through the old id is refused: it never reaches the task that
	// now has the name (open).
	if _, err := svc.Observe(ctx, trellis.ObserveRequest{Task: old.TaskID, Agent: "agent_1", Session: "s3", Type: "insight", Text: "late"}); trellis.ErrorCode(err) != trellis.CodeConflict {
		t.Fatalf("observe on the old task's id: %v", err)
	}
	if _, err := svc.Consolidate(ctx, trellis.ConsolidateRequest{Level: "task", Task: old.TaskID}); trellis.ErrorCode(err) != trellis.CodeConflict {
		t.Fatalf("checkpoint of the old task's id: %v", err)
	}
	j, err := svc.TaskJoin(ctx, trellis.AgentTaskJoinRequest{Task: "fix-auth", Agent: "agent_1", Role: "implementer"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Observe(ctx, trellis.ObserveRequest{Branch: "task/fix-auth/agent_1", Session: "s2", Type: "insight", Text: reuseFinding}); err != nil {
		t.Fatal(err)
	}
	r, err := svc.TaskCompleteAgent(ctx, trellis.AgentCompleteRequest{Task: "fix-auth", Agent: "agent_1"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Created != 1 || r.Updated != 0 || r.Deduplicated != 0 || r.SourceBranch != j.Branch || r.TargetBranch != task.Branch {
		t.Fatalf("the new task's finding was deduplicated against the old task's facts: %+v", r)
	}
	c, err = svc.TaskContext(ctx, "fix-auth")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.KeyFacts) != 1 || c.KeyFacts[0].FactText != reuseFinding || c.KeyFacts[0].TaskID != task.TaskID {
		t.Fatalf("new task's key facts = %+v", c.KeyFacts)
	}
	fs, err := svc.Facts(ctx, trellis.FactsRequest{Branch: "task/fix-auth", Status: "active"})
	if err != nil || len(fs) != 1 || fs[0].TaskID != task.TaskID {
		t.Fatalf("facts --branch task/fix-auth = %+v, %v", fs, err)
	}
	done, err := svc.TaskComplete(ctx, trellis.AgentTaskCompleteRequest{Task: "fix-auth"})
	if err != nil {
		t.Fatal(err)
	}
	if len(done.Durable)+len(done.Ephemeral) != 1 {
		t.Fatalf("the new task's checkpoint classified the old task's facts too: %+v", done)
	}

	// The old task's memory is addressed by its id.
	oc, err := svc.TaskContext(ctx, old.TaskID)
	if err != nil {
		t.Fatal(err)
	}
	if oc.Task.TaskID != old.TaskID || len(oc.KeyFacts) != 2 {
		t.Fatalf("old task's context = %+v, key facts %+v", oc.Task, oc.KeyFacts)
	}
	of, err := svc.Facts(ctx, trellis.FactsRequest{Task: old.TaskID, Branch: old.Branch, Status: "active"})
	if err != nil || len(of) != 2 || of[0].TaskID != old.TaskID {
		t.Fatalf("old task's facts = %+v, %v", of, err)
	}
	if v, err := svc.TaskShow(ctx, old.TaskID); err != nil || v.TaskID != old.TaskID || v.Status != "completed" {
		t.Fatalf("task show of the old id = %+v, %v", v, err)
	}
}

// TestMemoryMergeIntoParentTask: a task whose parent is another task's
// branch merges its durable facts into that task's own memory (its scope
// is keyed by its id), so they are in the parent task's context.
func TestMemoryMergeIntoParentTask(t *testing.T) {
	t.Parallel()
	svc, _ := servicetest.Start(t)
	ctx := context.Background()
	epic, err := svc.TaskCreate(ctx, trellis.AgentTaskCreateRequest{Name: "epic"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.TaskCreate(ctx, trellis.AgentTaskCreateRequest{Name: "sub", Parent: epic.Branch}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.TaskJoin(ctx, trellis.AgentTaskJoinRequest{Task: "sub", Agent: "agent_1", Role: "implementer"}); err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{reuseFinding, reuseFinding + "!"} {
		if _, err := svc.Observe(ctx, trellis.ObserveRequest{Task: "sub", Agent: "agent_1", Session: "s1", Type: "insight", Text: text}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := svc.TaskCompleteAgent(ctx, trellis.AgentCompleteRequest{Task: "sub", Agent: "agent_1"}); err != nil {
		t.Fatal(err)
	}
	done, err := svc.TaskComplete(ctx, trellis.AgentTaskCompleteRequest{Task: "sub", Merge: true})
	if err != nil || len(done.Runs) != 1 || done.Runs[0].Created != 1 || done.Runs[0].TargetBranch != "task/epic" {
		t.Fatalf("sub's completion = %+v, %v", done, err)
	}
	c, err := svc.TaskContext(ctx, "epic")
	if err != nil || len(c.KeyFacts) != 1 || c.KeyFacts[0].FactText != reuseFinding || c.KeyFacts[0].Branch != "task/epic" {
		t.Fatalf("epic's context = %+v, %v", c, err)
	}
}
