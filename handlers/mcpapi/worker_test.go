package mcpapi_test

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/handlers/mcpapi"
)

// TestDefaultWorkerInSession: over a transport without session ids
// (in-memory, like stdio) queue_next then queue_done without a worker
// match: both act as "mcp".
func TestDefaultWorkerInSession(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	cs := b.connect(t, ctx)
	added := callTask(t, ctx, cs, "queue_add", map[string]any{"objective": "default worker"})
	next := callTask(t, ctx, cs, "queue_next", nil)
	if next.TaskID != added.TaskID || next.ClaimedBy != mcpapi.DefaultWorker {
		t.Fatalf("next = %+v; want claimed by %q", next, mcpapi.DefaultWorker)
	}
	done := callTask(t, ctx, cs, "queue_done", map[string]any{"task_id": added.TaskID, "what_was_done": "ok"})
	if done.Status != trellis.StatusDone || done.ClaimedBy != mcpapi.DefaultWorker {
		t.Fatalf("done = %+v", done)
	}
}

// TestStreamableHTTPSessions: through the streamable-HTTP handler each
// client session is its own default worker ("mcp:<session id>"): the
// session that called queue_next can finish the task without naming a
// worker, another session gets a conflict tool error.
func TestStreamableHTTPSessions(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	ts := httptest.NewServer(mcpapi.HTTPHandler(b.srv))
	t.Cleanup(ts.Close) // runs after the sessions below are closed

	dial := func() *mcp.ClientSession {
		t.Helper()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "http-test", Version: "v0"}, nil).
			Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ts.URL, MaxRetries: -1}, nil)
		if err != nil {
			t.Fatalf("connect over HTTP: %v", err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		if cs.ID() == "" {
			t.Fatal("HTTP session has no id")
		}
		return cs
	}
	alice, bob := dial(), dial()
	if alice.ID() == bob.ID() {
		t.Fatalf("two sessions share id %q", alice.ID())
	}

	res, err := alice.ListTools(ctx, nil)
	if err != nil || len(res.Tools) != 24 {
		t.Fatalf("tools over HTTP: %v, %v", res, err)
	}

	added := callTask(t, ctx, alice, "queue_add", map[string]any{"objective": "over http", "max_steps": 2})
	next := callTask(t, ctx, alice, "queue_next", nil)
	if want := "mcp:" + alice.ID(); next.TaskID != added.TaskID || next.ClaimedBy != want {
		t.Fatalf("next = %+v; want %s claimed by %s", next, added.TaskID, want)
	}

	before := b.lastSeq(t, ctx)
	msg := callErr(t, ctx, bob, "queue_done", map[string]any{"task_id": added.TaskID, "what_was_done": "not mine"})
	if !strings.HasPrefix(msg, "conflict: ") || !strings.Contains(msg, alice.ID()) {
		t.Fatalf("done from another session = %q; want a conflict naming the claimant", msg)
	}
	msg = callErr(t, ctx, bob, "queue_fail", map[string]any{"task_id": added.TaskID, "error": "not mine"})
	if !strings.HasPrefix(msg, "conflict: ") {
		t.Fatalf("fail from another session = %q; want conflict", msg)
	}
	if after := b.lastSeq(t, ctx); after != before {
		t.Fatalf("rejected finishes changed the log: %d -> %d", before, after)
	}

	done := callTask(t, ctx, alice, "queue_done", map[string]any{
		"task_id": added.TaskID, "what_was_done": "done over http", "steps_used": 3,
	})
	if done.Status != trellis.StatusDone || !done.BudgetExhausted {
		t.Fatalf("done = %+v; want done with budget_exhausted (3 steps > 2)", done)
	}
	shown := callTask(t, ctx, bob, "queue_show", map[string]any{"task_id": added.TaskID})
	if shown.Status != trellis.StatusDone || shown.Checkpoint == nil || shown.Checkpoint.WhatWasDone != "done over http" {
		t.Fatalf("shown from the other session = %+v", shown)
	}
}
