package mcpapi_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/trellis/trellis"
)

// TestSeedLifecycle: seed 000's workflow through a real MCP client —
// queue_add, queue_next, queue_done with what_changed and citations, then
// queue_show shows the task done with its checkpoint.
func TestSeedLifecycle(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	cs := b.connect(t, ctx)

	added := callTask(t, ctx, cs, "queue_add", map[string]any{
		"objective":      "Fix bug in payment processing",
		"inputs":         []string{"bug_report.md", "chunk_payment_handler"},
		"acceptance":     "Bug is fixed and tests pass",
		"max_tool_calls": 15,
		"max_steps":      8,
	})
	if added.Status != trellis.StatusQueued || added.Queue != trellis.DefaultQueue ||
		added.Budget != (trellis.Budget{MaxToolCalls: 15, MaxSteps: 8}) ||
		!slices.Equal(added.Inputs, []string{"bug_report.md", "chunk_payment_handler"}) {
		t.Fatalf("added = %+v", added)
	}

	res := call(t, ctx, cs, "queue_next", map[string]any{})
	if res.IsError {
		t.Fatalf("queue_next: %s", text(res))
	}
	var next trellis.Task
	decodeStructured(t, res, &next)
	if next.TaskID != added.TaskID || next.Status != trellis.StatusClaimed || next.ClaimedBy != localWorker(t, "mcpapi-test") {
		t.Fatalf("next = %+v; want %s claimed by %s", next, added.TaskID, localWorker(t, "mcpapi-test"))
	}
	for _, want := range []string{added.TaskID, "Fix bug in payment processing", "bug_report.md", "Bug is fixed", "max_tool_calls 15", "max_steps 8", "queue_done", "queue_fail"} {
		if !strings.Contains(text(res), want) {
			t.Errorf("queue_next text lacks %q:\n%s", want, text(res))
		}
	}

	done := callTask(t, ctx, cs, "queue_done", map[string]any{
		"task_id":         next.TaskID,
		"what_was_done":   "Fixed null pointer bug in payment handler",
		"what_changed":    []string{"payment.py", "tests/test_payment.py"},
		"what_next":       "Deploy to staging",
		"citations":       []string{"chunk_xyz123"},
		"steps_used":      5,
		"tool_calls_used": 12,
	})
	if done.Status != trellis.StatusDone || done.Checkpoint == nil || done.BudgetExhausted {
		t.Fatalf("done = %+v", done)
	}

	res = call(t, ctx, cs, "queue_show", map[string]any{"task_id": added.TaskID})
	if res.IsError {
		t.Fatalf("queue_show: %s", text(res))
	}
	var shown trellis.Task
	decodeStructured(t, res, &shown)
	cp := shown.Checkpoint
	if shown.Status != trellis.StatusDone || cp == nil ||
		cp.WhatWasDone != "Fixed null pointer bug in payment handler" ||
		!slices.Equal(cp.WhatChanged, []string{"payment.py", "tests/test_payment.py"}) ||
		!slices.Equal(cp.Citations, []string{"chunk_xyz123"}) || cp.WhatNext != "Deploy to staging" ||
		cp.Usage != (trellis.Usage{StepsUsed: 5, ToolCallsUsed: 12}) {
		t.Fatalf("shown = %+v, checkpoint %+v", shown, cp)
	}
	for _, want := range []string{"[done]", "What changed: payment.py, tests/test_payment.py", "Citations: chunk_xyz123", "What's next: Deploy to staging"} {
		if !strings.Contains(text(res), want) {
			t.Errorf("queue_show text lacks %q:\n%s", want, text(res))
		}
	}

	// Lists the caller left out are [] as in seed 000's packet, never null.
	var raw struct {
		Checkpoint map[string]any `json:"checkpoint"`
	}
	decodeStructured(t, res, &raw)
	if b, ok := raw.Checkpoint["blockers"].([]any); !ok || len(b) != 0 {
		t.Errorf("checkpoint blockers = %#v; want []", raw.Checkpoint["blockers"])
	}

	// The queue is empty now: a text answer, no packet, not an error.
	res = call(t, ctx, cs, "queue_next", nil)
	if res.IsError || res.StructuredContent != nil || !strings.Contains(text(res), "No task is queued") {
		t.Fatalf("queue_next on an empty queue = error %v, structured %v, text %q", res.IsError, res.StructuredContent, text(res))
	}

	// Finishing twice is a conflict.
	msg := callErr(t, ctx, cs, "queue_done", map[string]any{"task_id": added.TaskID, "what_was_done": "again"})
	if !strings.HasPrefix(msg, "conflict: ") || !strings.Contains(msg, "already done") {
		t.Fatalf("second queue_done = %q; want conflict ... already done", msg)
	}
}

