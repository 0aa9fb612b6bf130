package agentmemory_test

import (
	"context"
	"testing"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/auth"
	"github.com/trellis/trellis/internal/servicetest"
)

// TestObserveOnAnAgentBranchChecksTheAgent: an observation named by its
// branch, task/<name>/<agent>, gets the same checks as one named by task
// and agent: the agent joined and has not completed, and the caller is
// that agent. A worker token cannot write onto another agent's branch,
// and nobody writes onto a task branch directly.
func TestObserveOnAnAgentBranchChecksTheAgent(t *testing.T) {
	t.Parallel()
	svc, _ := servicetest.Start(t)
	admin := auth.WithIdentity(context.Background(), auth.Identity{Name: "admin", Role: auth.RoleAdmin})
	if _, err := svc.TaskCreate(admin, trellis.AgentTaskCreateRequest{Name: "fix-auth", Description: "Fix auth", Objectives: []string{"Fix it"}}); err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{"agent_1", "agent_2"} {
		if _, err := svc.TaskJoin(admin, trellis.AgentTaskJoinRequest{Task: "fix-auth", Agent: a, Role: "implementer"}); err != nil {
			t.Fatal(err)
		}
	}
	as := func(name string) context.Context {
		return auth.WithIdentity(context.Background(), auth.Identity{Name: name, Role: auth.RoleWorker})
	}
	obs := func(ctx context.Context, branch string) error {
		_, err := svc.Observe(ctx, trellis.ObserveRequest{Branch: branch, Session: "s1", Type: "insight", Text: "planted"})
		return err
	}
	for _, c := range []struct {
		name   string
		ctx    context.Context
		branch string
		want   trellis.Code
	}{
		{"another agent's branch", as("mallory"), "task/fix-auth/agent_1", trellis.CodeUnauthorized},
		{"an agent that never joined", as("agent_9"), "task/fix-auth/agent_9", trellis.CodeNotFound},
		{"a task that does not exist", as("agent_1"), "task/nope/agent_1", trellis.CodeNotFound},
		{"the task branch itself", as("agent_1"), "task/fix-auth", trellis.CodeInvalid},
		{"below an agent branch", as("agent_1"), "task/fix-auth/agent_1/x", trellis.CodeInvalid},
	} {
		if err := obs(c.ctx, c.branch); trellis.ErrorCode(err) != c.want {
			t.Errorf("%s (%s): %v; want %s", c.name, c.branch, err, c.want)
		}
	}
	if err := obs(as("agent_1"), "task/fix-auth/agent_1"); err != nil {
		t.Fatalf("the agent on its own branch: %v", err)
	}
	if _, err := svc.TaskCompleteAgent(admin, trellis.AgentCompleteRequest{Task: "fix-auth", Agent: "agent_2"}); err != nil {
		t.Fatal(err)
	}
	if err := obs(as("agent_2"), "task/fix-auth/agent_2"); trellis.ErrorCode(err) != trellis.CodeConflict {
		t.Errorf("a completed agent's branch: %v; want conflict", err)
	}
}
