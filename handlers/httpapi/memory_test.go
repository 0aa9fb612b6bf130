package httpapi_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
)

// memorySeqs are the last sequences of the agent-task and memory streams,
// and of the queue's, which the memory routes must never touch.
func (b *testBundle) memorySeqs(t *testing.T) [3]uint64 {
	t.Helper()
	var out [3]uint64
	for i, s := range []string{events.StreamTasks, events.StreamMemory, events.StreamQueue} {
		seq, err := b.svc.Store().LastSeq(b.ctx, s)
		if err != nil {
			t.Fatalf("last seq of %s: %v", s, err)
		}
		out[i] = seq
	}
	return out
}

// TestMemoryTwoAgentsFlow: seed 004's flow over its HTTP routes: create
// (201), two agents join (one by task id), an objective moves, observations
// (201), both agents complete, the task completes with a merge, and the
// durable fact is on main; the read routes see each step.
func TestMemoryTwoAgentsFlow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	post, get, patch := http.MethodPost, http.MethodGet, http.MethodPatch

	var task trellis.AgentTaskView
	b.do(t, post, "/tasks", `{"name":"fix-auth","description":"Fix the auth middleware","objectives":["Fix middleware","Add tests"]}`).
		expect(t, http.StatusCreated, &task)
	if task.TaskID == "" || task.Branch != "task/fix-auth" || task.ParentBranch != "main" || task.Status != "open" ||
		len(task.Objectives) != 2 || task.Objectives[1].ObjectiveID != "obj-2" || task.Progress["todo"] != 2 {
		t.Fatalf("task = %+v", task)
	}

	var j1, j2 trellis.AgentTaskJoinResult
	b.do(t, post, "/tasks/fix-auth/join", `{"agent_id":"agent_1","role":"implementer"}`).expect(t, http.StatusOK, &j1)
	b.do(t, post, "/tasks/"+task.TaskID+"/join", `{"task":"`+task.TaskID+`","agent_id":"agent_2","role":"reviewer"}`).expect(t, http.StatusOK, &j2)
	if j1.Branch != "task/fix-auth/agent_1" || j2.Branch != "task/fix-auth/agent_2" || j1.TaskID != task.TaskID {
		t.Fatalf("joins = %+v, %+v", j1, j2)
	}

	b.do(t, patch, "/tasks/fix-auth/objectives/obj-1", `{"status":"active","agent_id":"agent_1"}`).expect(t, http.StatusOK, &task)
	b.do(t, patch, "/tasks/fix-auth/objectives/obj-1", `{"status":"done"}`).expect(t, http.StatusOK, &task)
	if task.Objectives[0].Status != "done" || task.Progress["done"] != 1 {
		t.Fatalf("objectives = %+v", task.Objectives)
	}

	observe := func(agent, session, typ, text string) trellis.ObservationView {
		t.Helper()
		var o trellis.ObservationView
		b.do(t, post, "/v1/memory/observations", trellis.ObserveRequest{Task: "fix-auth", Agent: agent, Session: session, Type: typ, Text: text}).
			expect(t, http.StatusCreated, &o)
		return o
	}
	const finding = "The auth middleware skips expired token validation on refresh"
	if o := observe("agent_1", "s1", "insight", finding); o.Branch != "task/fix-auth/agent_1" || o.TaskID != task.TaskID || o.ObservationID == "" {
		t.Fatalf("observation = %+v", o)
	}
	observe("agent_1", "s1", "insight", finding+"!")
	observe("agent_1", "s1", "note", "lunch")
	observe("agent_1", "s1", "decision", "Use a shared validator for all token paths")
	observe("agent_2", "s2", "insight", finding)

	var r1, r2 trellis.ConsolidationReport
	b.do(t, post, "/tasks/fix-auth/agents/agent_1/complete", nil).expect(t, http.StatusOK, &r1)
	if r1.Type != "agent_complete" || r1.TargetBranch != "task/fix-auth" || r1.Created != 2 || len(r1.Runs) != 1 || r1.Runs[0].Processed != 4 {
		t.Fatalf("agent_1 = %+v", r1)
	}
	b.do(t, post, "/tasks/"+task.TaskID+"/agents/agent_2/complete", `{}`).expect(t, http.StatusOK, &r2)
	if r2.Type != "agent_complete" || r2.Created != 0 || r2.Updated+r2.Deduplicated != 1 {
		t.Fatalf("agent_2's duplicate finding did not collapse into the task branch: %+v", r2)
	}

	var tc trellis.AgentTaskContextView
	b.do(t, get, "/tasks/fix-auth/context", nil).expect(t, http.StatusOK, &tc)
	if len(tc.KeyFacts) != 2 || len(tc.AgentSummaries) != 2 || !tc.AgentSummaries[1].Completed || tc.Progress["done"] != 1 {
		t.Fatalf("context = %+v", tc)
	}

	// A checkpoint by hand: the classification without completing.
	var cp trellis.ConsolidationReport
	b.do(t, post, "/tasks/fix-auth/consolidate", `{"level":"task"}`).expect(t, http.StatusOK, &cp)
	if cp.Type != "task_checkpoint" || len(cp.Durable) != 1 || len(cp.Ephemeral) != 1 || len(cp.Runs) != 0 {
		t.Fatalf("checkpoint = %+v", cp)
	}
	b.do(t, get, "/tasks/fix-auth", nil).expect(t, http.StatusOK, &task)
	if task.Status != "open" {
		t.Fatalf("a checkpoint completed the task: %+v", task)
	}

	// obj-2 is still todo: the seed route refuses to complete the task
	// unless forced, and names what is unfinished.
	var refused struct {
		Error trellis.Error `json:"error"`
	}
	b.do(t, post, "/tasks/fix-auth/complete", `{"merge":true}`).expect(t, http.StatusConflict, &refused)
	if refused.Error.Code != trellis.CodeConflict || !strings.Contains(refused.Error.Message, "obj-2 (todo)") || !strings.Contains(refused.Error.Message, `"force": true`) {
		t.Fatalf("complete with an unfinished objective: %+v", refused.Error)
	}
	b.do(t, get, "/tasks/fix-auth", nil).expect(t, http.StatusOK, &task)
	if task.Status != "open" {
		t.Fatalf("the refused completion completed the task: %+v", task)
	}
	var done trellis.ConsolidationReport
	b.do(t, post, "/tasks/fix-auth/complete", `{"merge":true,"force":true}`).expect(t, http.StatusOK, &done)
	if done.Type != "task_checkpoint" || len(done.Durable) != 1 || len(done.Ephemeral) != 1 || len(done.Runs) != 1 || done.Runs[0].Type != "merge" {
		t.Fatalf("task run = %+v", done)
	}

	var facts []trellis.FactView
	b.do(t, get, "/v1/memory/facts?branch=main", nil).expect(t, http.StatusOK, &facts)
	if len(facts) != 1 || !strings.Contains(facts[0].FactText, "expired token") || facts[0].Category != "security" || facts[0].SourceFact == "" {
		t.Fatalf("main facts = %+v", facts)
	}
	b.do(t, get, "/v1/memory/facts?task=fix-auth&status=active&category=security&query="+url.QueryEscape("EXPIRED token"), nil).expect(t, http.StatusOK, &facts)
	if len(facts) != 4 { // each agent's, the task branch's, main's
		t.Fatalf("security facts of the task = %+v", facts)
	}

	var hist []trellis.ConsolidationReport
	b.do(t, get, "/v1/memory/history?task="+task.TaskID, nil).expect(t, http.StatusOK, &hist)
	var types []string
	for _, h := range hist {
		types = append(types, h.Type)
	}
	if strings.Join(types, " ") != "session_end agent_complete session_end agent_complete task_checkpoint task_checkpoint merge" {
		t.Fatalf("history = %v", types)
	}

	var list []trellis.AgentTaskView
	b.do(t, get, "/tasks?status=completed", nil).expect(t, http.StatusOK, &list)
	if len(list) != 1 || list[0].TaskID != task.TaskID || list[0].CompletedAt == "" {
		t.Fatalf("completed tasks = %+v", list)
	}
	b.do(t, get, "/tasks?status=open", nil).expect(t, http.StatusOK, &list)
	if list == nil || len(list) != 0 {
		t.Fatalf("open tasks = %+v; want []", list)
	}
	// The name is free again.
	b.do(t, post, "/tasks", `{"name":"fix-auth"}`).expect(t, http.StatusCreated, &task)
}

