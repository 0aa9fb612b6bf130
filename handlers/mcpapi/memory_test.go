package mcpapi_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
)

// memoryTools are seed 004's tools with their argument names.
var memoryTools = map[string][]string{
	"task_create":           {"name", "description", "objectives", "parent"},
	"task_join":             {"task", "agent_id", "role"},
	"task_objective":        {"task", "objective_id", "status", "agent_id"},
	"task_complete_agent":   {"task", "agent_id"},
	"task_complete":         {"task", "merge", "force"},
	"task_context":          {"task"},
	"task_list":             {"status"},
	"observe":               {"branch", "task", "agent_id", "session", "type", "text"},
	"consolidate":           {"level", "session", "task", "agent_id", "merge"},
	"facts":                 {"branch", "status", "category", "query", "task"},
	"consolidation_history": {"task"},
}

// memorySeqs are the last sequences of the agent-task and memory streams
// (and the queue's, which the memory tools must never touch).
func (b *testBundle) memorySeqs(t *testing.T, ctx context.Context) [3]uint64 {
	t.Helper()
	var out [3]uint64
	for i, s := range []string{events.StreamTasks, events.StreamMemory, events.StreamQueue} {
		seq, err := b.nats.Store.LastSeq(ctx, s)
		if err != nil {
			t.Fatalf("last seq of %s: %v", s, err)
		}
		out[i] = seq
	}
	return out
}

// TestMemoryToolsList: tools/list shows the memory tools with their
// argument names, object output schemas, descriptions that explain seed 004's workflow,
// and the instructions carry the workflow too.
func TestMemoryToolsList(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	cs := b.connect(t, ctx)
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, tool := range res.Tools {
		args, ok := memoryTools[tool.Name]
		if !ok {
			continue
		}
		seen[tool.Name] = true
		var in jsonschema.Schema
		remarshal(t, tool.InputSchema, &in)
		var names []string
		for name, p := range in.Properties {
			names = append(names, name)
			if p.Description == "" {
				t.Errorf("%s: argument %s has no description", tool.Name, name)
			}
		}
		if !sameSet(names, args) {
			t.Errorf("%s: arguments %v; want %v", tool.Name, names, args)
		}
		if ap := in.AdditionalProperties; ap == nil || ap.Not == nil {
			t.Errorf("%s: schema allows unknown arguments", tool.Name)
		}
		if tool.OutputSchema == nil {
			t.Errorf("%s: no output schema", tool.Name)
		} else {
			var out jsonschema.Schema
			remarshal(t, tool.OutputSchema, &out)
			if out.Type != "object" {
				t.Errorf("%s: output schema type %q; structured content must be an object", tool.Name, out.Type)
			}
		}
	}
	for name := range memoryTools {
		if !seen[name] {
			t.Errorf("tools/list lacks %s", name)
		}
	}
	desc := map[string]string{}
	for _, tool := range res.Tools {
		desc[tool.Name] = tool.Description
	}
	for tool, words := range map[string][]string{
		"task_create":         {"task_join", "observe", "task_complete_agent", "task_complete", "task/<name>"},
		"task_complete_agent": {"0.85", "Jaccard", "task branch"},
		"task_complete":       {"durable", "ephemeral", "parent branch", "0.8"},
		"observe":             {"insight", "decision", "discovery", "Jaccard"},
		"consolidate":         {"session", "agent", "task"},
	} {
		for _, w := range words {
			if !strings.Contains(desc[tool], w) {
				t.Errorf("%s: description lacks %q", tool, w)
			}
		}
	}
	instr := cs.InitializeResult().Instructions
	for _, w := range []string{"task_create", "task_join", "observe", "task_complete_agent", "task_complete", "Jaccard", "> 0.85", "durable", "merge"} {
		if !strings.Contains(instr, w) {
			t.Errorf("instructions lack %q", w)
		}
	}
}

