package httpapi_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/vine"
)

func sumInts(v []int) int {
	n := 0
	for _, x := range v {
		n += x
	}
	return n
}

// TestQueueActivityAndWorkers: the last hour's activity per queue and
// worker, and who holds what, derived from the log; events appended after
// the first read are folded in.
func TestQueueActivityAndWorkers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, o := range []string{"one", "two", "three"} {
		b.addTask(t, trellis.AddTaskRequest{Objective: o, Queue: "jobs"})
	}
	done := b.claim(t, "jobs", "w1")
	b.do(t, http.MethodPost, "/v1/queue/tasks/"+done.TaskID+"/done", map[string]any{"worker": "w1", "what_was_done": "ok"}).expect(t, http.StatusOK, nil)
	failed := b.claim(t, "jobs", "w2")
	b.do(t, http.MethodPost, "/v1/queue/tasks/"+failed.TaskID+"/fail", map[string]any{"worker": "w2", "error": "boom"}).expect(t, http.StatusOK, nil)
	held := b.claim(t, "jobs", "w2")

	var act trellis.QueueActivity
	b.do(t, http.MethodGet, "/v1/queue/activity", nil).expect(t, http.StatusOK, &act)
	if !act.CaughtUp || act.Buckets != 60 || act.BucketSeconds != 60 || act.Seq != b.lastSeq(t) {
		t.Fatalf("activity header = %+v", act)
	}
	if want := time.Now().Add(-59 * time.Minute).Truncate(time.Minute); act.Start.After(want) || act.Start.Before(want.Add(-time.Minute)) {
		t.Errorf("start %s, want about %s", act.Start, want)
	}
	q := act.Queues["jobs"]
	if q == nil {
		t.Fatalf("no series for jobs: %+v", act.Queues)
	}
	for typ, want := range map[string]int{"added": 3, "claimed": 3, "completed": 1, "failed": 1} {
		if got := sumInts(q.Events[typ]); got != want {
			t.Errorf("%s: %d in the window, want %d", typ, got, want)
		}
		if n := len(q.Events[typ]); n != 60 {
			t.Errorf("%s: %d buckets", typ, n)
		}
	}
	if got := sumInts(q.Claims); got != 3 {
		t.Errorf("claims with a latency: %d, want 3", got)
	}
	last := len(q.Claims) - 1
	for q.Claims[last] == 0 && last > 0 {
		last--
	}
	if q.ClaimP50Ms[last] == nil || q.ClaimP95Ms[last] == nil || *q.ClaimP50Ms[last] > *q.ClaimP95Ms[last] {
		t.Errorf("latency in the claims' bucket: p50 %v p95 %v", q.ClaimP50Ms[last], q.ClaimP95Ms[last])
	}
	byName := map[string]trellis.WorkerActivity{}
	for _, w := range act.Workers {
		byName[w.Worker] = w
	}
	if w := byName["w1"]; w.Finished != 1 || w.Events["claimed"] != 1 || w.Events["completed"] != 1 || w.LastEvent != "completed" || w.LastTask != done.TaskID || w.PerMinuteRecent != 0.2 {
		t.Errorf("w1 = %+v", w)
	}
	if w := byName["w2"]; w.Finished != 1 || w.Events["claimed"] != 2 || w.LastEvent != "claimed" || w.LastTask != held.TaskID || len(w.Queues) != 1 || w.Queues[0] != "jobs" {
		t.Errorf("w2 = %+v", w)
	}

	// Who holds what.
	var wv trellis.WorkersView
	b.do(t, http.MethodGet, "/v1/queue/workers", nil).expect(t, http.StatusOK, &wv)
	if wv.Holders != 1 || wv.Truncated || len(wv.NotDerived) == 0 || !strings.Contains(wv.NotDerived[0], "heartbeat") {
		t.Fatalf("workers view = %+v", wv)
	}
	for _, w := range wv.Workers {
		switch w.Worker {
		case "w1":
			if len(w.Held) != 0 {
				t.Errorf("w1 holds %+v", w.Held)
			}
		case "w2":
			if len(w.Held) != 1 || w.Held[0].TaskID != held.TaskID || !w.Held[0].Leased || w.Held[0].ExpiresAt == nil || w.Held[0].LeaseSeconds != trellis.DefaultAgentLease.Seconds() || w.Held[0].ClaimedAt == nil || w.Held[0].Attempt != 1 || w.Held[0].Objective != held.Objective {
				t.Errorf("w2 holds %+v", w.Held)
			}
		default:
			t.Errorf("unexpected worker %+v", w)
		}
	}

	// Later events are folded: the fold keeps going with the log.
	b.addTask(t, trellis.AddTaskRequest{Objective: "four", Queue: "other"})
	b.do(t, http.MethodGet, "/v1/queue/activity", nil).expect(t, http.StatusOK, &act)
	if got := sumInts(act.Queues["other"].Events["added"]); got != 1 || sumInts(act.Queues["jobs"].Events["added"]) != 3 {
		t.Errorf("after another add: other added %d; %+v", got, act.Queues)
	}

	b.do(t, http.MethodGet, "/v1/queue/activity?window=2h", nil).expectError(t, http.StatusBadRequest, trellis.CodeInvalid, "window", "unknown query parameter")
	b.do(t, http.MethodGet, "/v1/queue/workers?x=1", nil).expectError(t, http.StatusBadRequest, trellis.CodeInvalid, "x", "unknown query parameter")
}

