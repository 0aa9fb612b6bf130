package mcpapi

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trellis/trellis/auth"
)

// toolOps maps every tool to the operation the policy knows it by
// (auth.Required); a tool missing here needs the admin role.
var toolOps = map[string]string{
	ToolQueueAdd: "queue.add", ToolQueueAddMany: "queue.add_many", ToolQueueCancel: "queue.cancel", ToolQueueNext: "queue.next", ToolQueueDone: "queue.done", ToolQueueFail: "queue.fail",
	ToolQueueList: "queue.list", ToolQueueShow: "queue.show", ToolQueueHeartbeat: "queue.heartbeat", ToolQueueRelease: "queue.release_claim",
	ToolVineNext: "vine.next", ToolVineRead: "vine.read", ToolVineWrite: "vine.write", ToolVineExpand: "vine.expand",
	ToolVineClaim:  "vine.claim",
	ToolTaskCreate: "task.create", ToolTaskJoin: "task.join", ToolTaskObjective: "task.objective",
	ToolTaskCompleteAgent: "task.complete_agent", ToolTaskComplete: "task.complete", ToolTaskContext: "task.context",
	ToolTaskList: "task.list", ToolObserve: "memory.observe", ToolConsolidate: "memory.consolidate", ToolFacts: "memory.facts",
	ToolConsolidationHistory: "memory.history", ToolSearchChunks: "code.search",
	ToolExplainCode: "code.explain", ToolAuditQuery: "audit.query",
	ToolWorkflowStart: "workflow.start", ToolWorkflowShow: "workflow.show", ToolWorkflowList: "workflow.list",
	ToolWorkflowSignal: "workflow.signal", ToolWorkflowCancel: "workflow.cancel",
}

// ToolOp returns the operation a tool is authorized as.
func ToolOp(tool string) string {
	if op, ok := toolOps[tool]; ok {
		return op
	}
	return "admin-only tool " + tool
}

// authorizeTool returns ctx carrying the caller of a call over HTTP with
// authentication on (its events are recorded under the caller's name),
// or an unauthorized error when the caller's role may not use the tool.
// Calls over stdio carry no caller: `trellis mcp` reaches a server with
// authentication on through its NATS API, which checks its token.
func authorizeTool(ctx context.Context, req *mcp.CallToolRequest, tool string) (context.Context, error) {
	caller, ok := callerOf(req)
	if !ok {
		return ctx, nil
	}
	ctx = auth.WithIdentity(ctx, caller)
	return ctx, auth.Allow(ctx, ToolOp(tool))
}
