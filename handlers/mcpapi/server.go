package mcpapi

import (
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trellis/trellis"
)

// ServerName is the implementation name the server reports to clients.
const ServerName = "trellis"

// instructions tells a connecting agent how to use the tools: seed 000's
// workflow, the worker rule and the error convention.
const instructions = `Trellis task queue: bounded tasks with checkpoints, so long work survives across runs.

Workflow:
1. Add: break complex work into small bounded tasks with queue_add (objective, inputs, acceptance, max_tool_calls, max_steps).
2. Get next: claim exactly one task with queue_next.
3. Execute: work on that task only, within its budget (max_tool_calls tool calls, max_steps steps).
4. Checkpoint: finish with queue_done (what_was_done, what_changed, what_next, citations) or, if you cannot meet the acceptance, queue_fail (error, what_was_done, blockers).
5. Stop after the one task.

A claim belongs to a worker: by default this MCP session, so call queue_done or queue_fail from the session that called queue_next, or pass the same explicit worker to all of them.
queue_show and queue_list read a task's packet and checkpoint and the queue board.

Errors are tool errors whose text starts with a stable code: "invalid" (followed by the argument at fault), "not_found", "conflict" (e.g. the task is already done or claimed by another worker), "budget_exhausted", "unauthorized", "unavailable" (retry later), "internal".`

// NewServer returns an MCP server exposing svc as the tools queue_add,
// queue_next, queue_done, queue_fail, queue_list and queue_show; when svc
// also implements trellis.VineService, as the tools vine_next, vine_read,
// vine_write, vine_expand and vine_claim plus the resources
// vine://spec/brief and vine://spec/full; when svc also implements
// trellis.MemoryService, as seed 004's task_* and memory tools (see
// registerMemoryTools). version is
// reported to clients as the server's version ("dev" when empty). The
// server holds no state of its own: every call goes to svc, and one server
// may serve any number of sessions (see HTTPHandler and ServeStdio).
func NewServer(svc trellis.QueueService, version string) *mcp.Server {
	if version == "" {
		version = "dev"
	}
	instr := instructions
	vs, isVine := svc.(trellis.VineService)
	if isVine {
		instr += "\n\n" + vineInstructions
	}
	ms, isMemory := svc.(trellis.MemoryService)
	if isMemory {
		instr += "\n\n" + memoryInstructions
	}
	cs, isCode := svc.(trellis.CodeService)
	if isCode {
		instr += "\n\n" + codeInstructions
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: ServerName, Title: "Trellis task queue", Version: version}, &mcp.ServerOptions{
		Instructions: instr,
		// Advertise only what is served: tools (inferred when they are
		// added), not the SDK's default logging capability.
		Capabilities: &mcp.ServerCapabilities{},
	})
	registerTools(srv, svc)
	if isVine {
		registerVineTools(srv, vs)
		registerVineResources(srv)
	}
	if isMemory {
		registerMemoryTools(srv, ms)
	}
	if isCode {
		registerCodeTools(srv, cs)
	}
	return srv
}
