package httpapi_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/handlers/httpapi"
)

// TestLifecycle: add → next → done → show → list → export → audit over
// HTTP, and the checkpoint Markdown file the projection writes.
func TestLifecycle(t *testing.T) {
	t.Parallel()
	b := setup(t)

	// Add.
	res := b.do(t, http.MethodPost, "/v1/queue/tasks", trellis.AddTaskRequest{
		Objective: "Refactor auth", Inputs: []string{"auth.py"}, Acceptance: "tests pass",
		MaxToolCalls: 5, MaxSteps: 3, Metadata: map[string]string{"team": "core"},
	})
	var added trellis.Task
	res.expect(t, http.StatusCreated, &added)
	if added.Status != trellis.StatusQueued || added.Queue != trellis.DefaultQueue || added.Budget != (trellis.Budget{MaxToolCalls: 5, MaxSteps: 3}) ||
		added.MaxAttempts != trellis.DefaultMaxAttempts || added.Metadata["team"] != "core" || trellis.ValidateTaskID("task_id", added.TaskID) != nil {
		t.Fatalf("added = %+v", added)
	}
	if loc := res.header.Get("Location"); loc != "/v1/queue/tasks/"+added.TaskID {
		t.Errorf("Location = %q", loc)
	}
	if ct := res.header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
		t.Errorf("Content-Type = %q", ct)
	}
	id := added.TaskID

	// Next claims it; a second next finds nothing and answers null.
	claimed := b.claim(t, "", "w1")
	if claimed == nil || claimed.TaskID != id || claimed.Status != trellis.StatusClaimed || claimed.ClaimedBy != "w1" || claimed.Attempts != 1 {
		t.Fatalf("next = %+v", claimed)
	}
	res = b.do(t, http.MethodPost, "/v1/queue/next", trellis.NextRequest{Worker: "w1"})
	res.expect(t, http.StatusOK, nil)
	if got := strings.TrimSpace(string(res.body)); got != "null" {
		t.Fatalf("empty next body = %q, want null", got)
	}

	// Done, with the optional task_id equal to the path's.
	var done trellis.Task
	b.do(t, http.MethodPost, "/v1/queue/tasks/"+id+"/done", map[string]any{
		"task_id": id, "worker": "w1", "what_was_done": "Split the auth module",
		"what_changed": []string{"auth/session.go"}, "what_next": "Review", "citations": []string{"chunk:abc"},
		"steps_used": 2, "tool_calls_used": 4,
	}).expect(t, http.StatusOK, &done)
	if done.Status != trellis.StatusDone || done.Checkpoint == nil || done.Checkpoint.WhatWasDone != "Split the auth module" || done.BudgetExhausted {
		t.Fatalf("done = %+v", done)
	}

	// Show.
	var shown trellis.Task
	b.do(t, http.MethodGet, "/v1/queue/tasks/"+id, nil).expect(t, http.StatusOK, &shown)
	if shown.Status != trellis.StatusDone || shown.Checkpoint == nil || !slices.Equal(shown.Checkpoint.Citations, []string{"chunk:abc"}) {
		t.Fatalf("show = %+v", shown)
	}

	// List, unfiltered and filtered.
	var list trellis.TaskList
	b.do(t, http.MethodGet, "/v1/queue/tasks", nil).expect(t, http.StatusOK, &list)
	if len(list.Tasks) != 1 || list.Tasks[0].TaskID != id || list.Tasks[0].Status != trellis.StatusDone || list.Counts["default"][trellis.StatusDone] != 1 {
		t.Fatalf("list = %+v", list)
	}
	b.do(t, http.MethodGet, "/v1/queue/tasks?queue=default&status=done", nil).expect(t, http.StatusOK, &list)
	if len(list.Tasks) != 1 {
		t.Fatalf("list done = %+v", list)
	}
	list = trellis.TaskList{}
	b.do(t, http.MethodGet, "/v1/queue/tasks?status=queued", nil).expect(t, http.StatusOK, &list)
	if len(list.Tasks) != 0 {
		t.Fatalf("list queued = %+v", list)
	}

	// Export: one JSONL task packet per event.
	res = b.do(t, http.MethodGet, "/v1/queue/export", nil)
	res.expect(t, http.StatusOK, nil)
	if ct := res.header.Get("Content-Type"); ct != "application/x-ndjson" {
		t.Errorf("export Content-Type = %q", ct)
	}
	var statuses []trellis.Status
	sc := bufio.NewScanner(bytes.NewReader(res.body))
	for sc.Scan() {
		var p trellis.Task
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			t.Fatalf("export line %q: %v", sc.Text(), err)
		}
		if p.TaskID != id {
			t.Fatalf("export line for %s", p.TaskID)
		}
		statuses = append(statuses, p.Status)
	}
	if fmt.Sprint(statuses) != "[queued claimed done]" {
		t.Fatalf("export statuses = %v", statuses)
	}

	// Audit.
	res = b.do(t, http.MethodGet, "/v1/audit/"+id, nil)
	var audit httpapi.AuditResponse
	res.expect(t, http.StatusOK, &audit)
	var types []string
	for i, ev := range audit.Events {
		types = append(types, ev.Type)
		if ev.AggregateID != id || ev.Time.IsZero() || trellis.ValidateTaskID("id", ev.ID) != nil || len(ev.Payload) == 0 ||
			!strings.HasPrefix(ev.Subject, "trellis.queue.default."+id+".") || (i > 0 && ev.Seq <= audit.Events[i-1].Seq) {
			t.Errorf("audit event %d = %+v", i, ev)
		}
		if wantActor := map[bool]string{true: "", false: "w1"}[i == 0]; ev.Actor != wantActor {
			t.Errorf("audit event %d actor %q, want %q", i, ev.Actor, wantActor)
		}
	}
	if audit.ID != id || fmt.Sprint(types) != "[added claimed completed]" {
		t.Fatalf("audit = %s", res.body)
	}
	// Every event carries exactly the documented keys.
	var rawAudit struct {
		Events []map[string]json.RawMessage `json:"events"`
	}
	if err := json.Unmarshal(res.body, &rawAudit); err != nil {
		t.Fatal(err)
	}
	for _, ev := range rawAudit.Events {
		keys := slices.Sorted(func(yield func(string) bool) {
			for k := range ev {
				if !yield(k) {
					return
				}
			}
		})
		if fmt.Sprint(keys) != "[actor aggregate_id id payload seq subject time type]" {
			t.Errorf("audit event keys = %v", keys)
		}
	}

	// The checkpoint projection writes the Markdown file.
	if err := b.svc.CatchUp(b.ctx); err != nil {
		t.Fatal(err)
	}
	md := readCheckpoint(t, b, id)
	for _, want := range []string{"Split the auth module", "- auth/session.go", "Review", "- chunk:abc"} {
		if !strings.Contains(md, want) {
			t.Errorf("checkpoint lacks %q:\n%s", want, md)
		}
	}
}

