package httpapi_test

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/handlers"
	"github.com/trellis/trellis/handlers/httpapi"
)

// TestRoutingErrors: a known path with another method is 405 with Allow,
// an unknown path is 404, both in the error shape and appending nothing.
func TestRoutingErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := unknownID()
	cases := []struct {
		method, path string
		status       int
		code         trellis.Code
		allow        string
	}{
		{http.MethodGet, "/v1/queue/next", http.StatusMethodNotAllowed, trellis.CodeInvalid, "POST"},
		{http.MethodDelete, "/v1/queue/tasks/" + id, http.StatusMethodNotAllowed, trellis.CodeInvalid, "GET, HEAD"},
		{http.MethodPut, "/v1/queue/tasks", http.StatusMethodNotAllowed, trellis.CodeInvalid, "GET, HEAD, POST"},
		{http.MethodGet, "/v1/queue/tasks/" + id + "/done", http.StatusMethodNotAllowed, trellis.CodeInvalid, "POST"},
		{http.MethodPost, "/v1/queue/export", http.StatusMethodNotAllowed, trellis.CodeInvalid, "GET, HEAD"},
		{http.MethodGet, "/v1/replay", http.StatusMethodNotAllowed, trellis.CodeInvalid, "POST"},
		{http.MethodPost, "/healthz", http.StatusMethodNotAllowed, trellis.CodeInvalid, "GET, HEAD"},
		{http.MethodGet, "/", http.StatusNotFound, trellis.CodeNotFound, ""},
		{http.MethodGet, "/v1/queue", http.StatusNotFound, trellis.CodeNotFound, ""},
		{http.MethodPost, "/v1/queue/tasks/" + id + "/retry", http.StatusNotFound, trellis.CodeNotFound, ""},
		{http.MethodGet, "/v2/queue/tasks", http.StatusNotFound, trellis.CodeNotFound, ""},
	}
	for _, c := range cases {
		before := b.lastSeq(t)
		res := b.do(t, c.method, c.path, nil)
		if res.status != c.status {
			t.Errorf("%s %s: status %d, want %d; body %s", c.method, c.path, res.status, c.status, res.body)
			continue
		}
		if e := res.apiError(t); e.Code != c.code {
			t.Errorf("%s %s: code %q, want %q", c.method, c.path, e.Code, c.code)
		}
		if got := res.header.Get("Allow"); got != c.allow {
			t.Errorf("%s %s: Allow %q, want %q", c.method, c.path, got, c.allow)
		}
		if after := b.lastSeq(t); after != before {
			t.Errorf("%s %s: event log changed", c.method, c.path)
		}
	}
}

// TestHealthz: GET /healthz answers {"status":"ok"}.
func TestHealthz(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var h httpapi.Health
	b.do(t, http.MethodGet, "/healthz", nil).expect(t, http.StatusOK, &h)
	if h.Status != "ok" {
		t.Fatalf("healthz = %+v", h)
	}
	if res := b.do(t, http.MethodHead, "/healthz", nil); res.status != http.StatusOK {
		t.Fatalf("HEAD /healthz: %d", res.status)
	}
}

