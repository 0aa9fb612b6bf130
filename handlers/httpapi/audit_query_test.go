package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/trellis/trellis"
)

// TestAuditQueryRoute: GET /v1/audit answers a page (json) or streams
// every event (jsonl); bad queries name their field.
func TestAuditQueryRoute(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for i := 0; i < 3; i++ {
		b.addTask(t, trellis.AddTaskRequest{Queue: "jobs", Objective: "audited"})
	}
	b.claim(t, "jobs", "w7")

	var page trellis.AuditPage
	b.do(t, "GET", "/v1/audit?queue=jobs&limit=2", nil).expect(t, http.StatusOK, &page)
	if len(page.Events) != 2 || page.NextCursor == "" {
		t.Fatalf("first page: %+v", page)
	}
	var rest trellis.AuditPage
	b.do(t, "GET", "/v1/audit?queue=jobs&limit=2&cursor="+url.QueryEscape(page.NextCursor), nil).expect(t, http.StatusOK, &rest)
	if len(rest.Events) != 2 || rest.NextCursor != "" || rest.Events[1].Actor != "w7" {
		t.Fatalf("second page: %+v", rest)
	}

	res := b.do(t, "GET", "/v1/audit?stream=queue&format=jsonl&type=added", nil)
	if res.status != http.StatusOK || res.header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("jsonl: %d %s", res.status, res.header.Get("Content-Type"))
	}
	lines := strings.Split(strings.TrimSpace(string(res.body)), "\n")
	if len(lines) != 3 {
		t.Fatalf("jsonl: %d lines:\n%s", len(lines), res.body)
	}
	for _, l := range lines {
		var ev trellis.AuditEvent
		if err := json.Unmarshal([]byte(l), &ev); err != nil || ev.Type != "added" || ev.Hash == "" {
			t.Fatalf("jsonl line %q: %v", l, err)
		}
	}

	for _, tc := range []struct {
		query  string
		status int
		code   trellis.Code
		field  string
	}{
		{"", 400, trellis.CodeInvalid, "queue"},
		{"queue=jobs&graph=g0123456789abcdef0123", 400, trellis.CodeInvalid, "queue"},
		{"queue=nosuch", 404, trellis.CodeNotFound, ""},
		{"stream=nope", 400, trellis.CodeInvalid, "stream"},
		{"queue=jobs&since=2026-01-02&until=2026-01-01", 400, trellis.CodeInvalid, "until"},
		{"queue=jobs&since=soon", 400, trellis.CodeInvalid, "since"},
		{"queue=jobs&limit=x", 400, trellis.CodeInvalid, "limit"},
		{"queue=jobs&format=xml", 400, trellis.CodeInvalid, "format"},
		{"queue=jobs&format=jsonl&limit=5", 400, trellis.CodeInvalid, "limit"},
		{"queue=jobs&format=jsonl&cursor=x", 400, trellis.CodeInvalid, "cursor"},
		{"queue=jobs&cursor=garbage", 400, trellis.CodeInvalid, "cursor"},
		{"queue=jobs&worker=w7", 400, trellis.CodeInvalid, "worker"},
	} {
		b.do(t, "GET", "/v1/audit?"+tc.query, nil).expectError(t, tc.status, tc.code, tc.field, "")
	}
}