// TestFailPathAndList: a task fails with blockers; queue_show shows the
// failure checkpoint and queue_list filters by queue and status.
func TestFailPathAndList(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	cs := b.connect(t, ctx)

	added := callTask(t, ctx, cs, "queue_add", map[string]any{
		"objective":       "Connect to the database",
		"queue":           "ops",
		"max_attempts":    2,
		"metadata":        map[string]string{"team": "payments"},
		"idempotency_key": "db-connect-1",
	})
	again := callTask(t, ctx, cs, "queue_add", map[string]any{"objective": "Connect to the database", "queue": "ops", "idempotency_key": "db-connect-1"})
	if again.TaskID != added.TaskID {
		t.Fatalf("idempotent add created %s and %s", added.TaskID, again.TaskID)
	}
	other := callTask(t, ctx, cs, "queue_add", map[string]any{"objective": "Unrelated default-queue task"})

	// queue_next on the default queue does not see the ops task.
	next := callTask(t, ctx, cs, "queue_next", map[string]any{"queue": "ops", "worker": "agent-7"})
	if next.TaskID != added.TaskID || next.ClaimedBy != "agent-7" || next.MaxAttempts != 2 || next.Metadata["team"] != "payments" {
		t.Fatalf("next = %+v", next)
	}

	// Without the explicit worker this client is its default identity: not
	// the claimant.
	msg := callErr(t, ctx, cs, "queue_fail", map[string]any{"task_id": added.TaskID, "error": "x"})
	if !strings.HasPrefix(msg, "conflict: ") || !strings.Contains(msg, "agent-7") {
		t.Fatalf("fail by another worker = %q; want conflict naming agent-7", msg)
	}

	failed := callTask(t, ctx, cs, "queue_fail", map[string]any{
		"task_id":       added.TaskID,
		"error":         "Cannot access database credentials",
		"what_was_done": "Attempted connection setup",
		"blockers":      []string{"Missing .env file", "Database unreachable"},
		"worker":        "agent-7",
	})
	if failed.Status != trellis.StatusFailed {
		t.Fatalf("failed = %+v", failed)
	}
	res := call(t, ctx, cs, "queue_show", map[string]any{"task_id": added.TaskID})
	var shown trellis.Task
	decodeStructured(t, res, &shown)
	if cp := shown.Checkpoint; shown.Status != trellis.StatusFailed || cp == nil ||
		cp.Error != "Cannot access database credentials" || cp.WhatWasDone != "Attempted connection setup" ||
		!slices.Equal(cp.Blockers, []string{"Missing .env file", "Database unreachable"}) {
		t.Fatalf("shown = %+v, checkpoint %+v", shown, shown.Checkpoint)
	}
	if s := text(res); !strings.Contains(s, "[failed]") || !strings.Contains(s, "Error: Cannot access database credentials") ||
		!strings.Contains(s, "Blockers: Missing .env file, Database unreachable") {
		t.Errorf("queue_show text:\n%s", s)
	}

	res = call(t, ctx, cs, "queue_list", map[string]any{"queue": "ops"})
	var l trellis.TaskList
	decodeStructured(t, res, &l)
	if len(l.Tasks) != 1 || l.Tasks[0].TaskID != added.TaskID || l.Tasks[0].Status != trellis.StatusFailed {
		t.Fatalf("list ops = %+v", l.Tasks)
	}
	if len(l.Counts) != 1 || l.Counts["ops"][trellis.StatusFailed] != 1 {
		t.Errorf("counts with queue filter = %v; want ops only", l.Counts)
	}
	if s := text(res); !strings.Contains(s, added.TaskID) || !strings.Contains(s, "ops: failed 1") {
		t.Errorf("queue_list text:\n%s", s)
	}

	res = call(t, ctx, cs, "queue_list", map[string]any{"status": "queued"})
	decodeStructured(t, res, &l)
	if len(l.Tasks) != 1 || l.Tasks[0].TaskID != other.TaskID {
		t.Fatalf("list queued = %+v", l.Tasks)
	}
	// The status filter narrows the rows, not the counts.
	if l.Counts["ops"][trellis.StatusFailed] != 1 || l.Counts["default"][trellis.StatusQueued] != 1 {
		t.Errorf("counts with status filter = %v", l.Counts)
	}
	res = call(t, ctx, cs, "queue_list", map[string]any{"queue": "nothing-here"})
	decodeStructured(t, res, &l)
	if len(l.Tasks) != 0 || !strings.Contains(text(res), "No tasks match") {
		t.Fatalf("list empty queue = %+v, %q", l.Tasks, text(res))
	}

	// Pages: one row at a time in task id order (ULIDs: creation order to
	// the millisecond), next_cursor until the last.
	ids := []string{added.TaskID, other.TaskID}
	slices.Sort(ids)
	var first, second trellis.TaskList
	res = call(t, ctx, cs, "queue_list", map[string]any{"limit": 1})
	decodeStructured(t, res, &first)
	if len(first.Tasks) != 1 || first.Tasks[0].TaskID != ids[0] || first.NextCursor == "" ||
		!strings.Contains(text(res), first.NextCursor) {
		t.Fatalf("first page = %+v, %q", first, text(res))
	}
	res = call(t, ctx, cs, "queue_list", map[string]any{"limit": 1, "cursor": first.NextCursor})
	decodeStructured(t, res, &second)
	if len(second.Tasks) != 1 || second.Tasks[0].TaskID != ids[1] || second.NextCursor != "" {
		t.Fatalf("second page = %+v", second)
	}
}
