package natsapi_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/audit"
)

// TestAuditQueryOverNATS: an audit query page by page over NATS gives the
// service's events; bad queries keep their code and field.
func TestAuditQueryOverNATS(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	for i := 0; i < 5; i++ {
		if _, err := b.client.Add(ctx, trellis.AddTaskRequest{Queue: "jobs", Objective: "audited"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.client.Next(ctx, trellis.NextRequest{Queue: "jobs", Worker: "w7"}); err != nil {
		t.Fatal(err)
	}
	collect := func(svc trellis.AuditService, q trellis.AuditQuery) []trellis.AuditEvent {
		var out []trellis.AuditEvent
		if err := audit.All(ctx, svc, q, func(ev trellis.AuditEvent) error { out = append(out, ev); return nil }); err != nil {
			t.Fatal(err)
		}
		return out
	}
	remote := collect(b.client, trellis.AuditQuery{Queue: "jobs", Limit: 2})
	local := collect(b.svc, trellis.AuditQuery{Queue: "jobs"})
	if len(remote) != 6 || !reflect.DeepEqual(remote, local) {
		t.Fatalf("over NATS: %d events, equal to local: %v", len(remote), reflect.DeepEqual(remote, local))
	}
	if got := collect(b.client, trellis.AuditQuery{Queue: "jobs", Actor: "w7"}); len(got) != 1 || got[0].Type != "claimed" {
		t.Fatalf("by actor: %+v", got)
	}
	_, err := b.client.AuditQuery(ctx, trellis.AuditQuery{Queue: "jobs", Since: "2026-01-02T10:00:00Z", Until: "2026-01-01"})
	if trellis.ErrorCode(err) != trellis.CodeInvalid || trellis.AsError(err).Field != "until" {
		t.Fatalf("until before since: %v", err)
	}
	if _, err := b.client.AuditQuery(ctx, trellis.AuditQuery{Queue: "nosuch"}); trellis.ErrorCode(err) != trellis.CodeNotFound {
		t.Fatalf("unknown queue: %v", err)
	}
}