// TestMemoryTwoAgentsFlow: seed 004's flow through the MCP client: create,
// two agents join, observe (one agent with the session's default), both
// complete and consolidate into the task branch, the task completes with a
// merge, and the durable fact is on main. Every result matches its tool's
// output schema.
func TestMemoryTwoAgentsFlow(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	cs := b.connect(t, ctx)
	schemas := outputSchemas(t, ctx, cs)

	var task trellis.AgentTaskView
	res := callOK(t, ctx, cs, schemas, "task_create", map[string]any{
		"name": "fix-auth", "description": "Fix the auth middleware", "objectives": []string{"Fix middleware", "Add tests"},
	}, &task)
	if task.Branch != "task/fix-auth" || task.ParentBranch != "main" || task.Status != "open" || len(task.Objectives) != 2 ||
		task.Objectives[0].ObjectiveID != "obj-1" || task.Objectives[0].Status != "todo" || task.Progress["todo"] != 2 {
		t.Fatalf("task = %+v", task)
	}
	if !strings.Contains(text(res), task.TaskID) || !strings.Contains(text(res), "task_join") {
		t.Errorf("task_create text %q", text(res))
	}

	var j1, j2 trellis.AgentTaskJoinResult
	callOK(t, ctx, cs, schemas, "task_join", map[string]any{"task": "fix-auth", "agent_id": "agent_1", "role": "implementer"}, &j1)
	callOK(t, ctx, cs, schemas, "task_join", map[string]any{"task": task.TaskID, "agent_id": "agent_2", "role": "reviewer"}, &j2)
	if j1.Branch != "task/fix-auth/agent_1" || j2.Branch != "task/fix-auth/agent_2" || j2.TaskID != task.TaskID {
		t.Fatalf("joins = %+v, %+v", j1, j2)
	}

	var tc trellis.AgentTaskContextView
	callOK(t, ctx, cs, schemas, "task_context", map[string]any{"task": "fix-auth"}, &tc)
	if len(tc.AgentSummaries) != 2 || len(tc.KeyFacts) != 0 || tc.Progress["todo"] != 2 {
		t.Fatalf("context = %+v", tc)
	}

	callOK(t, ctx, cs, schemas, "task_objective", map[string]any{"task": "fix-auth", "objective_id": "obj-1", "status": "active", "agent_id": "agent_1"}, nil)
	callOK(t, ctx, cs, schemas, "task_objective", map[string]any{"task": "fix-auth", "objective_id": "obj-1", "status": "done", "agent_id": "agent_1"}, &task)
	if task.Objectives[0].Status != "done" || task.Objectives[0].AgentID != "agent_1" || task.Progress["done"] != 1 {
		t.Fatalf("objective = %+v", task.Objectives)
	}

	observe := func(args map[string]any) trellis.ObservationView {
		t.Helper()
		var o trellis.ObservationView
		callOK(t, ctx, cs, schemas, "observe", args, &o)
		return o
	}
	const finding = "The auth middleware skips expired token validation on refresh"
	o := observe(map[string]any{"task": "fix-auth", "agent_id": "agent_1", "session": "s1", "type": "insight", "text": finding})
	if o.Branch != "task/fix-auth/agent_1" || o.Session != "s1" || o.TaskID != task.TaskID || o.AgentID != "agent_1" || o.ObservationID == "" {
		t.Fatalf("observation = %+v", o)
	}
	observe(map[string]any{"task": "fix-auth", "agent_id": "agent_1", "session": "s1", "type": "insight", "text": finding + "!"})
	observe(map[string]any{"task": "fix-auth", "agent_id": "agent_1", "session": "s1", "type": "note", "text": "lunch"})
	observe(map[string]any{"task": "fix-auth", "agent_id": "agent_1", "session": "s1", "type": "decision", "text": "Use a shared validator for all token paths"})
	// No session: the client's identity.
	if o := observe(map[string]any{"task": "fix-auth", "agent_id": "agent_2", "type": "insight", "text": finding}); o.Session != localWorker(t, "mcpapi-test") {
		t.Fatalf("default session = %q; want %s", o.Session, localWorker(t, "mcpapi-test"))
	}

	var r1 trellis.ConsolidationReport
	res = callOK(t, ctx, cs, schemas, "task_complete_agent", map[string]any{"task": "fix-auth", "agent_id": "agent_1"}, &r1)
	if r1.Type != "agent_complete" || r1.SourceBranch != "task/fix-auth/agent_1" || r1.TargetBranch != "task/fix-auth" || r1.Created != 2 ||
		len(r1.Runs) != 1 || r1.Runs[0].Type != "session_end" || r1.Runs[0].Processed != 4 || r1.Runs[0].Created != 2 || r1.Runs[0].Updated != 1 {
		t.Fatalf("agent_1 = %+v", r1)
	}
	if !strings.Contains(text(res), "session_end") || !strings.Contains(text(res), "agent_complete") {
		t.Errorf("task_complete_agent text %q", text(res))
	}
	var r2 trellis.ConsolidationReport
	callOK(t, ctx, cs, schemas, "task_complete_agent", map[string]any{"task": "fix-auth", "agent_id": "agent_2"}, &r2)
	if r2.Type != "agent_complete" || r2.Created != 0 || r2.Updated+r2.Deduplicated != 1 {
		t.Fatalf("agent_2's duplicate finding did not collapse into the task branch: %+v", r2)
	}

	callOK(t, ctx, cs, schemas, "task_context", map[string]any{"task": task.TaskID}, &tc)
	if len(tc.KeyFacts) != 2 || !tc.AgentSummaries[0].Completed || !tc.AgentSummaries[1].Completed || !strings.Contains(tc.AgentSummaries[0].Summary, "obj-1") {
		t.Fatalf("context after the agents = %+v", tc)
	}

	// obj-2 is still todo: refused unless forced.
	if msg := callErr(t, ctx, cs, "task_complete", map[string]any{"task": "fix-auth", "merge": true}); !strings.HasPrefix(msg, "conflict: ") || !strings.Contains(msg, "obj-2 (todo)") {
		t.Fatalf("task_complete with an unfinished objective: %q", msg)
	}
	var done trellis.ConsolidationReport
	res = callOK(t, ctx, cs, schemas, "task_complete", map[string]any{"task": "fix-auth", "merge": true, "force": true}, &done)
	if done.Type != "task_checkpoint" || len(done.Durable) != 1 || len(done.Ephemeral) != 1 || done.TargetBranch != "main" ||
		len(done.Runs) != 1 || done.Runs[0].Type != "merge" || done.Runs[0].Created != 1 {
		t.Fatalf("task run = %+v", done)
	}
	if !strings.Contains(text(res), "1 durable and 1 ephemeral") || !strings.Contains(text(res), "merged into main") {
		t.Errorf("task_complete text %q", text(res))
	}

	var main struct {
		Facts []trellis.FactView `json:"facts"`
	}
	res = callOK(t, ctx, cs, schemas, "facts", map[string]any{"branch": "main"}, &main)
	if len(main.Facts) != 1 || !strings.Contains(main.Facts[0].FactText, "expired token") || main.Facts[0].SourceFact == "" ||
		main.Facts[0].Category != "security" || main.Facts[0].TaskID != task.TaskID || main.Facts[0].Status != "active" {
		t.Fatalf("main facts = %+v", main.Facts)
	}
	if !strings.Contains(text(res), "1 fact(s)") {
		t.Errorf("facts text %q", text(res))
	}
	var none struct {
		Facts []trellis.FactView `json:"facts"`
	}
	callOK(t, ctx, cs, schemas, "facts", map[string]any{"branch": "main", "category": "decision"}, &none)
	if none.Facts == nil || len(none.Facts) != 0 {
		t.Fatalf("facts on main of category decision = %+v; want [] (the decision was ephemeral)", none.Facts)
	}

	var hist struct {
		Runs []trellis.ConsolidationReport `json:"runs"`
	}
	callOK(t, ctx, cs, schemas, "consolidation_history", map[string]any{"task": "fix-auth"}, &hist)
	var types []string
	for _, h := range hist.Runs {
		types = append(types, h.Type)
	}
	if strings.Join(types, " ") != "session_end agent_complete session_end agent_complete task_checkpoint merge" {
		t.Fatalf("history = %v", types)
	}

	var list struct {
		Tasks []trellis.AgentTaskView `json:"tasks"`
	}
	callOK(t, ctx, cs, schemas, "task_list", map[string]any{"status": "completed"}, &list)
	if len(list.Tasks) != 1 || list.Tasks[0].TaskID != task.TaskID || list.Tasks[0].CompletedAt == "" {
		t.Fatalf("completed tasks = %+v", list.Tasks)
	}
	callOK(t, ctx, cs, schemas, "task_list", map[string]any{"status": "open"}, &list)
	if len(list.Tasks) != 0 {
		t.Fatalf("open tasks = %+v", list.Tasks)
	}

	// A branch observation and a session consolidation by hand, with the
	// session's default on both sides.
	observe(map[string]any{"branch": "main", "type": "discovery", "text": "The refresh endpoint is rate limited"})
	var sr trellis.ConsolidationReport
	callOK(t, ctx, cs, schemas, "consolidate", map[string]any{"level": "session"}, &sr)
	if sr.Type != "session_end" || sr.Session != localWorker(t, "mcpapi-test") || sr.TargetBranch != "main" || sr.Created != 1 {
		t.Fatalf("session run = %+v", sr)
	}
}

