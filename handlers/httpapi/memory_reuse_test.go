package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/trellis/trellis"
)

// TestMemoryTaskNameReuseOverHTTP: issue 18 over the HTTP routes: fix-auth
// runs, completes and merges its finding into main; a new fix-auth starts
// with an empty context, its own finding is not deduplicated against the
// old task's fact, its completion with a merge merges only its own facts,
// and the old task's facts stay readable by its id.
func TestMemoryTaskNameReuseOverHTTP(t *testing.T) {
	t.Parallel()
	b := setup(t)
	post, get := http.MethodPost, http.MethodGet
	const finding = "The auth middleware skips expired token validation on refresh"
	run := func() (trellis.AgentTaskView, trellis.ConsolidationReport, trellis.ConsolidationReport) {
		t.Helper()
		var task trellis.AgentTaskView
		b.do(t, post, "/tasks", `{"name":"fix-auth"}`).expect(t, http.StatusCreated, &task)
		var tc trellis.AgentTaskContextView
		b.do(t, get, "/tasks/fix-auth/context", nil).expect(t, http.StatusOK, &tc)
		if tc.Task.TaskID != task.TaskID || len(tc.KeyFacts) != 0 {
			t.Fatalf("a new task's context holds facts: %+v", tc.KeyFacts)
		}
		b.do(t, post, "/tasks/fix-auth/join", `{"agent_id":"agent_1","role":"implementer"}`).expect(t, http.StatusOK, nil)
		// Seen twice: confident enough to be durable, so it is merged.
		for _, text := range []string{finding, finding + "!"} {
			b.do(t, post, "/v1/memory/observations", trellis.ObserveRequest{Branch: "task/fix-auth/agent_1", Session: "s1", Type: "insight", Text: text}).
				expect(t, http.StatusCreated, nil)
		}
		var agent, done trellis.ConsolidationReport
		b.do(t, post, "/tasks/fix-auth/agents/agent_1/complete", nil).expect(t, http.StatusOK, &agent)
		b.do(t, post, "/tasks/fix-auth/complete", `{"merge":true}`).expect(t, http.StatusOK, &done)
		return task, agent, done
	}
	old, _, _ := run()
	task, agent, done := run()
	if agent.Created != 1 || agent.Deduplicated != 0 || agent.Updated != 0 {
		t.Fatalf("the new task's finding was deduplicated against the old task's fact: %+v", agent)
	}
	if len(done.Durable)+len(done.Ephemeral) != 1 || len(done.Runs) != 1 || done.Runs[0].Type != "merge" {
		t.Fatalf("the new task's checkpoint and merge took in the old task's facts: %+v", done)
	}
	var facts []trellis.FactView
	b.do(t, get, "/v1/memory/facts?branch=task/fix-auth", nil).expect(t, http.StatusOK, &facts)
	if len(facts) != 1 || facts[0].TaskID != task.TaskID {
		t.Fatalf("facts of task/fix-auth = %+v", facts)
	}
	b.do(t, get, "/v1/memory/facts?branch=task/fix-auth&task="+old.TaskID, nil).expect(t, http.StatusOK, &facts)
	if len(facts) != 1 || facts[0].TaskID != old.TaskID {
		t.Fatalf("facts of the old task/fix-auth = %+v", facts)
	}
	var tc trellis.AgentTaskContextView
	b.do(t, get, "/tasks/"+old.TaskID+"/context", nil).expect(t, http.StatusOK, &tc)
	if tc.Task.TaskID != old.TaskID || len(tc.KeyFacts) != 1 || tc.KeyFacts[0].TaskID != old.TaskID {
		t.Fatalf("old task's context = %+v", tc)
	}
	// The old task is completed: its id does not reach the new task.
	b.do(t, post, "/tasks/"+old.TaskID+"/join", `{"agent_id":"agent_2","role":"r"}`).
		expectError(t, http.StatusConflict, trellis.CodeConflict, "", "is completed")
}