// TestMemoryBadInput sends bad input to every seed 004 route and checks the
// status, the stable code, the field, and that the task, memory and queue
// logs are untouched.
func TestMemoryBadInput(t *testing.T) {
	t.Parallel()
	b := setup(t)
	post, get, patch := http.MethodPost, http.MethodGet, http.MethodPatch

	// Fixture: open task t1 (obj-1 done, obj-2 todo) with agent a1, who
	// observed once in session s1.
	var t1 trellis.AgentTaskView
	b.do(t, post, "/tasks", `{"name":"t1","objectives":["a","b"]}`).expect(t, http.StatusCreated, &t1)
	b.do(t, post, "/tasks/t1/join", `{"agent_id":"a1","role":"r"}`).expect(t, http.StatusOK, nil)
	b.do(t, patch, "/tasks/t1/objectives/obj-1", `{"status":"done"}`).expect(t, http.StatusOK, nil)
	b.do(t, post, "/v1/memory/observations", `{"task":"t1","agent_id":"a1","session":"s1","type":"insight","text":"fixture"}`).
		expect(t, http.StatusCreated, nil)

	unknown := unknownID()
	const bad, notFound, conflict = http.StatusBadRequest, http.StatusNotFound, http.StatusConflict
	inv, nf, cf := trellis.CodeInvalid, trellis.CodeNotFound, trellis.CodeConflict
	const obs = "/v1/memory/observations"

	cases := []badCase{
		// POST /tasks
		{"create/duplicate name", post, "/tasks", `{"name":"t1"}`, conflict, cf, "", "already open"},
		{"create/bad name", post, "/tasks", `{"name":"no spaces"}`, bad, inv, "name", "not a task name"},
		{"create/missing name", post, "/tasks", `{"description":"x"}`, bad, inv, "name", ""},
		{"create/bad parent", post, "/tasks", `{"name":"t2","parent":"a//b"}`, bad, inv, "parent", "not a branch"},
		{"create/objectives wrong type", post, "/tasks", `{"name":"t2","objectives":"a"}`, bad, inv, "objectives", "array"},
		{"create/unknown field", post, "/tasks", `{"name":"t2","priority":1}`, bad, inv, "priority", `"priority"`},
		{"create/malformed", post, "/tasks", `{"name":`, bad, inv, "body", "JSON"},
		{"create/no body", post, "/tasks", nil, bad, inv, "body", "empty"},
		{"create/array", post, "/tasks", `[{"name":"t2"}]`, bad, inv, "body", "object"},

		// GET /tasks
		{"list/bad status", get, "/tasks?status=done", nil, bad, inv, "status", "open or completed"},
		{"list/unknown parameter", get, "/tasks?limit=1", nil, bad, inv, "limit", "unknown query parameter"},
		{"list/status twice", get, "/tasks?status=open&status=completed", nil, bad, inv, "status", "2 times"},

		// GET /tasks/{id}
		{"show/unknown task", get, "/tasks/nope", nil, notFound, nf, "", "nope"},
		{"show/unknown task id", get, "/tasks/" + unknown, nil, notFound, nf, "", unknown},
		{"show/bad name", get, "/tasks/a%20b", nil, bad, inv, "task", ""},
		{"show/unknown parameter", get, "/tasks/t1?verbose=1", nil, bad, inv, "verbose", "unknown query parameter"},

		// POST /tasks/{id}/join
		{"join/unknown task", post, "/tasks/nope/join", `{"agent_id":"a2","role":"r"}`, notFound, nf, "", "nope"},
		{"join/twice", post, "/tasks/t1/join", `{"agent_id":"a1","role":"r"}`, conflict, cf, "", "already joined"},
		{"join/missing role", post, "/tasks/t1/join", `{"agent_id":"a2"}`, bad, inv, "role", ""},
		{"join/bad agent", post, "/tasks/t1/join", `{"agent_id":"a 2","role":"r"}`, bad, inv, "agent_id", ""},
		{"join/other task in body", post, "/tasks/t1/join", `{"task":"t2","agent_id":"a2","role":"r"}`, bad, inv, "task", "path"},
		{"join/unknown field", post, "/tasks/t1/join", `{"agent":"a2","role":"r"}`, bad, inv, "agent", `"agent"`},
		{"join/malformed", post, "/tasks/t1/join", `{"agent_id":"a2",`, bad, inv, "body", "JSON"},
		{"join/no body", post, "/tasks/t1/join", nil, bad, inv, "body", "empty"},

		// POST /tasks/{id}/agents/{agent_id}/complete
		{"complete agent/unknown task", post, "/tasks/nope/agents/a1/complete", nil, notFound, nf, "", "nope"},
		{"complete agent/unknown agent", post, "/tasks/t1/agents/ghost/complete", nil, notFound, nf, "", "ghost"},
		{"complete agent/bad agent", post, "/tasks/t1/agents/a.b/complete", nil, bad, inv, "agent_id", ""},
		{"complete agent/unknown field", post, "/tasks/t1/agents/a1/complete", `{"summary":"x"}`, bad, inv, "summary", `"summary"`},
		{"complete agent/malformed", post, "/tasks/t1/agents/a1/complete", `{`, bad, inv, "body", "JSON"},

		// PATCH /tasks/{id}/objectives/{obj_id}
		{"objective/done -> todo", patch, "/tasks/t1/objectives/obj-1", `{"status":"todo"}`, conflict, cf, "", "cannot go from done to todo"},
		{"objective/done -> active", patch, "/tasks/t1/objectives/obj-1", `{"status":"active"}`, conflict, cf, "", "final"},
		{"objective/bad status", patch, "/tasks/t1/objectives/obj-2", `{"status":"finished"}`, bad, inv, "status", "not an objective status"},
		{"objective/missing status", patch, "/tasks/t1/objectives/obj-2", `{}`, bad, inv, "status", ""},
		{"objective/status wrong type", patch, "/tasks/t1/objectives/obj-2", `{"status":1}`, bad, inv, "status", "string"},
		{"objective/unknown objective", patch, "/tasks/t1/objectives/obj-9", `{"status":"active"}`, notFound, nf, "", "obj-9"},
		{"objective/unknown task", patch, "/tasks/nope/objectives/obj-1", `{"status":"active"}`, notFound, nf, "", "nope"},
		{"objective/unknown field", patch, "/tasks/t1/objectives/obj-2", `{"status":"active","note":"x"}`, bad, inv, "note", `"note"`},
		{"objective/malformed", patch, "/tasks/t1/objectives/obj-2", `{"status":"active"`, bad, inv, "body", "JSON"},

		// POST /tasks/{id}/complete
		{"complete/unknown task", post, "/tasks/nope/complete", nil, notFound, nf, "", "nope"},
		{"complete/unknown task id", post, "/tasks/" + unknown + "/complete", `{"merge":true}`, notFound, nf, "", unknown},
		{"complete/merge wrong type", post, "/tasks/t1/complete", `{"merge":"yes"}`, bad, inv, "merge", ""},
		{"complete/unknown field", post, "/tasks/t1/complete", `{"merge":true,"forced":true}`, bad, inv, "forced", `"forced"`},
		{"complete/force wrong type", post, "/tasks/t1/complete", `{"force":"yes"}`, bad, inv, "force", ""},
		{"complete/malformed", post, "/tasks/t1/complete", `{"merge":tru}`, bad, inv, "body", "JSON"},

		// POST /tasks/{id}/consolidate
		{"consolidate/bad level", post, "/tasks/t1/consolidate", `{"level":"galaxy"}`, bad, inv, "level", "not a level"},
		{"consolidate/missing level", post, "/tasks/t1/consolidate", `{}`, bad, inv, "level", ""},
		{"consolidate/unknown task", post, "/tasks/nope/consolidate", `{"level":"task"}`, notFound, nf, "", "nope"},
		{"consolidate/unknown agent", post, "/tasks/t1/consolidate", `{"level":"agent","agent_id":"ghost"}`, notFound, nf, "", "ghost"},
		{"consolidate/unknown session", post, "/tasks/t1/consolidate", `{"level":"session","session":"never"}`, notFound, nf, "", "never"},
		{"consolidate/unknown field", post, "/tasks/t1/consolidate", `{"level":"task","dry_run":true}`, bad, inv, "dry_run", `"dry_run"`},
		{"consolidate/malformed", post, "/tasks/t1/consolidate", `{"level":"task",}`, bad, inv, "body", "JSON"},
		{"consolidate/no body", post, "/tasks/t1/consolidate", nil, bad, inv, "body", "empty"},

		// GET /tasks/{id}/context
		{"context/unknown task", get, "/tasks/nope/context", nil, notFound, nf, "", "nope"},
		{"context/unknown parameter", get, "/tasks/t1/context?facts=5", nil, bad, inv, "facts", "unknown query parameter"},

		// POST /v1/memory/observations
		{"observe/empty text", post, obs, `{"branch":"main","session":"s","type":"insight","text":"  "}`, bad, inv, "text", "must not be empty"},
		{"observe/bad session", post, obs, `{"branch":"main","session":"a b","type":"insight","text":"x"}`, bad, inv, "session", ""},
		{"observe/bad type", post, obs, `{"branch":"main","session":"s","type":"Insight","text":"x"}`, bad, inv, "type", ""},
		{"observe/no branch", post, obs, `{"session":"s","type":"insight","text":"x"}`, bad, inv, "branch", ""},
		{"observe/branch and task", post, obs, `{"branch":"main","task":"t1","agent_id":"a1","session":"s","type":"insight","text":"x"}`, bad, inv, "branch", ""},
		{"observe/unknown task", post, obs, `{"task":"nope","agent_id":"a1","session":"s","type":"insight","text":"x"}`, notFound, nf, "", "nope"},
		{"observe/unknown agent", post, obs, `{"task":"t1","agent_id":"ghost","session":"s","type":"insight","text":"x"}`, notFound, nf, "", "ghost"},
		{"observe/unknown field", post, obs, `{"branch":"main","session":"s","type":"insight","text":"x","tags":[]}`, bad, inv, "tags", `"tags"`},
		{"observe/malformed", post, obs, `{"branch":"main"`, bad, inv, "body", "JSON"},
		{"observe/no body", post, obs, nil, bad, inv, "body", "empty"},

		// GET /v1/memory/facts
		{"facts/bad status", get, "/v1/memory/facts?status=gone", nil, bad, inv, "status", "not a fact status"},
		{"facts/bad branch", get, "/v1/memory/facts?branch=a//b", nil, bad, inv, "branch", ""},
		{"facts/unknown task", get, "/v1/memory/facts?task=nope", nil, notFound, nf, "", "nope"},
		{"facts/unknown parameter", get, "/v1/memory/facts?limit=5", nil, bad, inv, "limit", "unknown query parameter"},

		// GET /v1/memory/history
		{"history/unknown task", get, "/v1/memory/history?task=nope", nil, notFound, nf, "", "nope"},
		{"history/unknown parameter", get, "/v1/memory/history?type=merge", nil, bad, inv, "type", "unknown query parameter"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := b.memorySeqs(t)
			b.do(t, c.method, c.path, c.body).expectError(t, c.status, c.code, c.field, c.msg)
			if after := b.memorySeqs(t); after != before {
				t.Fatalf("event logs changed (TRELLIS_TASKS, TRELLIS_MEMORY, TRELLIS_QUEUE): %v -> %v", before, after)
			}
		})
	}

	// The refused requests left the fixture as it was, and it still works.
	var tc trellis.AgentTaskContextView
	b.do(t, get, "/tasks/t1/context", nil).expect(t, http.StatusOK, &tc)
	if tc.Task.Status != "open" || tc.Task.Objectives[0].Status != "done" || tc.Task.Objectives[1].Status != "todo" || len(tc.Task.Agents) != 1 || tc.Task.Agents[0].Completed {
		t.Fatalf("fixture = %+v", tc.Task)
	}
	var r trellis.ConsolidationReport
	b.do(t, post, "/tasks/t1/agents/a1/complete", nil).expect(t, http.StatusOK, &r)
	if r.Created != 1 {
		t.Fatalf("a1's run = %+v", r)
	}
}