// TestMemoryBadInput: bad arguments and refused transitions are tool
// errors starting with the stable code, and leave the task and memory logs
// untouched.
func TestMemoryBadInput(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	cs := b.connect(t, ctx)
	schemas := outputSchemas(t, ctx, cs)

	var t1 trellis.AgentTaskView
	callOK(t, ctx, cs, schemas, "task_create", map[string]any{"name": "t1", "objectives": []string{"a", "b"}}, &t1)
	callOK(t, ctx, cs, schemas, "task_join", map[string]any{"task": "t1", "agent_id": "a1", "role": "r"}, nil)
	callOK(t, ctx, cs, schemas, "task_objective", map[string]any{"task": "t1", "objective_id": "obj-1", "status": "done"}, nil)
	callOK(t, ctx, cs, schemas, "observe", map[string]any{"task": "t1", "agent_id": "a1", "session": "s1", "type": "insight", "text": "fixture"}, nil)
	unknownID := events.NewID(time.Now())

	cases := []struct {
		name string
		tool string
		args any
		want string // prefix of the error text
		also string // further text the error must hold
	}{
		{"duplicate name", "task_create", map[string]any{"name": "t1"}, "conflict: ", "already open"},
		{"bad name", "task_create", map[string]any{"name": "no spaces"}, "invalid: name: ", ""},
		{"missing name", "task_create", map[string]any{"description": "x"}, "invalid: name: ", ""},
		{"bad parent", "task_create", map[string]any{"name": "t2", "parent": "a//b"}, "invalid: parent: ", ""},
		{"objectives not a list", "task_create", map[string]any{"name": "t2", "objectives": "a"}, "invalid: objectives: ", "array of strings"},
		{"unknown argument", "task_create", map[string]any{"name": "t2", "priority": 1}, "invalid: priority: ", "is not an argument of task_create"},
		{"arguments not an object", "task_create", []string{"t2"}, "invalid: arguments: ", ""},

		{"join unknown task", "task_join", map[string]any{"task": "nope", "agent_id": "a2", "role": "r"}, "not_found: ", "nope"},
		{"join unknown task id", "task_join", map[string]any{"task": unknownID, "agent_id": "a2", "role": "r"}, "not_found: ", unknownID},
		{"join twice", "task_join", map[string]any{"task": "t1", "agent_id": "a1", "role": "r"}, "conflict: ", "already joined"},
		{"join without role", "task_join", map[string]any{"task": "t1", "agent_id": "a2"}, "invalid: role: ", ""},
		{"join bad agent", "task_join", map[string]any{"task": "t1", "agent_id": "a 2", "role": "r"}, "invalid: agent_id: ", ""},
		{"join misspelt agent", "task_join", map[string]any{"task": "t1", "agent": "a2", "role": "r"}, "invalid: agent: ", "task, agent_id, role"},

		{"done -> todo", "task_objective", map[string]any{"task": "t1", "objective_id": "obj-1", "status": "todo"}, "conflict: ", "cannot go from done to todo"},
		{"bad status", "task_objective", map[string]any{"task": "t1", "objective_id": "obj-2", "status": "finished"}, "invalid: status: ", ""},
		{"status not a string", "task_objective", map[string]any{"task": "t1", "objective_id": "obj-2", "status": 1}, "invalid: status: ", "must be a string"},
		{"unknown objective", "task_objective", map[string]any{"task": "t1", "objective_id": "obj-9", "status": "active"}, "not_found: ", "obj-9"},
		{"objective of unknown task", "task_objective", map[string]any{"task": "nope", "objective_id": "obj-1", "status": "active"}, "not_found: ", ""},

		{"unknown agent completes", "task_complete_agent", map[string]any{"task": "t1", "agent_id": "ghost"}, "not_found: ", "ghost"},
		{"agent of unknown task", "task_complete_agent", map[string]any{"task": "nope", "agent_id": "a1"}, "not_found: ", ""},
		{"complete unknown task", "task_complete", map[string]any{"task": "nope", "merge": true}, "not_found: ", ""},
		{"merge not a boolean", "task_complete", map[string]any{"task": "t1", "merge": "yes"}, "invalid: merge: ", "true or false"},
		{"complete without task", "task_complete", map[string]any{}, "invalid: task: ", ""},
		{"force not a boolean", "task_complete", map[string]any{"task": "t1", "force": "yes"}, "invalid: force: ", "true or false"},

		{"context of unknown task", "task_context", map[string]any{"task": "nope"}, "not_found: ", ""},
		{"context without task", "task_context", nil, "invalid: task: ", ""},
		{"list bad status", "task_list", map[string]any{"status": "done"}, "invalid: status: ", ""},

		{"empty text", "observe", map[string]any{"branch": "main", "type": "insight", "text": "  "}, "invalid: text: ", "must not be empty"},
		{"no text", "observe", map[string]any{"branch": "main", "type": "insight"}, "invalid: text: ", ""},
		{"bad type", "observe", map[string]any{"branch": "main", "type": "Insight!", "text": "x"}, "invalid: type: ", ""},
		{"bad session", "observe", map[string]any{"branch": "main", "session": "has space", "type": "insight", "text": "x"}, "invalid: session: ", ""},
		{"branch and task", "observe", map[string]any{"branch": "main", "task": "t1", "agent_id": "a1", "type": "insight", "text": "x"}, "invalid: branch: ", ""},
		{"no branch", "observe", map[string]any{"type": "insight", "text": "x"}, "invalid: branch: ", ""},
		{"observe unknown task", "observe", map[string]any{"task": "nope", "agent_id": "a1", "type": "insight", "text": "x"}, "not_found: ", ""},
		{"observe unknown agent", "observe", map[string]any{"task": "t1", "agent_id": "ghost", "type": "insight", "text": "x"}, "not_found: ", "ghost"},
		{"observe unknown argument", "observe", map[string]any{"branch": "main", "type": "insight", "text": "x", "tags": []string{"a"}}, "invalid: tags: ", "is not an argument of observe"},

		{"bad level", "consolidate", map[string]any{"level": "galaxy"}, "invalid: level: ", ""},
		{"unknown session", "consolidate", map[string]any{"level": "session", "session": "never"}, "not_found: ", ""},
		{"consolidate unknown task", "consolidate", map[string]any{"level": "task", "task": "nope"}, "not_found: ", ""},
		{"consolidate unknown agent", "consolidate", map[string]any{"level": "agent", "task": "t1", "agent_id": "ghost"}, "not_found: ", ""},

		{"bad fact status", "facts", map[string]any{"status": "gone"}, "invalid: status: ", ""},
		{"bad fact branch", "facts", map[string]any{"branch": "no spaces"}, "invalid: branch: ", ""},
		{"facts of unknown task", "facts", map[string]any{"task": "nope"}, "not_found: ", ""},
		{"history of unknown task", "consolidation_history", map[string]any{"task": "nope"}, "not_found: ", ""},
		{"history unknown argument", "consolidation_history", map[string]any{"task_id": "t1"}, "invalid: task_id: ", ""},
	}

	before := b.memorySeqs(t, ctx)
	for _, c := range cases {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
		if err != nil {
			t.Errorf("%s: protocol error %v", c.name, err)
			continue
		}
		msg := text(res)
		if !res.IsError || res.StructuredContent != nil {
			t.Errorf("%s: %s(%v) succeeded with %q; want a tool error", c.name, c.tool, c.args, msg)
			continue
		}
		if !strings.HasPrefix(msg, c.want) || !strings.Contains(msg, c.also) {
			t.Errorf("%s: %s(%v) = %q; want prefix %q containing %q", c.name, c.tool, c.args, msg, c.want, c.also)
		}
	}
	if after := b.memorySeqs(t, ctx); after != before {
		t.Fatalf("bad input changed the logs (TRELLIS_TASKS, TRELLIS_MEMORY, TRELLIS_QUEUE): %v -> %v", before, after)
	}

	// The fixture is as it was: still open, obj-1 done, a1 joined and able
	// to complete.
	var tc trellis.AgentTaskContextView
	callOK(t, ctx, cs, schemas, "task_context", map[string]any{"task": "t1"}, &tc)
	if tc.Task.Status != "open" || tc.Task.Objectives[0].Status != "done" || tc.Task.Objectives[1].Status != "todo" || len(tc.Task.Agents) != 1 {
		t.Fatalf("fixture = %+v", tc.Task)
	}
	var r trellis.ConsolidationReport
	callOK(t, ctx, cs, schemas, "task_complete_agent", map[string]any{"task": "t1", "agent_id": "a1"}, &r)
	if r.Created != 1 {
		t.Fatalf("a1's run = %+v", r)
	}
}

