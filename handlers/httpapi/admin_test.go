package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/trellis/trellis"
)

// TestRetryAndControls covers queue retry and the cluster-wide controls
// over HTTP, with their bad input.
func TestRetryAndControls(t *testing.T) {
	t.Parallel()
	b := setup(t)
	task := b.addTask(t, trellis.AddTaskRequest{Queue: "adm", Objective: "fails"})
	b.claim(t, "adm", "w")
	b.do(t, http.MethodPost, "/v1/queue/tasks/"+task.TaskID+"/fail", map[string]any{"worker": "w", "error": "x"}).expect(t, http.StatusOK, nil)
	var retried trellis.Task
	b.do(t, http.MethodPost, "/v1/queue/tasks/"+task.TaskID+"/retry", nil).expect(t, http.StatusOK, &retried)
	if retried.Status != trellis.StatusQueued || retried.Attempts != 0 {
		t.Fatalf("retried = %+v", retried)
	}
	// Retrying a queued task is a conflict; an unknown id is not found.
	before := b.lastSeq(t)
	if e := b.do(t, http.MethodPost, "/v1/queue/tasks/"+task.TaskID+"/retry", `{}`); e.status != http.StatusConflict {
		t.Fatalf("retry of a queued task: %d %s", e.status, e.body)
	}
	if e := b.do(t, http.MethodPost, "/v1/queue/tasks/"+unknownID()+"/retry", nil); e.status != http.StatusNotFound {
		t.Fatalf("retry of an unknown task: %d %s", e.status, e.body)
	}
	if b.lastSeq(t) != before {
		t.Fatal("refused retries changed the log")
	}

	var c trellis.QueueControls
	b.do(t, http.MethodPost, "/v1/queues/adm/controls", map[string]any{"action": "pause", "reason": "deploy"}).expect(t, http.StatusOK, &c)
	if !c.Paused {
		t.Fatalf("after pause: %+v", c)
	}
	if got := b.claim(t, "adm", "w"); got != nil {
		t.Fatalf("claimed %s from a paused queue", got.TaskID)
	}
	b.do(t, http.MethodPost, "/v1/queues/adm/controls", map[string]any{"action": "limit", "max_in_flight": 5}).expect(t, http.StatusOK, &c)
	b.do(t, http.MethodPost, "/v1/queues/adm/controls", map[string]any{"action": "resume"}).expect(t, http.StatusOK, &c)
	b.do(t, http.MethodGet, "/v1/queues/adm/controls", nil).expect(t, http.StatusOK, &c)
	if c.Paused || c.MaxInFlight != 5 {
		t.Fatalf("controls = %+v", c)
	}
	mid := b.lastSeq(t)
	for _, bad := range []struct {
		path, body, field string
	}{
		{"/v1/queues/adm/controls", `{"action":"explode"}`, "action"},
		{"/v1/queues/adm/controls", `{"action":"limit","max_in_flight":-1}`, "max_in_flight"},
		{"/v1/queues/adm/controls", `{"action":"pause","queue":"other"}`, "queue"},
		{"/v1/queues/bad.queue/controls", `{"action":"pause"}`, "queue"},
		{"/v1/queues/adm/controls", `{"action":"pause","color":"red"}`, "color"},
	} {
		res := b.do(t, http.MethodPost, bad.path, bad.body)
		if res.status != http.StatusBadRequest {
			t.Fatalf("%s %s: %d %s", bad.path, bad.body, res.status, res.body)
		}
		if e := res.apiError(t); e.Code != trellis.CodeInvalid || e.Field != bad.field {
			t.Fatalf("%s %s: %+v; want invalid on %s", bad.path, bad.body, e, bad.field)
		}
	}
	if b.lastSeq(t) != mid {
		t.Fatal("bad control requests changed the log")
	}
}