// TestListAsOfAndText: the board as it stood at a time (folded from the
// log up to then), paged like the live board; the text filter.
func TestListAsOfAndText(t *testing.T) {
	t.Parallel()
	b := setup(t)
	alpha := b.addTask(t, trellis.AddTaskRequest{Objective: "Alpha report"})
	beta := b.addTask(t, trellis.AddTaskRequest{Objective: "beta chart", Queue: "charts"})
	then := time.Now().UTC()
	claimed := b.claim(t, "", "w1")
	if claimed.TaskID != alpha.TaskID {
		t.Fatalf("claimed %s", claimed.TaskID)
	}
	b.do(t, http.MethodPost, "/v1/queue/tasks/"+alpha.TaskID+"/done", map[string]any{"worker": "w1", "what_was_done": "ok"}).expect(t, http.StatusOK, nil)
	gamma := b.addTask(t, trellis.AddTaskRequest{Objective: "gamma alpha"})

	at := url.QueryEscape(then.Format(time.RFC3339Nano))
	list := func(query string) trellis.TaskList {
		t.Helper()
		var l trellis.TaskList
		b.do(t, http.MethodGet, "/v1/queue/tasks?"+query, nil).expect(t, http.StatusOK, &l)
		return l
	}
	// Rows come in task id order; ids made in the same millisecond are
	// ordered by their random part.
	first, second := alpha.TaskID, beta.TaskID
	if second < first {
		first, second = second, first
	}
	statusOf := func(l trellis.TaskList) map[string]trellis.Status {
		out := map[string]trellis.Status{}
		for _, r := range l.Tasks {
			out[r.TaskID] = r.Status
		}
		return out
	}
	l := list("as_of=" + at)
	if got := statusOf(l); len(l.Tasks) != 2 || l.Tasks[0].TaskID != first || got[alpha.TaskID] != trellis.StatusQueued || got[beta.TaskID] != trellis.StatusQueued {
		t.Fatalf("as of then: %+v", l.Tasks)
	}
	if l.Counts["default"][trellis.StatusQueued] != 1 || l.Counts["default"][trellis.StatusDone] != 0 || l.Counts["charts"][trellis.StatusQueued] != 1 {
		t.Errorf("as-of counts %v", l.Counts)
	}
	// Paging through the same moment, and the filters.
	l = list("limit=1&as_of=" + at)
	if len(l.Tasks) != 1 || l.Tasks[0].TaskID != first || l.NextCursor == "" {
		t.Fatalf("as-of page 1: %+v", l)
	}
	l = list("limit=1&as_of=" + at + "&cursor=" + url.QueryEscape(l.NextCursor))
	if len(l.Tasks) != 1 || l.Tasks[0].TaskID != second || l.NextCursor != "" {
		t.Fatalf("as-of page 2: %+v", l)
	}
	l = list("queue=charts&as_of=" + at)
	if len(l.Tasks) != 1 || l.Tasks[0].TaskID != beta.TaskID || len(l.Counts) != 1 {
		t.Fatalf("as of, queue charts: %+v", l)
	}
	// A duration ago: an hour ago the log held nothing.
	l = list("as_of=1h")
	if len(l.Tasks) != 0 || len(l.Counts) != 0 {
		t.Fatalf("as of an hour ago: %+v", l)
	}
	// Now: alpha done, gamma added.
	l = list("as_of=" + url.QueryEscape(time.Now().UTC().Format(time.RFC3339Nano)))
	if got := statusOf(l); len(l.Tasks) != 3 || got[alpha.TaskID] != trellis.StatusDone || got[beta.TaskID] != trellis.StatusQueued || got[gamma.TaskID] != trellis.StatusQueued {
		t.Fatalf("as of now: %+v", l.Tasks)
	}

	// Text: objective words (any case) or a task id prefix.
	l = list("text=ALPHA")
	if got := statusOf(l); len(l.Tasks) != 2 || got[alpha.TaskID] == "" || got[gamma.TaskID] == "" {
		t.Fatalf("text ALPHA: %+v", l.Tasks)
	}
	l = list("text=" + strings.ToLower(beta.TaskID[:24]))
	if len(l.Tasks) != 1 || l.Tasks[0].TaskID != beta.TaskID {
		t.Fatalf("text id prefix: %+v", l.Tasks)
	}
	l = list("text=alpha&status=done&as_of=" + at)
	if len(l.Tasks) != 0 {
		t.Fatalf("as of then, done alpha: %+v", l.Tasks)
	}

	for _, c := range []struct{ query, field, msg string }{
		{"as_of=yesterday", "as_of", "not a time"},
		{"as_of=" + url.QueryEscape(time.Now().Add(time.Hour).Format(time.RFC3339)), "as_of", "in the future"},
		{"text=" + strings.Repeat("a", 257), "text", "at most 256"},
		{"as_of=1h&limit=5000", "limit", "at most 1000"},
		{"as_of=1h&cursor=nope", "cursor", ""},
	} {
		b.do(t, http.MethodGet, "/v1/queue/tasks?"+c.query, nil).expectError(t, http.StatusBadRequest, trellis.CodeInvalid, c.field, c.msg)
	}
}