// TestMemoryBodyRoutesRejectQueryParameters: the seed 004 routes that take
// a body refuse unknown query parameters (as the queue's do) and a body
// that names another task or agent than the path (as POST /tasks/{id}/join
// does), and /tasks/{id}/consolidate refuses an unknown task at every
// level, all without touching the logs.
func TestMemoryBodyRoutesRejectQueryParameters(t *testing.T) {
	t.Parallel()
	b := setup(t)
	post, patch := http.MethodPost, http.MethodPatch
	b.do(t, post, "/tasks", `{"name":"t1","objectives":["a"]}`).expect(t, http.StatusCreated, nil)
	b.do(t, post, "/tasks/t1/join", `{"agent_id":"a1","role":"r"}`).expect(t, http.StatusOK, nil)
	b.do(t, post, "/v1/memory/observations", `{"task":"t1","agent_id":"a1","session":"s1","type":"insight","text":"fixture"}`).
		expect(t, http.StatusCreated, nil)
	const bad, notFound = http.StatusBadRequest, http.StatusNotFound
	inv, nf := trellis.CodeInvalid, trellis.CodeNotFound
	cases := []badCase{
		{"create/query parameter", post, "/tasks?dry_run=1", `{"name":"t2"}`, bad, inv, "dry_run", "unknown query parameter"},
		{"join/query parameter", post, "/tasks/t1/join?x=1", `{"agent_id":"a2","role":"r"}`, bad, inv, "x", "unknown query parameter"},
		{"complete agent/query parameter", post, "/tasks/t1/agents/a1/complete?x=1", nil, bad, inv, "x", "unknown query parameter"},
		{"objective/query parameter", patch, "/tasks/t1/objectives/obj-1?x=1", `{"status":"active"}`, bad, inv, "x", "unknown query parameter"},
		{"complete/query parameter", post, "/tasks/t1/complete?x=1", nil, bad, inv, "x", "unknown query parameter"},
		{"consolidate/query parameter", post, "/tasks/t1/consolidate?x=1", `{"level":"task"}`, bad, inv, "x", "unknown query parameter"},
		{"observe/query parameter", post, "/v1/memory/observations?x=1", `{"branch":"main","session":"s","type":"insight","text":"x"}`, bad, inv, "x", "unknown query parameter"},
		{"complete agent/other agent in body", post, "/tasks/t1/agents/a1/complete", `{"agent_id":"a2"}`, bad, inv, "agent_id", "path"},
		{"complete agent/other task in body", post, "/tasks/t1/agents/a1/complete", `{"task":"t2"}`, bad, inv, "task", "path"},
		{"objective/other objective in body", patch, "/tasks/t1/objectives/obj-1", `{"status":"active","objective_id":"obj-9"}`, bad, inv, "objective_id", "path"},
		{"complete/other task in body", post, "/tasks/t1/complete", `{"task":"t2"}`, bad, inv, "task", "path"},
		{"consolidate/other task in body", post, "/tasks/t1/consolidate", `{"level":"task","task":"t2"}`, bad, inv, "task", "path"},
		{"consolidate/session of unknown task", post, "/tasks/nope/consolidate", `{"level":"session","session":"s1"}`, notFound, nf, "", "nope"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := b.memorySeqs(t)
			res := b.do(t, c.method, c.path, c.body)
			if res.status != c.status {
				t.Fatalf("status %d, want %d; body %.300s", res.status, c.status, res.body)
			}
			e := res.apiError(t)
			if e.Code != c.code || e.Field != c.field || (c.msg != "" && !strings.Contains(e.Message, c.msg)) {
				t.Errorf("error %+v; want code %q field %q message containing %q", e, c.code, c.field, c.msg)
			}
			if after := b.memorySeqs(t); after != before {
				t.Fatalf("event logs changed: %v -> %v", before, after)
			}
		})
	}
}
