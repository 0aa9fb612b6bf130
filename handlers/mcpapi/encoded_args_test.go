package mcpapi_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/codememory"
	"github.com/trellis/trellis/internal/servicetest"
)

// TestStringEncodedArguments: a client that sends an array or object
// argument as a JSON-encoded string (MCP Inspector 0.15 does for every
// argument it cannot render) gets the same result as one that sends the
// array or object: queue_add inputs and metadata, queue_done what_changed,
// citations and blockers, queue_fail blockers, task_create objectives,
// search_chunks filters and vine_write operations.
func TestStringEncodedArguments(t *testing.T) {
	t.Parallel()
	b, ctx := setupVine(t)
	cs := b.connect(t, ctx)

	added := callTask(t, ctx, cs, "queue_add", map[string]any{
		"objective": "encoded", "inputs": `["a.go", "b.go"]`, "metadata": `{"team": "core"}`,
	})
	if !slices.Equal(added.Inputs, []string{"a.go", "b.go"}) || added.Metadata["team"] != "core" {
		t.Fatalf("added = %+v", added)
	}
	callTask(t, ctx, cs, "queue_next", nil)
	done := callTask(t, ctx, cs, "queue_done", map[string]any{
		"task_id": added.TaskID, "what_was_done": "x",
		"what_changed": `["a.go"]`, "citations": ` ["chunk_1", "b.go"] `, "blockers": `[]`,
	})
	if cp := done.Checkpoint; cp == nil || !slices.Equal(cp.WhatChanged, []string{"a.go"}) ||
		!slices.Equal(cp.Citations, []string{"chunk_1", "b.go"}) || len(cp.Blockers) != 0 {
		t.Fatalf("done checkpoint = %+v", done.Checkpoint)
	}
	failing := callTask(t, ctx, cs, "queue_add", map[string]any{"objective": "to fail"})
	callTask(t, ctx, cs, "queue_next", nil)
	failed := callTask(t, ctx, cs, "queue_fail", map[string]any{"task_id": failing.TaskID, "error": "stuck", "blockers": `["no network"]`})
	if cp := failed.Checkpoint; cp == nil || !slices.Equal(cp.Blockers, []string{"no network"}) {
		t.Fatalf("failed checkpoint = %+v", failed.Checkpoint)
	}

	var task trellis.AgentTaskView
	decodeStructured(t, call(t, ctx, cs, "task_create", map[string]any{"name": "enc", "objectives": `["Fix it", "Test it"]`}), &task)
	if len(task.Objectives) != 2 || task.Objectives[1].Description != "Test it" {
		t.Fatalf("task = %+v", task)
	}

	repo := t.TempDir()
	if err := os.WriteFile(filepath.Join(repo, "reg.py"), []byte("class ToolRegistry:\n    pass\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "reg.go"), []byte("package reg\n\n// ToolRegistry holds tools.\ntype ToolRegistry struct{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := codememory.Ingest(ctx, b.nats.Store, codememory.IngestConfig{Root: repo, Repo: "demo"}); err != nil {
		t.Fatal(err)
	}
	var sr trellis.SearchResult
	decodeStructured(t, call(t, ctx, cs, "search_chunks", map[string]any{"query": "ToolRegistry", "filters": `{"file_type": ".py"}`}), &sr)
	if len(sr.Results) == 0 {
		t.Fatalf("search = %+v", sr)
	}
	for _, h := range sr.Results {
		if h.SourcePath != "reg.py" {
			t.Fatalf("filters ignored: hit %+v", h)
		}
	}

	f := b.file(t, "enc.vine", servicetest.Chain)
	var wr trellis.VineWriteResult
	decodeStructured(t, call(t, ctx, cs, "vine_write", map[string]any{
		"file": f, "operations": `[{"op":"update","id":"a","decisions":["Encoded by the client"]}]`,
	}), &wr)
	if data, _ := os.ReadFile(f); !strings.Contains(string(data), "Encoded by the client") {
		t.Fatalf("vine_write with encoded operations: file\n%s", data)
	}
}

// TestStringEncodedArgumentsBadInput: a string given for an array or
// object argument must be valid JSON of that shape, decoded by the same
// strict rules as the plain value; otherwise the call is an invalid tool
// error naming the argument, and nothing is appended.
func TestStringEncodedArgumentsBadInput(t *testing.T) {
	t.Parallel()
	b, ctx := setupVine(t)
	cs := b.connect(t, ctx)
	added := callTask(t, ctx, cs, "queue_add", map[string]any{"objective": "target"})
	callTask(t, ctx, cs, "queue_next", nil)
	f := b.file(t, "bad.vine", servicetest.Chain)
	call(t, ctx, cs, "vine_next", map[string]any{"file": f}) // import

	cases := []struct {
		name string
		tool string
		args map[string]any
		want string // prefix of the error text
		also string // further text the error must hold
	}{
		{"not JSON", "queue_add", map[string]any{"objective": "x", "inputs": "a.py, b.py"}, "invalid: inputs: ", "not valid JSON"},
		{"empty string", "queue_add", map[string]any{"objective": "x", "inputs": ""}, "invalid: inputs: ", "not valid JSON"},
		{"object for an array", "queue_add", map[string]any{"objective": "x", "inputs": `{"a": "b"}`}, "invalid: inputs: ", "array of strings"},
		{"null in a string", "queue_add", map[string]any{"objective": "x", "inputs": `null`}, "invalid: inputs: ", "array of strings"},
		{"wrong item type", "queue_add", map[string]any{"objective": "x", "inputs": `[1, 2]`}, "invalid: inputs: ", "array of strings"},
		{"trailing garbage", "queue_add", map[string]any{"objective": "x", "inputs": `["a"] ["b"]`}, "invalid: inputs: ", "not valid JSON"},
		{"array for an object", "queue_add", map[string]any{"objective": "x", "metadata": `["k"]`}, "invalid: metadata: ", "object"},
		{"metadata value not string", "queue_add", map[string]any{"objective": "x", "metadata": `{"k": 1}`}, "invalid: metadata: ", "string values"},
		{"doubly encoded", "queue_done", map[string]any{"task_id": added.TaskID, "what_was_done": "x", "citations": `"[\"a\"]"`}, "invalid: citations: ", "array of strings"},
		{"truncated", "queue_done", map[string]any{"task_id": added.TaskID, "what_was_done": "x", "what_changed": `["a.go"`}, "invalid: what_changed: ", "not valid JSON"},
		{"blockers not a list", "queue_fail", map[string]any{"task_id": added.TaskID, "error": "x", "blockers": `"none"`}, "invalid: blockers: ", "array of strings"},
		{"objectives not a list", "task_create", map[string]any{"name": "bad", "objectives": "Fix it"}, "invalid: objectives: ", "not valid JSON"},
		{"filters not an object", "search_chunks", map[string]any{"query": "x", "filters": `[".py"]`}, "invalid: filters: ", "object"},
		{"filters unknown key", "search_chunks", map[string]any{"query": "x", "filters": `{"lang": "py"}`}, "invalid: filters: ", `unknown key "lang"; it takes chunk_type, file_type, path_prefix, repo, tags`},
		{"filters unknown key, plain object", "search_chunks", map[string]any{"query": "x", "filters": map[string]any{"lang": "py"}}, "invalid: filters: ", `unknown key "lang"`},
		{"filters tags not a list", "search_chunks", map[string]any{"query": "x", "filters": `{"tags": "x"}`}, "invalid: filters.tags: ", "must be an array of strings"},
		{"operations not JSON", "vine_write", map[string]any{"file": f, "operations": "set_status a complete"}, "invalid: operations: ", "not valid JSON"},
		{"operations an object", "vine_write", map[string]any{"file": f, "operations": `{"op": "set_status"}`}, "invalid: operations: ", "array"},
		{"operation with an unknown key", "vine_write", map[string]any{"file": f, "operations": `[{"op":"add_dep","task_id":"a","depId":"b"}]`}, "invalid: operations: ", `item 0: unknown key "task_id"`},
	}
	queue, vineSeq := b.lastSeq(t, ctx), b.vineSeq(t, ctx)
	mem := b.memorySeqs(t, ctx)
	for _, c := range cases {
		msg := callErr(t, ctx, cs, c.tool, c.args)
		if !strings.HasPrefix(msg, c.want) || !strings.Contains(msg, c.also) {
			t.Errorf("%s: %s(%v) = %q; want prefix %q containing %q", c.name, c.tool, c.args, msg, c.want, c.also)
		}
	}
	if b.lastSeq(t, ctx) != queue || b.vineSeq(t, ctx) != vineSeq || b.memorySeqs(t, ctx) != mem {
		t.Fatal("bad input changed the log")
	}
	if data, _ := os.ReadFile(f); string(data) != servicetest.Chain {
		t.Fatalf("bad input changed the file:\n%s", data)
	}
}