// readCheckpoint returns <data>/checkpoints/<id>.md after checking seed
// 000's headings are there, in order.
func readCheckpoint(t *testing.T, b *testBundle, id string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(b.dataDir, "checkpoints", id+".md"))
	if err != nil {
		t.Fatalf("checkpoint file: %v", err)
	}
	md := string(raw)
	if !strings.HasPrefix(md, "# Checkpoint: "+id+"\n") {
		t.Errorf("checkpoint does not start with its title:\n%s", md)
	}
	at := 0
	for _, h := range []string{"**Created:**", "## What Was Done", "## What Changed", "## What's Next", "## Blockers/Errors", "## Citations Used"} {
		i := strings.Index(md[at:], h)
		if i < 0 {
			t.Fatalf("checkpoint lacks %q after byte %d:\n%s", h, at, md)
		}
		at += i + len(h)
	}
	return md
}

// TestFailPath: a claimed task failed with an error and blockers; the
// blockers reach the packet, the audit trail and the checkpoint file, and
// finishing it again is a conflict that appends nothing.
func TestFailPath(t *testing.T) {
	t.Parallel()
	b := setup(t)
	task := b.addTask(t, trellis.AddTaskRequest{Queue: "ops", Objective: "Migrate the database"})
	if c := b.claim(t, "ops", "w7"); c == nil || c.TaskID != task.TaskID {
		t.Fatalf("claim = %+v", c)
	}
	var failed trellis.Task
	b.do(t, http.MethodPost, "/v1/queue/tasks/"+task.TaskID+"/fail", map[string]any{
		"worker": "w7", "error": "disk full", "what_was_done": "Copied half the rows",
		"blockers": []string{"need a bigger disk", "ticket OPS-1"}, "steps_used": 11,
	}).expect(t, http.StatusOK, &failed)
	cp := failed.Checkpoint
	if failed.Status != trellis.StatusFailed || cp == nil || cp.Error != "disk full" || !slices.Equal(cp.Blockers, []string{"need a bigger disk", "ticket OPS-1"}) ||
		!failed.BudgetExhausted {
		t.Fatalf("failed = %+v (checkpoint %+v)", failed, cp)
	}

	var shown trellis.Task
	b.do(t, http.MethodGet, "/v1/queue/tasks/"+task.TaskID, nil).expect(t, http.StatusOK, &shown)
	if shown.Status != trellis.StatusFailed || !slices.Equal(shown.Checkpoint.Blockers, cp.Blockers) {
		t.Fatalf("show = %+v", shown)
	}
	var list trellis.TaskList
	b.do(t, http.MethodGet, "/v1/queue/tasks?queue=ops&status=failed", nil).expect(t, http.StatusOK, &list)
	if len(list.Tasks) != 1 || list.Tasks[0].TaskID != task.TaskID || list.Counts["ops"][trellis.StatusFailed] != 1 {
		t.Fatalf("list = %+v", list)
	}
	var audit httpapi.AuditResponse
	b.do(t, http.MethodGet, "/v1/audit/"+task.TaskID, nil).expect(t, http.StatusOK, &audit)
	var types []string
	for _, ev := range audit.Events {
		types = append(types, ev.Type)
	}
	if fmt.Sprint(types) != "[added claimed failed]" {
		t.Fatalf("audit types = %v", types)
	}

	before := b.lastSeq(t)
	for _, c := range []struct{ path, body string }{
		{"/fail", `{"worker":"w7","error":"again"}`},
		{"/done", `{"worker":"w7","what_was_done":"late"}`},
	} {
		e := b.do(t, http.MethodPost, "/v1/queue/tasks/"+task.TaskID+c.path, c.body)
		if e.status != http.StatusConflict || e.apiError(t).Code != trellis.CodeConflict {
			t.Errorf("%s after fail: %d %s; want 409 conflict", c.path, e.status, e.body)
		}
	}
	if after := b.lastSeq(t); after != before {
		t.Fatalf("refused finishes appended events: seq %d -> %d", before, after)
	}

	if err := b.svc.CatchUp(b.ctx); err != nil {
		t.Fatal(err)
	}
	md := readCheckpoint(t, b, task.TaskID)
	blockers := md[strings.Index(md, "## Blockers/Errors"):]
	for _, want := range []string{"- Error: disk full", "- Budget exhausted", "- need a bigger disk", "- ticket OPS-1"} {
		if !strings.Contains(blockers, want) {
			t.Errorf("checkpoint blockers lack %q:\n%s", want, md)
		}
	}
	if !strings.Contains(md, "Copied half the rows") {
		t.Errorf("checkpoint lacks what was done:\n%s", md)
	}
}

