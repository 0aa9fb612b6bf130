package mcpapi_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestToolsList: tools/list shows the six tools with seed 000's argument
// names, descriptions on every tool and argument, the required arguments,
// and schemas that forbid unknown arguments.
func TestToolsList(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	cs := b.connect(t, ctx)
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		args     []string
		required []string
		output   bool
	}{
		"queue_add": {[]string{"objective", "inputs", "acceptance", "max_tool_calls", "max_steps",
			"queue", "parent_id", "max_attempts", "metadata", "idempotency_key",
			"priority", "delay", "run_at", "unique_key", "unique_for", "after", "concurrency_key", "timeout"}, []string{"objective"}, true},
		"queue_cancel":    {[]string{"task_id", "reason"}, []string{"task_id"}, true},
		"queue_add_many":  {[]string{"tasks"}, []string{"tasks"}, true},
		"queue_next":      {[]string{"queue", "worker", "lease_seconds"}, nil, false},
		"queue_heartbeat": {[]string{"task_id", "worker"}, []string{"task_id"}, true},
		"queue_release":   {[]string{"task_id", "reason"}, []string{"task_id"}, true},
		"queue_done": {[]string{"task_id", "what_was_done", "what_changed", "what_next", "citations",
			"blockers", "steps_used", "tool_calls_used", "worker"}, []string{"task_id", "what_was_done"}, true},
		"queue_fail": {[]string{"task_id", "error", "what_was_done", "blockers",
			"steps_used", "tool_calls_used", "worker", "retry"}, []string{"task_id", "error"}, true},
		"queue_list":    {[]string{"queue", "status", "since", "limit", "cursor", "text", "newest"}, nil, true},
		"queue_show":    {[]string{"task_id"}, []string{"task_id"}, true},
		"vine_next":     {[]string{"file"}, []string{"file"}, true},
		"vine_read":     {[]string{"file", "action", "id", "status", "query"}, []string{"file", "action"}, false},
		"vine_write":    {[]string{"file", "operations"}, []string{"file", "operations"}, true},
		"vine_expand":   {[]string{"file", "ref_id", "child_file"}, []string{"file", "ref_id", "child_file"}, true},
		"search_chunks": {[]string{"query", "k", "filters", "content"}, []string{"query"}, false},
		"explain_code":  {[]string{"question", "k", "filters"}, []string{"question"}, false},
		"vine_claim":    {[]string{"file", "id", "agent"}, []string{"file"}, true},

		"task_create":           {[]string{"name", "description", "objectives", "parent"}, []string{"name"}, true},
		"task_join":             {[]string{"task", "agent_id", "role"}, []string{"task", "agent_id", "role"}, true},
		"task_objective":        {[]string{"task", "objective_id", "status", "agent_id"}, []string{"task", "objective_id", "status"}, true},
		"task_complete_agent":   {[]string{"task", "agent_id"}, []string{"task", "agent_id"}, true},
		"task_complete":         {[]string{"task", "merge", "force"}, []string{"task"}, true},
		"task_context":          {[]string{"task"}, []string{"task"}, true},
		"task_list":             {[]string{"status"}, nil, true},
		"observe":               {[]string{"branch", "task", "agent_id", "session", "type", "text"}, []string{"type", "text"}, true},
		"consolidate":           {[]string{"level", "session", "task", "agent_id", "merge"}, []string{"level"}, true},
		"facts":                 {[]string{"branch", "status", "category", "query", "task"}, nil, true},
		"consolidation_history": {[]string{"task"}, nil, true},
		"audit_query":           {[]string{"queue", "graph", "stream", "since", "until", "actor", "type", "limit", "cursor"}, nil, true},
		"workflow_start":        {[]string{"workflow", "version", "input", "run_id"}, []string{"workflow"}, false},
		"workflow_show":         {[]string{"run_id"}, []string{"run_id"}, false},
		"workflow_list":         {[]string{"status", "workflow", "limit"}, nil, false},
		"workflow_signal":       {[]string{"run_id", "name", "data"}, []string{"run_id", "name"}, false},
		"workflow_cancel":       {[]string{"run_id", "reason"}, []string{"run_id"}, false},
	}
	if len(res.Tools) != len(want) {
		t.Errorf("got %d tools; want %d", len(res.Tools), len(want))
	}
	for _, tool := range res.Tools {
		w, ok := want[tool.Name]
		if !ok {
			t.Errorf("unexpected tool %q", tool.Name)
			continue
		}
		if len(tool.Description) < 80 {
			t.Errorf("%s: description %q is too thin for an agent", tool.Name, tool.Description)
		}
		var in jsonschema.Schema
		remarshal(t, tool.InputSchema, &in)
		if in.Type != "object" {
			t.Errorf("%s: input schema type %q", tool.Name, in.Type)
		}
		var names []string
		for name, p := range in.Properties {
			names = append(names, name)
			if p.Description == "" {
				t.Errorf("%s: argument %s has no description", tool.Name, name)
			}
		}
		if !sameSet(names, w.args) {
			t.Errorf("%s: arguments %v; want %v", tool.Name, names, w.args)
		}
		if !sameSet(in.Required, w.required) {
			t.Errorf("%s: required %v; want %v", tool.Name, in.Required, w.required)
		}
		if ap := in.AdditionalProperties; ap == nil || ap.Not == nil {
			t.Errorf("%s: schema allows additional properties (%+v)", tool.Name, ap)
		}
		if got := tool.OutputSchema != nil; got != w.output {
			t.Errorf("%s: has output schema = %v; want %v", tool.Name, got, w.output)
		}
	}
	init := cs.InitializeResult()
	if init.ServerInfo == nil || init.ServerInfo.Name != "trellis" || init.ServerInfo.Version != "test" {
		t.Errorf("server info %+v", init.ServerInfo)
	}
	if init.Instructions == "" {
		t.Error("no instructions")
	}
}

