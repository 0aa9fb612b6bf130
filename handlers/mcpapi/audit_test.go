package mcpapi_test

import (
	"strings"
	"testing"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/handlers/mcpapi"
)

// TestAuditQueryTool: audit_query pages through a queue's events with
// structured content matching its output schema; bad arguments are tool
// errors naming the argument.
func TestAuditQueryTool(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	cs := b.connect(t, ctx)
	schemas := outputSchemas(t, ctx, cs)
	if schemas[mcpapi.ToolAuditQuery] == nil {
		t.Fatal("audit_query has no output schema")
	}
	for i := 0; i < 3; i++ {
		callTask(t, ctx, cs, "queue_add", map[string]any{"objective": "audited", "queue": "jobs"})
	}
	callTask(t, ctx, cs, "queue_next", map[string]any{"queue": "jobs", "worker": "w7"})
	var page trellis.AuditPage
	res := callOK(t, ctx, cs, schemas, mcpapi.ToolAuditQuery, map[string]any{"queue": "jobs", "limit": 3}, &page)
	if len(page.Events) != 3 || page.NextCursor == "" || !strings.Contains(text(res), "cursor") {
		t.Fatalf("first page: %+v\n%s", page, text(res))
	}
	var rest trellis.AuditPage
	callOK(t, ctx, cs, schemas, mcpapi.ToolAuditQuery, map[string]any{"queue": "jobs", "limit": 3, "cursor": page.NextCursor}, &rest)
	if len(rest.Events) != 1 || rest.Events[0].Actor != "w7" || rest.NextCursor != "" {
		t.Fatalf("second page: %+v", rest)
	}
	for args, want := range map[string]map[string]any{
		"invalid: queue":  {},
		"invalid: until":  {"queue": "jobs", "since": "2026-01-02", "until": "2026-01-01"},
		"invalid: stream": {"stream": "nope"},
		"not_found":       {"queue": "nosuch"},
		"invalid: since":  {"queue": "jobs", "since": "someday"},
	} {
		if msg := callErr(t, ctx, cs, mcpapi.ToolAuditQuery, want); !strings.HasPrefix(msg, args) {
			t.Errorf("audit_query(%v): %q; want prefix %q", want, msg, args)
		}
	}
}
