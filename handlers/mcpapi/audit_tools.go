package mcpapi

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trellis/trellis"
)

// ToolAuditQuery answers audit queries across aggregates.
const ToolAuditQuery = "audit_query"

// auditInstructions is appended to the server instructions when the
// service answers audit queries.
const auditInstructions = `Audit: audit_query {queue | graph | stream, since, until, actor, type} lists what happened, in log order, with who did it (actor) and when the log stored it; one page per call: pass next_cursor back as cursor for the next page.`

// auditPageSchema is the output schema of audit_query: the inferred one,
// with payload as any JSON value (it is raw JSON, not bytes).
func auditPageSchema() *jsonschema.Schema {
	s := outputSchema[trellis.AuditPage]()
	if ev := s.Properties["events"]; ev != nil && ev.Items != nil && ev.Items.Properties != nil {
		ev.Items.Properties["payload"] = &jsonschema.Schema{Description: "the event's JSON payload (null when left out for its size)"}
	}
	return s
}

// registerAuditTools adds audit_query.
func registerAuditTools(srv *mcp.Server, svc trellis.AuditService) {
	boundTool[trellis.AuditQuery]{
		tool: &mcp.Tool{
			Name:  ToolAuditQuery,
			Title: "Query the audit log",
			Description: "List the events of one task queue (queue), one VINE graph (graph) or one whole stream (stream: queue, vine, chunks, memory, tasks), " +
				"in log order: what happened, who did it (actor), when the log stored it (stored), with each event's hash chain (prev, hash). " +
				"Narrow with since and until (RFC 3339, a date, or a duration ago such as 90m), actor and type (added, claimed, completed, failed, ...). " +
				fmt.Sprintf("Answers one page (limit, default %d, at most %d); when next_cursor is set, call again with it as cursor and the same other arguments.", trellis.DefaultAuditLimit, trellis.MaxAuditLimit),
			OutputSchema: auditPageSchema(),
			Annotations:  &mcp.ToolAnnotations{Title: "Query the audit log", ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: jsonschema.Ptr(false)},
		},
		params: []param{
			{name: "queue", desc: descQueue + " Give exactly one of queue, graph or stream."},
			{name: "graph", desc: "A VINE graph id (g + 20 hex digits)."},
			{name: "stream", desc: "A whole stream: TRELLIS_QUEUE, TRELLIS_VINE, TRELLIS_CHUNKS, TRELLIS_MEMORY, TRELLIS_TASKS (or queue, vine, chunks, memory, tasks)."},
			{name: "since", desc: "Only events stored at or after this time: RFC 3339 (2026-01-02T15:04:05Z), a date (2026-01-02) or a duration ago (90m)."},
			{name: "until", desc: "Only events stored at or before this time (same forms as since); not before since."},
			{name: "actor", desc: "Only events this actor (worker, agent, operator) caused; a worker pool's name also matches its slots (wB finds wB/0, wB/1)."},
			{name: "type", desc: "Only events of this type (added, claimed, completed, failed, paused, batch_applied, observed, ...)."},
			{name: "limit", desc: fmt.Sprintf("Page size (default %d, at most %d).", trellis.DefaultAuditLimit, trellis.MaxAuditLimit), refine: between(0, trellis.MaxAuditLimit)},
			{name: "cursor", desc: "The next_cursor of the previous page, to continue."},
		},
		call: func(ctx context.Context, _ *mcp.CallToolRequest, in *trellis.AuditQuery) (*mcp.CallToolResult, error) {
			page, err := svc.AuditQuery(ctx, *in)
			if err != nil {
				return nil, fmt.Errorf("audit_query: %w", err)
			}
			return structured(renderAudit(page), page), nil
		},
	}.register(srv)
}

// renderAudit lists a page's events one per line.
func renderAudit(p *trellis.AuditPage) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d events", len(p.Events))
	if p.NextCursor != "" {
		fmt.Fprintf(&b, " (more: call again with cursor %q)", p.NextCursor)
	}
	b.WriteString(":\n")
	for _, ev := range p.Events {
		actor := ev.Actor
		if actor == "" {
			actor = "-"
		}
		fmt.Fprintf(&b, "%s #%d %s %s by %s on %s\n", ev.Stored.Format(time.RFC3339Nano), ev.Seq, ev.Stream, ev.Type, actor, ev.AggregateID)
	}
	return b.String()
}