// TestStructuredContentMatchesOutputSchema: every successful result that
// carries structured content validates against the tool's advertised
// output schema.
func TestStructuredContentMatchesOutputSchema(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	cs := b.connect(t, ctx)
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	schemas := map[string]*jsonschema.Resolved{}
	for _, tool := range res.Tools {
		if tool.OutputSchema == nil {
			continue
		}
		var s jsonschema.Schema
		remarshal(t, tool.OutputSchema, &s)
		r, err := s.Resolve(nil)
		if err != nil {
			t.Fatalf("%s: resolve output schema: %v", tool.Name, err)
		}
		schemas[tool.Name] = r
	}
	check := func(tool string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		res := call(t, ctx, cs, tool, args)
		if res.IsError {
			t.Fatalf("%s: %s", tool, text(res))
		}
		var v any
		remarshal(t, res.StructuredContent, &v)
		if err := schemas[tool].Validate(v); err != nil {
			t.Errorf("%s: structured content does not match output schema: %v", tool, err)
		}
		return res
	}
	added := check("queue_add", map[string]any{"objective": "schema check", "parent_id": nil})
	var task struct {
		TaskID string `json:"task_id"`
	}
	decodeStructured(t, added, &task)
	check("queue_add", map[string]any{"objective": "child", "parent_id": task.TaskID, "metadata": map[string]any{"k": "v"}})
	check("queue_list", nil)
	claimed := call(t, ctx, cs, "queue_next", nil)
	decodeStructured(t, claimed, &task)
	check("queue_done", map[string]any{"task_id": task.TaskID, "what_was_done": "checked", "citations": []string{"chunk_1"}})
	check("queue_show", map[string]any{"task_id": task.TaskID})
	check("queue_list", map[string]any{"status": "done"})
	claimed = call(t, ctx, cs, "queue_next", map[string]any{})
	decodeStructured(t, claimed, &task)
	check("queue_fail", map[string]any{"task_id": task.TaskID, "error": "broken"})
}

func remarshal(t *testing.T, from, to any) {
	t.Helper()
	data, err := json.Marshal(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, to); err != nil {
		t.Fatalf("unmarshal %s: %v", data, err)
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
