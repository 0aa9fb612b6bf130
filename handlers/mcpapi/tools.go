package mcpapi

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/auth"
)

// The tool names: the queue tools plus the board's read tools.
const (
	ToolQueueAdd = "queue_add"
	// ToolQueueAddMany adds several tasks in one call.
	ToolQueueAddMany = "queue_add_many"
	ToolQueueNext    = "queue_next"
	ToolQueueDone    = "queue_done"
	ToolQueueFail    = "queue_fail"
	ToolQueueList    = "queue_list"
	ToolQueueShow    = "queue_show"
	// ToolQueueCancel cancels a task.
	ToolQueueCancel = "queue_cancel"
	// ToolQueueHeartbeat keeps a claim made with queue_next.
	ToolQueueHeartbeat = "queue_heartbeat"
	// ToolQueueRelease gives a claimed task back to its queue (an
	// operator's act).
	ToolQueueRelease = "queue_release"
)

// showArgs is queue_show's input.
type showArgs struct {
	TaskID string `json:"task_id"`
}

// Argument descriptions shared by several tools.
const (
	descQueue         = `Queue name, 1-64 characters of A-Z a-z 0-9 _ - (default "default").`
	descTaskID        = "The task_id of the task (a 26-character ULID), as returned by queue_add or queue_next."
	descWorker        = `Who acts: 1-128 characters of A-Z a-z 0-9 _ . : @ / + -. Optional: defaults to this client's identity (the X-Trellis-Worker header or ?worker= of the MCP URL, else "mcp:<client name>@<host>"; over stdio TRELLIS_WORKER, else "mcp:<client name>@<host>:<parent pid>"), which survives reconnects. Only the worker that claimed a task may finish it, so use the same value for queue_next and queue_done/queue_fail.`
	descStepsUsed     = "Steps you spent on the task; usage beyond the budget is recorded as budget_exhausted (default 0)."
	descToolCallsUsed = "Tool calls you spent on the task; usage beyond the budget is recorded as budget_exhausted (default 0)."
	descBlockers      = "What stands in the way of finishing, one item each (e.g. missing file, unreachable service)."
	descWhatWasDone   = "What you did on the task, in a few sentences, so the next run can resume."
)

// boundTool is a tool with its argument schema and a handler that receives
// the decoded arguments.
type boundTool[In any] struct {
	tool   *mcp.Tool
	params []param
	req    []string
	call   func(ctx context.Context, req *mcp.CallToolRequest, in *In) (*mcp.CallToolResult, error)
}

// register adds the tool to srv with a handler that decodes the arguments
// strictly (decodeArgs), calls the tool, and turns every error into a tool
// error result rather than a protocol error.
func (b boundTool[In]) register(srv *mcp.Server) {
	schema := inputSchema[In](b.tool.Name, b.params, b.req...)
	t := *b.tool
	t.InputSchema = schema
	srv.AddTool(&t, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ctx, err := authorizeTool(ctx, req, t.Name)
		if err != nil {
			return errorResult(ctx, t.Name, err), nil
		}
		var in In
		if err := decodeArgs(t.Name, schema, req.Params.Arguments, &in); err != nil {
			return errorResult(ctx, t.Name, err), nil
		}
		if err := auth.Bind(ctx, &in); err != nil {
			return errorResult(ctx, t.Name, err), nil
		}
		res, err := b.call(ctx, req, &in)
		if err != nil {
			return errorResult(ctx, t.Name, err), nil
		}
		return res, nil
	})
}