// TestMountsAndBodyLimit: mounted handlers are served as they are, and a
// configured body limit replaces the 1 MiB default, for every route and
// mount alike.
func TestMountsAndBodyLimit(t *testing.T) {
	t.Parallel()
	b := setup(t, httpapi.Config{
		MaxBodyBytes: 64,
		Mounts: map[string]http.Handler{
			"/metrics": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/plain; version=0.0.4")
				_, _ = io.WriteString(w, "trellis_up 1\n")
			}),
			"/mcp": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				w.WriteHeader(http.StatusAccepted)
				_, _ = io.WriteString(w, r.Method+" "+strings.Repeat("x", len(body)/10))
			}),
		},
	})
	res := b.do(t, http.MethodGet, "/metrics", nil)
	if res.status != http.StatusOK || string(res.body) != "trellis_up 1\n" || !strings.HasPrefix(res.header.Get("Content-Type"), "text/plain") {
		t.Fatalf("/metrics: %d %q %q", res.status, res.header.Get("Content-Type"), res.body)
	}
	res = b.do(t, http.MethodPost, "/mcp", strings.Repeat("y", 20))
	if res.status != http.StatusAccepted || string(res.body) != "POST xx" {
		t.Fatalf("/mcp: %d %q", res.status, res.body)
	}
	// Mounts have the same body cap as every route (issue 11: /mcp had none).
	res = b.do(t, http.MethodPost, "/mcp", strings.Repeat("y", 2000))
	if res.status != http.StatusRequestEntityTooLarge || res.apiError(t).Field != "body" {
		t.Fatalf("/mcp with 2000 bytes: %d %q", res.status, res.body)
	}

	before := b.lastSeq(t)
	res = b.do(t, http.MethodPost, "/v1/queue/tasks", `{"objective":"`+strings.Repeat("a", 60)+`"}`)
	if res.status != http.StatusRequestEntityTooLarge {
		t.Fatalf("65-byte body: %d %s", res.status, res.body)
	}
	if e := res.apiError(t); e.Code != trellis.CodeInvalid || e.Field != "body" || !strings.Contains(e.Message, "64 bytes") {
		t.Fatalf("65-byte body: %+v", e)
	}
	if b.lastSeq(t) != before {
		t.Fatal("an oversized body appended an event")
	}
	b.do(t, http.MethodPost, "/v1/queue/tasks", `{"objective":"fits"}`).expect(t, http.StatusCreated, nil)
}

// TestReplay: POST /v1/replay rebuilds every projection from the log; the
// projections keep following the log after the request has ended.
func TestReplay(t *testing.T) {
	t.Parallel()
	b := setup(t)
	task := b.addTask(t, trellis.AddTaskRequest{Objective: "before replay"})
	b.claim(t, "", "w1")
	b.do(t, http.MethodPost, "/v1/queue/tasks/"+task.TaskID+"/done", `{"worker":"w1","what_was_done":"x"}`).expect(t, http.StatusOK, nil)
	if err := b.svc.CatchUp(b.ctx); err != nil {
		t.Fatal(err)
	}
	cpPath := filepath.Join(b.dataDir, "checkpoints", task.TaskID+".md")
	if err := os.Remove(cpPath); err != nil {
		t.Fatal(err)
	}

	last := b.lastSeq(t)
	for _, body := range []any{nil, `{}`, " {}\n"} {
		var res handlers.ReplayResult
		b.do(t, http.MethodPost, "/v1/replay", body).expect(t, http.StatusOK, &res)
		if len(res.Projections) != 6 {
			t.Fatalf("replay = %+v", res)
		}
		for _, p := range res.Projections {
			if p.Stream != "TRELLIS_QUEUE" {
				continue // the other domains' projections
			}
			if p.LastSeq != last || p.Stream != "TRELLIS_QUEUE" || (p.Name != "board" && p.Name != "checkpoints") {
				t.Errorf("replayed projection %+v; want last_seq %d", p, last)
			}
		}
	}
	if _, err := os.Stat(cpPath); err != nil {
		t.Fatalf("replay did not rewrite the checkpoint: %v", err)
	}
	if b.lastSeq(t) != last {
		t.Fatal("replay appended events")
	}

	// The rebuilt projections are live: a task added now is listed.
	later := b.addTask(t, trellis.AddTaskRequest{Objective: "after replay"})
	var list trellis.TaskList
	b.do(t, http.MethodGet, "/v1/queue/tasks", nil).expect(t, http.StatusOK, &list)
	if len(list.Tasks) != 2 || list.Tasks[1].TaskID != later.TaskID {
		t.Fatalf("list after replay = %+v", list)
	}
}

// TestExportEmpty: exporting an empty log is 200 with an empty body.
func TestExportEmpty(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res := b.do(t, http.MethodGet, "/v1/queue/export", nil)
	if res.status != http.StatusOK || len(res.body) != 0 || res.header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("empty export: %d %q %q", res.status, res.header.Get("Content-Type"), res.body)
	}
}
