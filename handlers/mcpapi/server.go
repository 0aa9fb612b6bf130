package mcpapi

import (
	"fmt"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trellis/trellis"
)

// ServerName is the implementation name the server reports to clients.
const ServerName = "trellis"

// instructions tells a connecting agent how to use the tools: the
// workflow, the worker rule and the error convention.
const instructions = `Trellis task queue: bounded tasks with checkpoints, so long work survives across runs.

Workflow:
1. Add: break complex work into small bounded tasks with queue_add (objective, inputs, acceptance, max_tool_calls, max_steps).
2. Get next: claim exactly one task with queue_next.
3. Execute: work on that task only, within its budget (max_tool_calls tool calls, max_steps steps).
4. Checkpoint: finish with queue_done (what_was_done, what_changed, what_next, citations) or, if you cannot meet the acceptance, queue_fail (error, what_was_done, blockers).
5. Stop after the one task.

A claim belongs to a worker: by default this client (queue_next's result names it; it survives reconnects), so queue_done or queue_fail without a worker finish your own claim. If several agents share one client identity, pass each its own explicit worker on queue_next, queue_done and queue_fail.
queue_show and queue_list read a task's packet and checkpoint and the queue board.

Errors are tool errors whose text starts with a stable code: "invalid" (followed by the argument at fault), "not_found", "conflict" (e.g. the task is already done or claimed by another worker), "budget_exhausted", "unauthorized", "unavailable" (retry later), "internal".`

// Config configures NewServerWith. The zero value is the default.
type Config struct {
	// Version is reported to clients as the server's version ("dev" when
	// empty).
	Version string
	// Worker is the worker that calls arriving other than over HTTP (stdio)
	// act as when they name none (`trellis mcp --worker`, env
	// TRELLIS_WORKER). Empty: "mcp:<client name>@<host>:<parent pid>". It
	// must be a worker id; calls over HTTP ignore it (see HTTPHandler).
	Worker string
	// Logger receives internal errors, each with the reference id the
	// caller is shown (default slog.Default()).
	Logger *slog.Logger
}

// NewServer returns NewServerWith(svc, Config{Version: version}).
func NewServer(svc trellis.QueueService, version string) *mcp.Server {
	return NewServerWith(svc, Config{Version: version})
}

// NewServerWith returns an MCP server exposing svc as the tools queue_add,
// queue_next, queue_done, queue_fail, queue_list and queue_show; when svc
// also implements trellis.VineService, as the tools vine_next, vine_read,
// vine_write, vine_expand and vine_claim plus the resources
// vine://spec/brief and vine://spec/full; when svc also implements
// trellis.MemoryService, as the task_* and memory tools (see
// registerMemoryTools); when svc also implements trellis.AuditService, as
// the tool audit_query. The server holds no state of its own: every call
// goes to svc, and one server may serve any number of sessions (see
// HTTPHandler and ServeStdio). A cfg.Worker that is not a worker id is a
// programming error and panics.
func NewServerWith(svc trellis.QueueService, cfg Config) *mcp.Server {
	version := cfg.Version
	if version == "" {
		version = "dev"
	}
	if cfg.Worker != "" {
		if err := checkWorker("worker", cfg.Worker); err != nil {
			panic(fmt.Sprintf("mcpapi: %v", err))
		}
	}
	who := newIdentity(cfg.Worker)
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
	as, isAudit := svc.(trellis.AuditService)
	if isAudit {
		instr += "\n\n" + auditInstructions
	}
	wh, isWorkflow := svc.(workflowHost)
	if isWorkflow {
		instr += "\n\n" + workflowInstructions
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: ServerName, Title: "Trellis task queue", Version: version}, &mcp.ServerOptions{
		Instructions: instr,
		// Advertise only what is served: tools (inferred when they are
		// added), not the SDK's default logging capability.
		Capabilities: &mcp.ServerCapabilities{},
	})
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	srv.AddReceivingMiddleware(withLogger(log))
	registerTools(srv, svc, who)
	if isVine {
		registerVineTools(srv, vs, who)
		registerVineResources(srv)
	}
	if isMemory {
		registerMemoryTools(srv, ms, who)
	}
	if isCode {
		registerCodeTools(srv, cs)
	}
	if isAudit {
		registerAuditTools(srv, as)
	}
	if isWorkflow {
		registerWorkflowTools(srv, wh.Workflows())
	}
	return srv
}