// TestTaskCheckpointRoute: a finished task's Markdown checkpoint as the
// projection wrote it, as text (never as HTML); none for an unfinished or
// unknown task.
func TestTaskCheckpointRoute(t *testing.T) {
	t.Parallel()
	b := setup(t)
	task := b.addTask(t, trellis.AddTaskRequest{Objective: "render me"})
	b.do(t, http.MethodGet, "/v1/queue/tasks/"+task.TaskID+"/checkpoint", nil).expectError(t, http.StatusNotFound, trellis.CodeNotFound, "", "has no checkpoint")
	b.claim(t, "", "w1")
	b.do(t, http.MethodPost, "/v1/queue/tasks/"+task.TaskID+"/done", map[string]any{"worker": "w1", "what_was_done": "Fixed <script>alert(1)</script> it", "citations": []string{"chunk_1"}}).expect(t, http.StatusOK, nil)
	res := b.do(t, http.MethodGet, "/v1/queue/tasks/"+task.TaskID+"/checkpoint", nil)
	if res.status != http.StatusOK || res.header.Get("Content-Type") != "text/markdown; charset=utf-8" || !strings.Contains(res.header.Get("Content-Security-Policy"), "sandbox") {
		t.Fatalf("checkpoint: %d %v", res.status, res.header)
	}
	body := string(res.body)
	if want := readCheckpoint(t, b, task.TaskID); body != want {
		t.Errorf("route body differs from the checkpoint file:\n%s\n---\n%s", body, want)
	}
	if !strings.Contains(body, "# Checkpoint: "+task.TaskID) || !strings.Contains(body, "chunk_1") {
		t.Errorf("checkpoint:\n%s", body)
	}
	b.do(t, http.MethodGet, "/v1/queue/tasks/nope/checkpoint", nil).expectError(t, http.StatusBadRequest, trellis.CodeInvalid, "id", "not a task id")
	b.do(t, http.MethodGet, "/v1/queue/tasks/"+unknownID()+"/checkpoint", nil).expectError(t, http.StatusNotFound, trellis.CodeNotFound, "", "")
	b.do(t, http.MethodGet, "/v1/queue/tasks/"+task.TaskID+"/checkpoint?format=html", nil).expectError(t, http.StatusBadRequest, trellis.CodeInvalid, "format", "")
}

const dashboardVine = `vine 1.2.0
title: Ship it
---
[release] Ship it (notstarted)
The whole release.
-> build
-> docs
---
[build] Build binaries (complete)
> Use Go 1.26.
---
[docs] Write the docs (notstarted)
-> build
`

