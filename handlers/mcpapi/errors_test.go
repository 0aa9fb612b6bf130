package mcpapi_test

import (
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trellis/trellis/events"
)

// TestBadInput: bad arguments are tool errors (not protocol errors) whose
// text starts with the stable code and names the argument, and they leave
// the log untouched.
func TestBadInput(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	cs := b.connect(t, ctx)

	// One claimed task, so done/fail cases reach the service's checks.
	added := callTask(t, ctx, cs, "queue_add", map[string]any{"objective": "target"})
	callTask(t, ctx, cs, "queue_next", nil)
	unknownID := events.NewID(time.Now())

	cases := []struct {
		name string
		tool string
		args map[string]any
		want string // prefix of the error text
		also string // further text the error must hold
	}{
		{"empty objective", "queue_add", map[string]any{"objective": ""}, "invalid: objective: ", "must not be empty"},
		{"blank objective", "queue_add", map[string]any{"objective": "  \n"}, "invalid: objective: ", "must not be empty"},
		{"missing objective", "queue_add", map[string]any{"inputs": []string{"a"}}, "invalid: objective: ", ""},
		{"negative max_steps", "queue_add", map[string]any{"objective": "x", "max_steps": -1}, "invalid: max_steps: ", "negative"},
		{"huge max_tool_calls", "queue_add", map[string]any{"objective": "x", "max_tool_calls": 1_000_001}, "invalid: max_tool_calls: ", ""},
		{"fractional max_steps", "queue_add", map[string]any{"objective": "x", "max_steps": 2.5}, "invalid: max_steps: ", "integer"},
		{"string max_steps", "queue_add", map[string]any{"objective": "x", "max_steps": "5"}, "invalid: max_steps: ", "must be an integer"},
		{"inputs not strings", "queue_add", map[string]any{"objective": "x", "inputs": []any{1}}, "invalid: inputs: ", "array of strings"},
		{"inputs not a list", "queue_add", map[string]any{"objective": "x", "inputs": "a.py"}, "invalid: inputs: ", "array of strings"},
		{"empty input item", "queue_add", map[string]any{"objective": "x", "inputs": []string{""}}, "invalid: inputs: ", ""},
		{"metadata value not string", "queue_add", map[string]any{"objective": "x", "metadata": map[string]any{"k": 1}}, "invalid: metadata: ", "string values"},
		{"bad queue", "queue_add", map[string]any{"objective": "x", "queue": "bad.queue"}, "invalid: queue: ", ""},
		{"bad parent", "queue_add", map[string]any{"objective": "x", "parent_id": "nope"}, "invalid: parent_id: ", ""},
		{"unknown parent", "queue_add", map[string]any{"objective": "x", "parent_id": unknownID}, "invalid: parent_id: ", "does not exist"},
		{"unknown argument", "queue_add", map[string]any{"objective": "x", "urgency": 1}, "invalid: urgency: ", "is not an argument of queue_add"},
		{"priority out of range", "queue_add", map[string]any{"objective": "x", "priority": 0.5}, "invalid: priority: ", ""},
		{"bad delay", "queue_add", map[string]any{"objective": "x", "delay": "later"}, "invalid: delay: ", "not a duration"},
		{"misspelt argument", "queue_add", map[string]any{"Objective": "x"}, "invalid: Objective: ", "objective, inputs, acceptance"},
		{"two unknown arguments", "queue_done", map[string]any{"task_id": added.TaskID, "what_was_done": "x", "files": 1, "notes": "y"}, "invalid: files, notes: ", "are not arguments of queue_done"},
		{"unknown next argument", "queue_next", map[string]any{"queue_name": "ops"}, "invalid: queue_name: ", ""},
		{"bad worker", "queue_next", map[string]any{"worker": "has space"}, "invalid: worker: ", ""},
		{"invalid task_id", "queue_done", map[string]any{"task_id": "task_0001", "what_was_done": "x"}, "invalid: task_id: ", "not a task id"},
		{"missing task_id", "queue_fail", map[string]any{"error": "x"}, "invalid: task_id: ", "must not be empty"},
		{"empty what_was_done", "queue_done", map[string]any{"task_id": added.TaskID}, "invalid: what_was_done: ", ""},
		{"empty error", "queue_fail", map[string]any{"task_id": added.TaskID, "error": " "}, "invalid: error: ", ""},
		{"negative steps_used", "queue_done", map[string]any{"task_id": added.TaskID, "what_was_done": "x", "steps_used": -3}, "invalid: steps_used: ", ""},
		{"unknown task done", "queue_done", map[string]any{"task_id": unknownID, "what_was_done": "x"}, "not_found: ", unknownID},
		{"unknown task fail", "queue_fail", map[string]any{"task_id": unknownID, "error": "x"}, "not_found: ", unknownID},
		{"unknown task show", "queue_show", map[string]any{"task_id": unknownID}, "not_found: ", unknownID},
		{"invalid task show", "queue_show", map[string]any{"task_id": "01234"}, "invalid: task_id: ", ""},
		{"lower-case task_id", "queue_show", map[string]any{"task_id": strings.ToLower(added.TaskID)}, "invalid: task_id: ", ""},
		{"bad status", "queue_list", map[string]any{"status": "finished"}, "invalid: status: ", "unknown status"},
		{"negative limit", "queue_list", map[string]any{"limit": -1}, "invalid: limit: ", ""},
		{"limit over the maximum", "queue_list", map[string]any{"limit": 1001}, "invalid: limit: ", ""},
		{"malformed cursor", "queue_list", map[string]any{"cursor": "not-a-cursor"}, "invalid: cursor: ", "next_cursor"},
		{"bad since", "queue_list", map[string]any{"since": "yesterday"}, "invalid: since: ", "RFC 3339"},
	}

	before := b.lastSeq(t, ctx)
	for _, c := range cases {
		msg := callErr(t, ctx, cs, c.tool, c.args)
		if !strings.HasPrefix(msg, c.want) || !strings.Contains(msg, c.also) {
			t.Errorf("%s: %s(%v) = %q; want prefix %q containing %q", c.name, c.tool, c.args, msg, c.want, c.also)
		}
	}
	if after := b.lastSeq(t, ctx); after != before {
		t.Fatalf("bad input changed the log: last seq %d -> %d", before, after)
	}

	// The claimed task is still claimed and finishable: nothing was lost.
	done := callTask(t, ctx, cs, "queue_done", map[string]any{"task_id": added.TaskID, "what_was_done": "survived"})
	if done.Checkpoint == nil || done.Checkpoint.WhatWasDone != "survived" {
		t.Fatalf("done = %+v", done)
	}
}

// TestArgumentsNotAnObject: arguments that are not a JSON object are a
// tool error naming "arguments", not a protocol error.
func TestArgumentsNotAnObject(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	cs := b.connect(t, ctx)
	for _, args := range []any{[]string{"objective"}, "objective", 42} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "queue_add", Arguments: args})
		if err != nil {
			t.Fatalf("arguments %v: protocol error %v", args, err)
		}
		if !res.IsError || !strings.HasPrefix(text(res), "invalid: arguments: ") {
			t.Errorf("arguments %v: error %v, %q", args, res.IsError, text(res))
		}
	}
}
