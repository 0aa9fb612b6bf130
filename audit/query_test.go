package audit_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/audit"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/internal/servicetest"
	"github.com/trellis/trellis/taskqueue"
)

func auditAll(t *testing.T, svc trellis.AuditService, q trellis.AuditQuery) []trellis.AuditEvent {
	t.Helper()
	var out []trellis.AuditEvent
	if err := audit.All(context.Background(), svc, q, func(ev trellis.AuditEvent) error {
		out = append(out, ev)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestAuditQueryAcrossAggregates: a queue's events across its tasks and
// controls, by actor, by type, within a time window, page by page, and a
// whole stream; every page in log order with stored times and the chain.
func TestAuditQueryAcrossAggregates(t *testing.T) {
	t.Parallel()
	svc, b := servicetest.Start(t)
	ctx := context.Background()
	first := servicetest.RunTask(t, svc, "jobs", "w1")
	servicetest.RunTask(t, svc, "other", "w1")
	time.Sleep(5 * time.Millisecond)
	mid := time.Now()
	time.Sleep(5 * time.Millisecond)
	second := servicetest.RunTask(t, svc, "jobs", "w2")
	if _, err := svc.Control(ctx, trellis.ControlRequest{Queue: "jobs", Action: "pause", Actor: "ops", Reason: "audit"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.TaskCreate(ctx, trellis.AgentTaskCreateRequest{Name: "fix-auth", Objectives: []string{"Fix it"}}); err != nil {
		t.Fatal(err)
	}

	all := auditAll(t, svc, trellis.AuditQuery{Queue: "jobs"})
	if len(all) != 7 || all[0].ID != first[0].ID || all[6].Type != taskqueue.Paused || all[6].Actor != "ops" {
		t.Fatalf("queue jobs: %d events, %+v ... %+v", len(all), all[0], all[len(all)-1])
	}
	for i, ev := range all {
		if i > 0 && ev.Seq <= all[i-1].Seq {
			t.Errorf("out of order at %d", i)
		}
		if ev.Stored.IsZero() || ev.Hash == "" || ev.Stream != events.StreamQueue || !strings.HasPrefix(ev.Subject, "trellis.queue.jobs.") {
			t.Errorf("event %d: %+v", i, ev)
		}
	}
	if all[1].Prev != all[0].Hash {
		t.Errorf("the claim does not chain to the add: prev %s, hash %s", all[1].Prev, all[0].Hash)
	}
	if got := auditAll(t, svc, trellis.AuditQuery{Queue: "jobs", Actor: "w2"}); len(got) != 2 || got[0].Type != taskqueue.Claimed {
		t.Errorf("by actor: %+v", got)
	}
	if got := auditAll(t, svc, trellis.AuditQuery{Stream: "queue", Type: taskqueue.Completed}); len(got) != 3 {
		t.Errorf("completions in the queue stream: %d", len(got))
	}
	if got := auditAll(t, svc, trellis.AuditQuery{Queue: "jobs", Since: mid.Format(time.RFC3339Nano)}); len(got) != 4 || got[0].ID != second[0].ID {
		t.Errorf("since: %d events", len(got))
	}
	if got := auditAll(t, svc, trellis.AuditQuery{Queue: "jobs", Until: mid.Format(time.RFC3339Nano)}); len(got) != 3 || got[2].ID != first[2].ID {
		t.Errorf("until: %d events", len(got))
	}
	if got := auditAll(t, svc, trellis.AuditQuery{Queue: "jobs", Since: "1h"}); len(got) != 7 {
		t.Errorf("since 1h ago: %d events", len(got))
	}
	if got := auditAll(t, svc, trellis.AuditQuery{Queue: "jobs", Since: time.Now().Add(time.Hour).Format(time.RFC3339)}); len(got) != 0 {
		t.Errorf("a window after everything: %d events", len(got))
	}
	if got := auditAll(t, svc, trellis.AuditQuery{Stream: events.StreamTasks}); len(got) != 1 || got[0].Type != events.AgentTaskCreated {
		t.Errorf("tasks stream: %+v", got)
	}

	// Page by page: the pages add up to the whole, each ends with a
	// cursor until the last.
	var paged []trellis.AuditEvent
	q := trellis.AuditQuery{Queue: "jobs", Limit: 2}
	pages := 0
	for {
		page, err := svc.AuditQuery(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if len(page.Events) > 2 {
			t.Fatalf("page of %d events, limit 2", len(page.Events))
		}
		paged = append(paged, page.Events...)
		if page.NextCursor == "" {
			break
		}
		q.Cursor = page.NextCursor
	}
	if pages != 4 || len(paged) != 7 || paged[6].ID != all[6].ID {
		t.Fatalf("%d pages, %d events", pages, len(paged))
	}
	// A query ends where the log ended when it began: events appended
	// meanwhile wait for the next query.
	page, err := svc.AuditQuery(ctx, trellis.AuditQuery{Queue: "jobs", Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Add(ctx, trellis.AddTaskRequest{Queue: "jobs", Objective: "late"}); err != nil {
		t.Fatal(err)
	}
	if got := auditAll(t, svc, trellis.AuditQuery{Queue: "jobs", Limit: 1, Cursor: page.NextCursor}); len(got) != 6 {
		t.Errorf("rest of a query begun before an append: %d events; want 6", len(got))
	}

	// A payload too large for a page is left out, with its size.
	big := events.NewID(time.Now())
	e, err := events.NewEnvelope(time.Now(), taskqueue.Added, big, "", 1, map[string]string{"objective": strings.Repeat("x", trellis.MaxAuditPayloadBytes+10)})
	if err != nil {
		t.Fatal(err)
	}
	rawPublish(t, b, taskqueue.Subject("bulky", big, taskqueue.Added), envelopeJSON(t, e))
	got := auditAll(t, svc, trellis.AuditQuery{Queue: "bulky"})
	if len(got) != 1 || !got[0].PayloadOmitted || got[0].PayloadBytes <= trellis.MaxAuditPayloadBytes || string(got[0].Payload) != "null" {
		t.Fatalf("bulky payload: %+v", got)
	}
}

// TestAuditQueryBadInput: every malformed query is refused with the field
// at fault; unknown queues and graphs are not found.
func TestAuditQueryBadInput(t *testing.T) {
	t.Parallel()
	svc, _ := servicetest.Start(t)
	ctx := context.Background()
	servicetest.RunTask(t, svc, "jobs", "w1")
	for _, tc := range []struct {
		name  string
		q     trellis.AuditQuery
		code  trellis.Code
		field string
	}{
		{"no selector", trellis.AuditQuery{}, trellis.CodeInvalid, "queue"},
		{"two selectors", trellis.AuditQuery{Queue: "jobs", Stream: "queue"}, trellis.CodeInvalid, "queue"},
		{"bad queue name", trellis.AuditQuery{Queue: "no.dots"}, trellis.CodeInvalid, "queue"},
		{"unknown queue", trellis.AuditQuery{Queue: "nosuch"}, trellis.CodeNotFound, ""},
		{"bad graph id", trellis.AuditQuery{Graph: "plan.vine"}, trellis.CodeInvalid, "graph"},
		{"bad graph id shape", trellis.AuditQuery{Graph: "gXYZ"}, trellis.CodeInvalid, "graph"},
		{"unknown graph", trellis.AuditQuery{Graph: "g0123456789abcdef0123"}, trellis.CodeNotFound, ""},
		{"unknown stream", trellis.AuditQuery{Stream: "TRELLIS_NOPE"}, trellis.CodeInvalid, "stream"},
		{"blob stream", trellis.AuditQuery{Stream: "OBJ_TRELLIS_BLOBS"}, trellis.CodeInvalid, "stream"},
		{"bad since", trellis.AuditQuery{Queue: "jobs", Since: "yesterday"}, trellis.CodeInvalid, "since"},
		{"bad until", trellis.AuditQuery{Queue: "jobs", Until: "2026-13-45"}, trellis.CodeInvalid, "until"},
		{"negative duration", trellis.AuditQuery{Queue: "jobs", Since: "-5m"}, trellis.CodeInvalid, "since"},
		{"until before since", trellis.AuditQuery{Queue: "jobs", Since: "2026-01-02T10:00:00Z", Until: "2026-01-02T09:00:00Z"}, trellis.CodeInvalid, "until"},
		{"type with a dot", trellis.AuditQuery{Queue: "jobs", Type: "a.b"}, trellis.CodeInvalid, "type"},
		{"negative limit", trellis.AuditQuery{Queue: "jobs", Limit: -1}, trellis.CodeInvalid, "limit"},
		{"huge limit", trellis.AuditQuery{Queue: "jobs", Limit: trellis.MaxAuditLimit + 1}, trellis.CodeInvalid, "limit"},
		{"bad cursor", trellis.AuditQuery{Queue: "jobs", Cursor: "bm90IGEgY3Vyc29y"}, trellis.CodeInvalid, "cursor"},
		{"actor not UTF-8", trellis.AuditQuery{Queue: "jobs", Actor: "\xff"}, trellis.CodeInvalid, "actor"},
	} {
		_, err := svc.AuditQuery(ctx, tc.q)
		if trellis.ErrorCode(err) != tc.code || (tc.field != "" && trellis.AsError(err).Field != tc.field) {
			t.Errorf("%s: %v; want %s on %q", tc.name, err, tc.code, tc.field)
		}
	}
}

// An actor filter naming a worker pool finds the events of its slots
// (wB finds wB/2's claim and completion), not those of another worker
// whose name merely starts the same (wBx/0).
func TestAuditQueryActorMatchesSlots(t *testing.T) {
	t.Parallel()
	svc, _ := servicetest.Start(t)
	servicetest.RunTask(t, svc, "jobs", "wB/2")
	servicetest.RunTask(t, svc, "jobs", "wBx/0")
	got := auditAll(t, svc, trellis.AuditQuery{Queue: "jobs", Actor: "wB"})
	if len(got) != 2 {
		t.Fatalf("actor wB: %d events %+v; want the claim and completion of wB/2", len(got), got)
	}
	for _, ev := range got {
		if ev.Actor != "wB/2" {
			t.Errorf("actor wB matched %q", ev.Actor)
		}
	}
	if got := auditAll(t, svc, trellis.AuditQuery{Queue: "jobs", Actor: "wB/2"}); len(got) != 2 {
		t.Errorf("actor wB/2: %d events; want 2", len(got))
	}
}