// TestConcurrentNext: 20 clients race for 5 tasks; each task is claimed
// exactly once and the other 15 get null.
func TestConcurrentNext(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const tasks, clients = 5, 20
	for i := range tasks {
		b.addTask(t, trellis.AddTaskRequest{Queue: "burst", Objective: fmt.Sprintf("task %d", i)})
	}
	results := make([]response, clients)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range clients {
		wg.Go(func() {
			<-start
			res, err := b.send(http.MethodPost, "/v1/queue/next", fmt.Sprintf(`{"queue":"burst","worker":"w%d"}`, i))
			if err != nil {
				t.Error(err)
			}
			results[i] = res
		})
	}
	close(start)
	wg.Wait()

	claimedBy := map[string]string{}
	nulls := 0
	for i, r := range results {
		var task *trellis.Task
		if r.status != http.StatusOK {
			t.Errorf("client %d: status %d: %s", i, r.status, r.body)
			continue
		}
		if err := json.Unmarshal(r.body, &task); err != nil {
			t.Errorf("client %d: %s: %v", i, r.body, err)
			continue
		}
		if task == nil {
			nulls++
			continue
		}
		worker := fmt.Sprintf("w%d", i)
		if task.ClaimedBy != worker || task.Status != trellis.StatusClaimed {
			t.Errorf("client %d got %+v", i, task)
		}
		if prev, dup := claimedBy[task.TaskID]; dup {
			t.Errorf("task %s claimed by %s and %s", task.TaskID, prev, worker)
		}
		claimedBy[task.TaskID] = worker
	}
	if len(claimedBy) != tasks || nulls != clients-tasks {
		t.Fatalf("%d distinct claims and %d nulls; want %d and %d", len(claimedBy), nulls, tasks, clients-tasks)
	}
	// The log agrees: exactly one claimed event per task.
	n := 0
	if err := b.svc.Store().Read(b.ctx, events.StreamQueue, "trellis.queue.burst.*.claimed", 0, func(events.Recorded) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n != tasks {
		t.Fatalf("%d claimed events; want %d", n, tasks)
	}
	if c := b.claim(t, "burst", "late"); c != nil {
		t.Fatalf("a sixth claim got %+v", c)
	}
}

// TestConcurrentFinish: a done and a fail racing on one task over HTTP;
// exactly one wins, the other is a conflict, and the log holds one
// finishing event.
func TestConcurrentFinish(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for round := range 5 {
		// One queue per round, so its claim consumer is created after the
		// add: on an existing consumer, taskqueue.Handler.Next can miss a task
		// added just before (the server signals consumers asynchronously).
		queue := fmt.Sprintf("race-%d", round)
		task := b.addTask(t, trellis.AddTaskRequest{Queue: queue, Objective: "race"})
		if c := b.claim(t, queue, "w"); c == nil || c.TaskID != task.TaskID {
			t.Fatalf("claim = %+v", c)
		}
		var wg sync.WaitGroup
		var done, fail response
		var doneErr, failErr error
		wg.Go(func() {
			done, doneErr = b.send(http.MethodPost, "/v1/queue/tasks/"+task.TaskID+"/done", `{"worker":"w","what_was_done":"d"}`)
		})
		wg.Go(func() {
			fail, failErr = b.send(http.MethodPost, "/v1/queue/tasks/"+task.TaskID+"/fail", `{"worker":"w","error":"f"}`)
		})
		wg.Wait()
		if doneErr != nil || failErr != nil {
			t.Fatalf("round %d: %v, %v", round, doneErr, failErr)
		}
		statuses := []int{done.status, fail.status}
		slices.Sort(statuses)
		if fmt.Sprint(statuses) != "[200 409]" {
			t.Fatalf("round %d: done %d %s, fail %d %s; want one 200 and one 409", round, done.status, done.body, fail.status, fail.body)
		}
		var audit httpapi.AuditResponse
		b.do(t, http.MethodGet, "/v1/audit/"+task.TaskID, nil).expect(t, http.StatusOK, &audit)
		if len(audit.Events) != 3 {
			t.Fatalf("round %d: %d events; want 3", round, len(audit.Events))
		}
	}
}

// TestListPages: GET /v1/queue/tasks pages in task id order with limit
// and cursor, keeps the counts on every page, and filters by since.
func TestListPages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	first := b.addTask(t, trellis.AddTaskRequest{Objective: "first"})
	second := b.addTask(t, trellis.AddTaskRequest{Objective: "second"})
	third := b.addTask(t, trellis.AddTaskRequest{Objective: "third"})
	var got []string
	cursor := ""
	for page := 0; page < 5; page++ {
		list := trellis.TaskList{}
		b.do(t, http.MethodGet, "/v1/queue/tasks?limit=1&cursor="+cursor, nil).expect(t, http.StatusOK, &list)
		if len(list.Tasks) != 1 || list.Counts["default"][trellis.StatusQueued] != 3 {
			t.Fatalf("page %d = %+v", page, list)
		}
		got = append(got, list.Tasks[0].TaskID)
		if cursor = list.NextCursor; cursor == "" {
			break
		}
	}
	// Task ids are ULIDs: creation order to the millisecond.
	if want := slices.Sorted(slices.Values([]string{first.TaskID, second.TaskID, third.TaskID})); !slices.Equal(got, want) {
		t.Fatalf("pages = %v", got)
	}
	// since: only the tasks updated at or after the third's update.
	var list trellis.TaskList
	b.do(t, http.MethodGet, "/v1/queue/tasks?since="+third.UpdatedAt.Format(time.RFC3339Nano), nil).expect(t, http.StatusOK, &list)
	if len(list.Tasks) != 1 || list.Tasks[0].TaskID != third.TaskID || list.NextCursor != "" {
		t.Fatalf("since = %+v", list)
	}
}