// TestConsolidateNothingNewMCP: consolidate at level session run again
// when the session has nothing new is a normal result: zero counts, a
// summary and text saying there is nothing new, no run appended. A
// session that never observed anything is a not_found tool error.
func TestConsolidateNothingNewMCP(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	cs := b.connect(t, ctx)
	schemas := outputSchemas(t, ctx, cs)
	callOK(t, ctx, cs, schemas, "observe", map[string]any{"branch": "main", "type": "insight", "text": "Retries need jitter"}, nil)
	var first trellis.ConsolidationReport
	callOK(t, ctx, cs, schemas, "consolidate", map[string]any{"level": "session"}, &first)
	if first.Created != 1 || first.Processed != 1 {
		t.Fatalf("first run = %+v", first)
	}
	before := b.memorySeqs(t, ctx)
	var again trellis.ConsolidationReport
	res := callOK(t, ctx, cs, schemas, "consolidate", map[string]any{"level": "session"}, &again)
	if again.Type != "session_end" || again.Session != first.Session || again.RunID != "" ||
		again.Created+again.Updated+again.Deduplicated+again.Superseded+again.Processed != 0 ||
		!strings.Contains(again.Summary, "nothing new to consolidate") || !strings.Contains(text(res), "nothing new to consolidate") {
		t.Fatalf("second run = %+v, text %q", again, text(res))
	}
	if after := b.memorySeqs(t, ctx); after != before {
		t.Fatalf("nothing to consolidate changed the log: %v -> %v", before, after)
	}
	if msg := callErr(t, ctx, cs, "consolidate", map[string]any{"level": "session", "session": "never-seen"}); !strings.HasPrefix(msg, "not_found: ") {
		t.Fatalf("unknown session = %q; want not_found", msg)
	}
}