// TestVineGraphRoutes: the graphs the log holds, one graph with its
// frontier by id (brief or full), one node with its dependants; they
// follow the log.
func TestVineGraphRoutes(t *testing.T) {
	t.Parallel()
	b := setupVine(t)
	b.file(t, "plan.vine", dashboardVine)
	var info trellis.VineGraphInfo
	b.do(t, http.MethodPost, "/v1/vine/import", trellis.VineFileRequest{File: "plan.vine"}).expect(t, http.StatusOK, &info)

	var list []trellis.VineGraphSummary
	b.do(t, http.MethodGet, "/v1/vine/graphs", nil).expect(t, http.StatusOK, &list)
	if len(list) != 1 || list[0].GraphID != info.GraphID || list[0].Path != "plan.vine" || list[0].Title != "Ship it" || list[0].Progress.Total != 3 || list[0].Progress.Complete != 1 {
		t.Fatalf("graphs = %+v", list)
	}
	var g trellis.VineGraphView
	b.do(t, http.MethodGet, "/v1/vine/graphs/"+info.GraphID, nil).expect(t, http.StatusOK, &g)
	if g.Brief || len(g.Nodes) != 3 || g.Nodes[0].ID != "release" || g.Nodes[0].Description != "The whole release." || len(g.Nodes[1].Decisions) != 1 ||
		strings.Join(g.Frontier.ReadyToStart, ",") != "docs" || len(g.Frontier.Blocked) != 0 {
		t.Fatalf("graph = %+v", g)
	}
	b.do(t, http.MethodGet, "/v1/vine/graphs/"+info.GraphID+"?brief=true", nil).expect(t, http.StatusOK, &g)
	if !g.Brief || g.Nodes[0].Description != "" || len(g.Nodes[1].Decisions) != 0 || len(g.Nodes[0].Dependencies) != 2 {
		t.Fatalf("brief graph = %+v", g)
	}
	var n trellis.VineNodeView
	b.do(t, http.MethodGet, "/v1/vine/graphs/"+info.GraphID+"/nodes/build", nil).expect(t, http.StatusOK, &n)
	if n.Node.ID != "build" || n.Node.Status != vine.StatusComplete || strings.Join(n.Dependants, ",") != "release,docs" || n.Frontier != "" {
		t.Fatalf("node = %+v", n)
	}
	b.do(t, http.MethodGet, "/v1/vine/graphs/"+info.GraphID+"/nodes/docs", nil).expect(t, http.StatusOK, &n)
	if n.Frontier != "ready_to_start" {
		t.Fatalf("docs frontier %q", n.Frontier)
	}

	// A change in the log shows at once.
	b.do(t, http.MethodPost, "/v1/vine/write", trellis.VineWriteRequest{File: "plan.vine", Operations: []vine.Op{{Op: "set_status", ID: "docs", Status: vine.StatusBlocked}}}).expect(t, http.StatusOK, nil)
	b.do(t, http.MethodGet, "/v1/vine/graphs/"+info.GraphID, nil).expect(t, http.StatusOK, &g)
	if g.Nodes[2].Status != vine.StatusBlocked || strings.Join(g.Frontier.Blocked, ",") != "docs" || len(g.Frontier.ReadyToStart) != 0 {
		t.Fatalf("after set_status: %+v", g)
	}

	other := "g" + strings.Repeat("0", 20)
	for _, c := range []struct {
		path   string
		status int
		code   trellis.Code
		field  string
	}{
		{"/v1/vine/graphs/nope", http.StatusBadRequest, trellis.CodeInvalid, "id"},
		{"/v1/vine/graphs/" + other, http.StatusNotFound, trellis.CodeNotFound, ""},
		{"/v1/vine/graphs/" + info.GraphID + "?brief=maybe", http.StatusBadRequest, trellis.CodeInvalid, "brief"},
		{"/v1/vine/graphs/" + info.GraphID + "/nodes/ghost", http.StatusNotFound, trellis.CodeNotFound, ""},
		{"/v1/vine/graphs/" + info.GraphID + "/nodes/a%20b", http.StatusBadRequest, trellis.CodeInvalid, "node"},
		{"/v1/vine/graphs/" + other + "/nodes/build", http.StatusNotFound, trellis.CodeNotFound, ""},
		{"/v1/vine/graphs?all=1", http.StatusBadRequest, trellis.CodeInvalid, "all"},
	} {
		b.do(t, http.MethodGet, c.path, nil).expectError(t, c.status, c.code, c.field, "")
	}
}