// TestAddTasksBatch: POST /v1/queue/tasks/batch adds every task in one
// call; a bad element refuses the call, naming it; nothing is added.
func TestAddTasksBatch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var res trellis.AddManyResult
	b.do(t, "POST", "/v1/queue/tasks/batch", map[string]any{"tasks": []map[string]any{
		{"objective": "one", "queue": "batch"}, {"objective": "two", "queue": "batch", "max_steps": 3}, {"objective": "three", "queue": "batch"},
	}}).expect(t, http.StatusCreated, &res)
	if len(res.Tasks) != 3 || len(res.Errors) != 0 || res.Tasks[1].Budget.MaxSteps != 3 || res.Tasks[2].Objective != "three" {
		t.Fatalf("batch = %+v", res)
	}
	b.do(t, "POST", "/v1/queue/tasks/batch", map[string]any{"tasks": []map[string]any{{"objective": "ok", "queue": "refused"}, {"objective": "", "queue": "refused"}}}).
		expectError(t, http.StatusBadRequest, "invalid", "tasks[1].objective", "")
	b.do(t, "POST", "/v1/queue/tasks/batch", map[string]any{"tasks": []map[string]any{}}).expectError(t, http.StatusBadRequest, "invalid", "tasks", "at least one")
	b.do(t, "POST", "/v1/queue/tasks/batch", `{"tasks": [{"objective": "x", "bogus": 1}]}`).expectError(t, http.StatusBadRequest, "invalid", "bogus", "unknown field")
	var list trellis.TaskList
	b.do(t, "GET", "/v1/queue/tasks?queue=refused", nil).expect(t, http.StatusOK, &list)
	if len(list.Tasks) != 0 {
		t.Fatalf("a refused batch added %d tasks", len(list.Tasks))
	}
}
