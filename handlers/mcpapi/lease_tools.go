package mcpapi

import (
	"context"
	"fmt"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trellis/trellis"
)

// releaseArgs are queue_release's arguments.
type releaseArgs struct {
	TaskID string `json:"task_id"`
	Reason string `json:"reason,omitempty"`
}

// registerLeaseTools adds queue_heartbeat (an agent keeps its claim) and
// queue_release (an operator gives a claimed task back).
func registerLeaseTools(srv *mcp.Server, svc trellis.QueueLeases, who identity, taskOut *jsonschema.Schema) {
	boundTool[trellis.HeartbeatRequest]{
		tool: &mcp.Tool{
			Name:  ToolQueueHeartbeat,
			Title: "Keep a claimed task",
			Description: "Extend the lease of a task you claimed with queue_next: it now ends lease_seconds (as claimed) from now " +
				"(lease.expires_at in the result). Call it while you work, before the lease runs out; a claim whose lease ran out is " +
				"given to another worker, and its heartbeat is refused. Refused too for a task that is not claimed by this worker.",
			OutputSchema: taskOut,
			Annotations:  &mcp.ToolAnnotations{Title: "Keep a claimed task", DestructiveHint: jsonschema.Ptr(false), IdempotentHint: true, OpenWorldHint: jsonschema.Ptr(false)},
		},
		params: []param{{name: "task_id", desc: descTaskID}, {name: "worker", desc: descWorker}},
		req:    []string{"task_id"},
		call: func(ctx context.Context, req *mcp.CallToolRequest, in *trellis.HeartbeatRequest) (*mcp.CallToolResult, error) {
			in.Worker = who.worker(req, in.Worker)
			t, err := svc.Heartbeat(ctx, *in)
			if err != nil {
				return nil, fmt.Errorf("queue_heartbeat: %w", err)
			}
			lead := fmt.Sprintf("Task %s is still yours.", t.TaskID)
			if t.Lease != nil && t.Lease.ExpiresAt != nil {
				lead = fmt.Sprintf("Task %s is still yours: its lease ends at %s.", t.TaskID, t.Lease.ExpiresAt.UTC().Format(time.RFC3339))
			}
			return taskResult(lead, t), nil
		},
	}.register(srv)

	boundTool[releaseArgs]{
		tool: &mcp.Tool{
			Name:  ToolQueueRelease,
			Title: "Release a claimed task",
			Description: "Give a claimed task back to its queue by task_id (an operator's act, for a claim whose agent is gone): " +
				"it is queued again at once and the attempt does not count; its claimant's heartbeats and outcome are refused from then on. " +
				"A task a worker pool runs is refused: cancel it with queue_cancel, or let its lease run out.",
			OutputSchema: taskOut,
			Annotations:  &mcp.ToolAnnotations{Title: "Release a claimed task", DestructiveHint: jsonschema.Ptr(true), OpenWorldHint: jsonschema.Ptr(false)},
		},
		params: []param{{name: "task_id", desc: descTaskID}, {name: "reason", desc: "Why, recorded in the task's history."}},
		req:    []string{"task_id"},
		call: func(ctx context.Context, req *mcp.CallToolRequest, in *releaseArgs) (*mcp.CallToolResult, error) {
			t, err := svc.ReleaseClaim(ctx, trellis.ReleaseRequest{TaskID: in.TaskID, Reason: in.Reason, Actor: who.worker(req, "")})
			if err != nil {
				return nil, fmt.Errorf("queue_release: %w", err)
			}
			return taskResult(fmt.Sprintf("Task %s is queued again.", t.TaskID), t), nil
		},
	}.register(srv)
}
