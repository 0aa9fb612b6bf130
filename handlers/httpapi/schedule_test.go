package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/trellis/trellis"
)

// TestSchedulingOverHTTP covers the scheduling fields of an add, cancel,
// the flow-control actions and schedules over HTTP, with their bad input.
func TestSchedulingOverHTTP(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var later trellis.Task
	b.do(t, http.MethodPost, "/v1/queue/tasks", map[string]any{"queue": "h", "objective": "later", "delay": "1h", "priority": 1,
		"unique_key": "digest", "concurrency_key": "repo-a"}).expect(t, http.StatusCreated, &later)
	if later.Status != trellis.StatusScheduled || later.Priority != 1 || later.UniqueKey != "digest" || later.ConcurrencyKey != "repo-a" {
		t.Fatalf("added = %+v", later)
	}
	var dup trellis.Task
	b.do(t, http.MethodPost, "/v1/queue/tasks", map[string]any{"queue": "h", "objective": "again", "unique_key": "digest"}).expect(t, http.StatusCreated, &dup)
	if !dup.Duplicate || dup.TaskID != later.TaskID {
		t.Fatalf("duplicate add = %+v", dup)
	}
	var after trellis.Task
	b.do(t, http.MethodPost, "/v1/queue/tasks", map[string]any{"queue": "h", "objective": "review", "after": []string{later.TaskID}}).expect(t, http.StatusCreated, &after)
	if after.Status != trellis.StatusWaiting || after.WaitingFor[0] != later.TaskID {
		t.Fatalf("dependant = %+v", after)
	}
	var cancelled trellis.Task
	b.do(t, http.MethodPost, "/v1/queue/tasks/"+later.TaskID+"/cancel", map[string]any{"reason": "not today"}).expect(t, http.StatusOK, &cancelled)
	if cancelled.Status != trellis.StatusCancelled || cancelled.Cancellation.Reason != "not today" {
		t.Fatalf("cancelled = %+v", cancelled)
	}
	var c trellis.QueueControls
	b.do(t, http.MethodPost, "/v1/queues/h/controls", map[string]any{"action": "rate", "rate": "10/s", "burst": 3}).expect(t, http.StatusOK, &c)
	b.do(t, http.MethodPost, "/v1/queues/h/controls", map[string]any{"action": "per_key", "per_key": 1}).expect(t, http.StatusOK, &c)
	if c.Rate != "10/s" || c.Burst != 3 || c.PerKey != 1 {
		t.Fatalf("controls = %+v", c)
	}
	var s trellis.Schedule
	b.do(t, http.MethodPost, "/v1/schedules", map[string]any{"name": "nightly", "queue": "h", "cron": "0 2 * * *", "objective": "nightly export"}).expect(t, http.StatusCreated, &s)
	if s.Name != "nightly" || s.NextTick == nil || s.NextTick.Hour() != 2 {
		t.Fatalf("schedule = %+v", s)
	}
	var list struct {
		Schedules []trellis.Schedule `json:"schedules"`
	}
	b.do(t, http.MethodGet, "/v1/schedules", nil).expect(t, http.StatusOK, &list)
	if len(list.Schedules) != 1 || list.Schedules[0].Task.Objective != "nightly export" {
		t.Fatalf("schedules = %+v", list)
	}

	before := b.lastSeq(t)
	for _, bad := range []struct {
		method, path, body string
		status             int
		field              string
	}{
		{http.MethodPost, "/v1/queue/tasks", `{"objective":"x","delay":"5 minutes"}`, http.StatusBadRequest, "delay"},
		{http.MethodPost, "/v1/queue/tasks", `{"objective":"x","priority":0.5}`, http.StatusBadRequest, "priority"},
		{http.MethodPost, "/v1/queue/tasks", `{"objective":"x","unique_for":"1h"}`, http.StatusBadRequest, "unique_for"},
		{http.MethodPost, "/v1/queue/tasks", `{"objective":"x","after":"` + later.TaskID + `"}`, http.StatusBadRequest, "after"},
		{http.MethodPost, "/v1/queue/tasks", `{"objective":"x","after":["` + later.TaskID + `"]}`, http.StatusConflict, "after"},
		{http.MethodPost, "/v1/queue/tasks/" + later.TaskID + "/cancel", `{"reason":1}`, http.StatusBadRequest, "reason"},
		{http.MethodPost, "/v1/queue/tasks/" + unknownID() + "/cancel", ``, http.StatusNotFound, ""},
		{http.MethodPost, "/v1/queues/h/controls", `{"action":"rate","rate":"0/s"}`, http.StatusBadRequest, "rate"},
		{http.MethodPost, "/v1/queues/h/controls", `{"action":"rate","rate":"fast"}`, http.StatusBadRequest, "rate"},
		{http.MethodPost, "/v1/queues/h/controls", `{"action":"per_key","per_key":-2}`, http.StatusBadRequest, "per_key"},
		{http.MethodPost, "/v1/schedules", `{"name":"nightly","every":"1h","objective":"x"}`, http.StatusConflict, "name"},
		{http.MethodPost, "/v1/schedules", `{"name":"x","cron":"every day","objective":"x"}`, http.StatusBadRequest, "cron"},
		{http.MethodPost, "/v1/schedules", `{"name":"x","every":"1h","objective":"x","after":["` + later.TaskID + `"]}`, http.StatusBadRequest, "after"},
		{http.MethodDelete, "/v1/schedules/nope", ``, http.StatusNotFound, ""},
	} {
		res := b.do(t, bad.method, bad.path, bad.body)
		if res.status != bad.status {
			t.Errorf("%s %s %s: %d %s; want %d", bad.method, bad.path, bad.body, res.status, res.body, bad.status)
			continue
		}
		if e := res.apiError(t); e.Field != bad.field {
			t.Errorf("%s %s %s: field %q; want %q", bad.method, bad.path, bad.body, e.Field, bad.field)
		}
	}
	if b.lastSeq(t) != before {
		t.Fatal("refused requests changed the log")
	}
	var removed trellis.Schedule
	b.do(t, http.MethodDelete, "/v1/schedules/nightly", nil).expect(t, http.StatusOK, &removed)
	if !removed.Removed {
		t.Fatalf("removed = %+v", removed)
	}
}