// registerTools adds the six queue tools backed by svc.
func registerTools(srv *mcp.Server, svc trellis.QueueService, who identity) {
	taskOut := outputSchema[trellis.Task]()
	listOut := outputSchema[trellis.TaskList]()
	budgetRange := between(0, trellis.MaxBudget)
	attemptsRange := between(0, trellis.MaxAttemptsLimit)

	boundTool[trellis.AddTaskRequest]{
		tool: &mcp.Tool{
			Name:  ToolQueueAdd,
			Title: "Add a bounded task",
			Description: "Add one bounded task to the queue and return its task packet (status queued, with its task_id). " +
				"Break complex work into small units an agent can finish within a budget: a concrete objective, the inputs to start from, " +
				"an acceptance test, and the budget (max_tool_calls, max_steps). A worker then claims it with queue_next. " +
				"Give an idempotency_key to make a retried add create the task only once.",
			OutputSchema: taskOut,
			Annotations:  &mcp.ToolAnnotations{Title: "Add a bounded task", DestructiveHint: jsonschema.Ptr(false), OpenWorldHint: jsonschema.Ptr(false)},
		},
		params: []param{
			{name: "objective", desc: "What the task must achieve, concretely, in one or two sentences. Required, not empty."},
			{name: "inputs", desc: "What to start from, one item each: file paths, chunk ids, documents, URLs."},
			{name: "acceptance", desc: "How to tell the task is done (e.g. \"all tests pass\")."},
			{name: "max_tool_calls", desc: fmt.Sprintf("Tool-call budget for the task (default %d).", trellis.DefaultMaxToolCalls), refine: budgetRange},
			{name: "max_steps", desc: fmt.Sprintf("Step budget for the task (default %d).", trellis.DefaultMaxSteps), refine: budgetRange},
			{name: "queue", desc: descQueue},
			{name: "parent_id", desc: "task_id of an existing task this one is a subtask of."},
			{name: "max_attempts", desc: fmt.Sprintf("How many claims the task gets before a worker pool declares it dead (default %d).", trellis.DefaultMaxAttempts), refine: attemptsRange},
			{name: "metadata", desc: "Free string labels, key to value (keys: 1-128 characters of A-Z a-z 0-9 _ . -)."},
			{name: "idempotency_key", desc: "Client-chosen key (at most 256 bytes): an add repeating a key returns the task the key first created instead of adding another."},
			{name: "priority", desc: fmt.Sprintf("1 (claimed first) to %d (last); default %d. Within a queue a claim takes the oldest task of the best priority present.", trellis.MaxPriority, trellis.DefaultPriority), refine: between(0, trellis.MaxPriority)},
			{name: "delay", desc: "Run no sooner than this long from now, as a duration (30s, 10m, 2h): the task is scheduled until then. Not with run_at."},
			{name: "run_at", desc: "Run no sooner than this RFC 3339 time (2026-12-01T09:00:00Z): the task is scheduled until then. Not with delay."},
			{name: "unique_key", desc: "While a task added with this key holds it, an add with the same key (in this queue) returns that task with \"duplicate\": true instead of adding one."},
			{name: "unique_for", desc: "How long the unique_key is held after the add, as a duration (1h); default: while the first task is not finished."},
			{name: "after", desc: fmt.Sprintf("task_ids of existing tasks (at most %d) that must be done first: the task is waiting until then, and is cancelled if one fails, dies or is cancelled. Its packet then lists each one's checkpoint summary under prerequisites.", trellis.MaxAfter)},
			{name: "concurrency_key", desc: "A key (e.g. a repository) the queue's per-key limit applies to: at most that many tasks with one key run at once."},
			{name: "timeout", desc: "How long one attempt may run, as a duration (1s to 24h, e.g. 10m): a worker pool stops the handler when it passes and fails the attempt with a timeout error (retried per max_attempts)."},
		},
		req: []string{"objective"},
		call: func(ctx context.Context, _ *mcp.CallToolRequest, in *trellis.AddTaskRequest) (*mcp.CallToolResult, error) {
			t, err := svc.Add(ctx, *in)
			if err != nil {
				return nil, fmt.Errorf("queue_add: %w", err)
			}
			switch {
			case t.Duplicate:
				return taskResult(fmt.Sprintf("Not added: task %s (%s) holds unique key %q; it is returned with \"duplicate\": true.", t.TaskID, t.Status, t.UniqueKey), t), nil
			case t.Status == trellis.StatusScheduled:
				return taskResult(fmt.Sprintf("Added task %s to queue %s, scheduled until %s.", t.TaskID, t.Queue, t.RunAt.Format(time.RFC3339)), t), nil
			case t.Status == trellis.StatusWaiting:
				return taskResult(fmt.Sprintf("Added task %s to queue %s, waiting for %s.", t.TaskID, t.Queue, strings.Join(t.WaitingFor, ", ")), t), nil
			}
			return taskResult(fmt.Sprintf("Added task %s to queue %s. Claim it with queue_next.", t.TaskID, t.Queue), t), nil
		},
	}.register(srv)

	boundTool[trellis.AddManyRequest]{
		tool: &mcp.Tool{
			Name:  ToolQueueAddMany,
			Title: "Add many bounded tasks",
			Description: fmt.Sprintf("Add up to %d tasks in one call (a plan broken into units): each element of tasks takes queue_add's arguments "+
				"(objective required; inputs, acceptance, max_tool_calls, max_steps, queue, parent_id, max_attempts, metadata, idempotency_key, "+
				"priority, delay, run_at, unique_key, unique_for, after, concurrency_key, timeout). "+
				"Every task is checked first: one bad element refuses the whole call, naming tasks[i]. The tasks are stored together (far fewer "+
				"synced writes than one queue_add each); the result lists each task packet in order, and errors for any that could not be stored.", trellis.MaxAddMany),
			OutputSchema: outputSchema[trellis.AddManyResult](),
			Annotations:  &mcp.ToolAnnotations{Title: "Add many bounded tasks", DestructiveHint: jsonschema.Ptr(false), OpenWorldHint: jsonschema.Ptr(false)},
		},
		params: []param{
			{name: "tasks", desc: "The tasks to add, in order: objects with queue_add's arguments (objective required)."},
		},
		req: []string{"tasks"},
		call: func(ctx context.Context, _ *mcp.CallToolRequest, in *trellis.AddManyRequest) (*mcp.CallToolResult, error) {
			res, err := svc.AddMany(ctx, *in)
			if err != nil {
				return nil, fmt.Errorf("queue_add_many: %w", err)
			}
			added := 0
			var b strings.Builder
			for _, t := range res.Tasks {
				if t != nil {
					added++
					fmt.Fprintf(&b, "- %s (queue %s): %s\n", t.TaskID, t.Queue, t.Objective)
				}
			}
			for _, e := range res.Errors {
				fmt.Fprintf(&b, "- tasks[%d] not added: %s: %s\n", e.Index, e.Code, e.Message)
			}
			text := fmt.Sprintf("Added %d of %d tasks. Claim them with queue_next.\n\n%s", added, len(res.Tasks), b.String())
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, StructuredContent: res}, nil
		},
	}.register(srv)

	boundTool[trellis.NextRequest]{
		tool: &mcp.Tool{
			Name:  ToolQueueNext,
			Title: "Claim the next task",
			Description: "Claim the oldest queued task and return its task packet: task_id, objective, inputs, acceptance and budget. " +
				"Work on exactly this one task, within its budget; then record a checkpoint with queue_done (finished) or queue_fail (cannot finish), and stop. " +
				"The claim belongs to the worker (default: this client's identity, named in the result); only that worker may finish the task. " +
				fmt.Sprintf("The claim holds a lease (lease_seconds, default the queue's agent lease, %d unless an operator set another): call queue_heartbeat before it runs out (lease.expires_at in the result) "+
					"while you work, or the task is given to another worker. ", int(trellis.DefaultAgentLease.Seconds())) +
				"When no task is queued the result says so and carries no packet: there is nothing to do.",
			Annotations: &mcp.ToolAnnotations{Title: "Claim the next task", DestructiveHint: jsonschema.Ptr(false), OpenWorldHint: jsonschema.Ptr(false)},
			// No OutputSchema: when nothing is queued the result has no
			// structured content, which a declared schema would forbid.
		},
		params: []param{
			{name: "queue", desc: descQueue},
			{name: "worker", desc: descWorker},
			{name: "lease_seconds", desc: fmt.Sprintf("How long the claim holds without a heartbeat, in seconds (default: the queue's agent lease, %d unless set; %d to %d).",
				int(trellis.DefaultAgentLease.Seconds()), int(trellis.MinAgentLease.Seconds()), int(trellis.MaxAgentLease.Seconds())),
				refine: between(0, int(trellis.MaxAgentLease.Seconds()))},
		},
		call: func(ctx context.Context, req *mcp.CallToolRequest, in *trellis.NextRequest) (*mcp.CallToolResult, error) {
			in.Worker = who.worker(req, in.Worker)
			t, err := svc.Next(ctx, *in)
			if err != nil {
				return nil, fmt.Errorf("queue_next: %w", err)
			}
			if t == nil {
				q := in.Queue
				if q == "" {
					q = trellis.DefaultQueue
				}
				return textResult(fmt.Sprintf("No task is queued in queue %s: there is nothing to claim. Stop, or add work with queue_add.", q)), nil
			}
			lead := fmt.Sprintf("Claimed task %s as worker %s. Work on this task only, within its budget "+
				"(max_tool_calls %d, max_steps %d). Then call queue_done with task_id %s and what_was_done, what_changed, what_next, citations "+
				"- or queue_fail with task_id %s, error, what_was_done, blockers - and stop.",
				t.TaskID, t.ClaimedBy, t.Budget.MaxToolCalls, t.Budget.MaxSteps, t.TaskID, t.TaskID)
			if t.Lease != nil && t.Lease.ExpiresAt != nil {
				lead += fmt.Sprintf(" The claim's lease ends at %s: call queue_heartbeat with task_id %s before then while you work.",
					t.Lease.ExpiresAt.UTC().Format(time.RFC3339), t.TaskID)
			}
			return taskResult(lead, t), nil
		},
	}.register(srv)

	boundTool[trellis.DoneRequest]{
		tool: &mcp.Tool{
			Name:  ToolQueueDone,
			Title: "Finish a task with a checkpoint",
			Description: "Finish the task you claimed with queue_next, recording a resume-friendly checkpoint: what_was_done (required), " +
				"what_changed, what_next, citations and any blockers, plus the steps and tool calls you used. " +
				"Only the claiming worker may finish a task, and only once. Returns the finished task packet. After this, stop.",
			OutputSchema: taskOut,
			Annotations:  &mcp.ToolAnnotations{Title: "Finish a task", DestructiveHint: jsonschema.Ptr(false), OpenWorldHint: jsonschema.Ptr(false)},
		},
		params: []param{
			{name: "task_id", desc: descTaskID},
			{name: "what_was_done", desc: descWhatWasDone + " Required."},
			{name: "what_changed", desc: "What you changed, one item each: files, paths, records."},
			{name: "what_next", desc: "What remains or should happen next, for whoever continues."},
			{name: "citations", desc: "Sources you relied on, one item each: chunk ids (e.g. \"chunk_abc123\"), files, URLs."},
			{name: "blockers", desc: descBlockers},
			{name: "steps_used", desc: descStepsUsed, refine: budgetRange},
			{name: "tool_calls_used", desc: descToolCallsUsed, refine: budgetRange},
			{name: "worker", desc: descWorker},
		},
		req: []string{"task_id", "what_was_done"},
		call: func(ctx context.Context, req *mcp.CallToolRequest, in *trellis.DoneRequest) (*mcp.CallToolResult, error) {
			in.Worker = who.worker(req, in.Worker)
			t, err := svc.Done(ctx, *in)
			if err != nil {
				return nil, fmt.Errorf("queue_done: %w", err)
			}
			lead := fmt.Sprintf("Task %s is done and its checkpoint is recorded.", t.TaskID)
			if t.BudgetExhausted {
				lead += " The reported usage exceeds the task's budget: recorded as budget_exhausted."
			}
			return taskResult(lead+" Stop here.", t), nil
		},
	}.register(srv)

	boundTool[trellis.FailRequest]{
		tool: &mcp.Tool{
			Name:  ToolQueueFail,
			Title: "Fail a task with a checkpoint",
			Description: "End the task you claimed with queue_next as failed when you cannot meet its acceptance (blocked, out of budget, impossible): " +
				"error (required) says why, what_was_done what you achieved, blockers what stands in the way; the checkpoint lets a later attempt resume. " +
				"Only the claiming worker may fail a task, and only while it is claimed. Returns the failed task packet. After this, stop.",
			OutputSchema: taskOut,
			Annotations:  &mcp.ToolAnnotations{Title: "Fail a task", DestructiveHint: jsonschema.Ptr(false), OpenWorldHint: jsonschema.Ptr(false)},
		},
		params: []param{
			{name: "task_id", desc: descTaskID},
			{name: "error", desc: "Why the task cannot be finished. Required, not empty."},
			{name: "what_was_done", desc: descWhatWasDone},
			{name: "blockers", desc: descBlockers},
			{name: "steps_used", desc: descStepsUsed, refine: budgetRange},
			{name: "tool_calls_used", desc: descToolCallsUsed, refine: budgetRange},
			{name: "worker", desc: descWorker},
			{name: "retry", desc: "Ask for another attempt instead of ending the task: it is queued again after a backoff (exponential with jitter), or becomes dead once its max_attempts are used up. Default false: failing is terminal."},
		},
		req: []string{"task_id", "error"},
		call: func(ctx context.Context, req *mcp.CallToolRequest, in *trellis.FailRequest) (*mcp.CallToolResult, error) {
			in.Worker = who.worker(req, in.Worker)
			t, err := svc.Fail(ctx, *in)
			if err != nil {
				return nil, fmt.Errorf("queue_fail: %w", err)
			}
			if t.Status == trellis.StatusQueued {
				return taskResult(fmt.Sprintf("Task %s failed this attempt and is queued again for attempt %d of %d. Stop here.", t.TaskID, t.Attempts+1, t.MaxAttempts), t), nil
			}
			return taskResult(fmt.Sprintf("Task %s is %s and its checkpoint is recorded. Stop here.", t.TaskID, t.Status), t), nil
		},
	}.register(srv)

	boundTool[trellis.ListRequest]{
		tool: &mcp.Tool{
			Name:  ToolQueueList,
			Title: "List tasks",
			Description: "List one page of the tasks on the queue board, oldest first or newest first (task_id, status, queue, attempts, claimant, objective), " +
				"with the task counts per queue and status. Filter by queue (rows and counts), by status, by since and by text (rows only). " +
				"A page holds at most limit rows (default 100, at most 1000); when more match, next_cursor is set: pass it as cursor for the next page. " +
				"Use queue_show for a task's full packet and checkpoint. Read-only.",
			OutputSchema: listOut,
			Annotations:  &mcp.ToolAnnotations{Title: "List tasks", ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: jsonschema.Ptr(false)},
		},
		params: []param{
			{name: "queue", desc: "Only tasks of this queue (default: every queue)."},
			{name: "status", desc: "Only tasks in this status (default: every status).", refine: oneOf(trellis.Statuses()...)},
			{name: "since", desc: "Only tasks updated at or after this RFC 3339 time, e.g. 2026-01-02T15:04:05Z (default: any time)."},
			{name: "limit", desc: "Rows per page (default 100, at most 1000).", refine: between(0, trellis.MaxListLimit)},
			{name: "cursor", desc: "The next_cursor of the previous page, unchanged (default: the first page)."},
			{name: "text", desc: "Only tasks whose objective contains this text (ignoring case) or whose task_id starts with it."},
			{name: "newest", desc: "List newest first (default: oldest first); a cursor continues in its page's order."},
		},
		call: func(ctx context.Context, _ *mcp.CallToolRequest, in *trellis.ListRequest) (*mcp.CallToolResult, error) {
			l, err := svc.List(ctx, *in)
			if err != nil {
				return nil, fmt.Errorf("queue_list: %w", err)
			}
			return listResult(l), nil
		},
	}.register(srv)

	boundTool[showArgs]{
		tool: &mcp.Tool{
			Name:  ToolQueueShow,
			Title: "Show a task",
			Description: "Show one task's full packet by task_id: objective, inputs, acceptance, budget, status, claimant, attempts " +
				"and, once done or failed, its checkpoint (what was done, what changed, what's next, blockers, citations, error). Read-only.",
			OutputSchema: taskOut,
			Annotations:  &mcp.ToolAnnotations{Title: "Show a task", ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: jsonschema.Ptr(false)},
		},
		params: []param{{name: "task_id", desc: descTaskID}},
		req:    []string{"task_id"},
		call: func(ctx context.Context, _ *mcp.CallToolRequest, in *showArgs) (*mcp.CallToolResult, error) {
			if err := trellis.ValidateTaskID("task_id", in.TaskID); err != nil {
				return nil, err
			}
			t, err := svc.Show(ctx, in.TaskID)
			if err != nil {
				return nil, fmt.Errorf("queue_show: %w", err)
			}
			return taskResult("", t), nil
		},
	}.register(srv)

	if admin, ok := svc.(trellis.QueueAdmin); ok {
		boundTool[cancelArgs]{
			tool: &mcp.Tool{
				Name:  ToolQueueCancel,
				Title: "Cancel a task",
				Description: "Cancel a task by task_id: a scheduled, waiting or queued task is cancelled at once and never runs; a task a worker " +
					"pool runs is marked, and the pool stops it at its next heartbeat (recording cancelled). Tasks added after it (after) are " +
					"cancelled too. Cancelling a cancelled task again changes nothing; a finished task cannot be cancelled.",
				OutputSchema: taskOut,
				Annotations:  &mcp.ToolAnnotations{Title: "Cancel a task", DestructiveHint: jsonschema.Ptr(true), IdempotentHint: true, OpenWorldHint: jsonschema.Ptr(false)},
			},
			params: []param{{name: "task_id", desc: descTaskID}, {name: "reason", desc: "Why, recorded in the task's history."}},
			req:    []string{"task_id"},
			call: func(ctx context.Context, req *mcp.CallToolRequest, in *cancelArgs) (*mcp.CallToolResult, error) {
				t, err := admin.Cancel(ctx, trellis.CancelRequest{TaskID: in.TaskID, Reason: in.Reason, Actor: who.worker(req, "")})
				if err != nil {
					return nil, fmt.Errorf("queue_cancel: %w", err)
				}
				if t.Status == trellis.StatusCancelled {
					return taskResult(fmt.Sprintf("Task %s is cancelled.", t.TaskID), t), nil
				}
				return taskResult(fmt.Sprintf("Task %s is marked for cancellation: its worker stops it at the next heartbeat.", t.TaskID), t), nil
			},
		}.register(srv)
	}
	if leases, ok := svc.(trellis.QueueLeases); ok {
		registerLeaseTools(srv, leases, who, taskOut)
	}
}

// cancelArgs are queue_cancel's arguments.
type cancelArgs struct {
	TaskID string `json:"task_id"`
	Reason string `json:"reason,omitempty"`
}

// outputSchema infers the JSON Schema of a tool's structured result.
func outputSchema[T any]() *jsonschema.Schema {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(fmt.Sprintf("mcpapi: output schema of %T: %v", *new(T), err))
	}
	return s
}
