package mcpapi

import (
	"context"
	"fmt"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
)

// The memory tool names: the TaskEngine and ConsolidationEngine.
const (
	ToolTaskCreate           = "task_create"
	ToolTaskJoin             = "task_join"
	ToolTaskObjective        = "task_objective"
	ToolTaskCompleteAgent    = "task_complete_agent"
	ToolTaskComplete         = "task_complete"
	ToolTaskContext          = "task_context"
	ToolTaskList             = "task_list"
	ToolObserve              = "observe"
	ToolConsolidate          = "consolidate"
	ToolFacts                = "facts"
	ToolConsolidationHistory = "consolidation_history"
)

// memoryInstructions is appended to the server instructions when the
// service runs agent tasks and memory: the whole workflow in a few lines.
const memoryInstructions = `Agent tasks and memory (task_* tools, not the queue): multi-agent work whose observations are distilled into facts.
1. task_create (name, objectives, parent branch, default main): the task gets the branch task/<name>.
2. Each agent calls task_join (agent_id, role): its branch is task/<name>/<agent_id>. A joining agent reads task_context first.
3. While working, record observations with observe (task, agent_id, type insight|decision|discovery, text; the session defaults to this client's identity) and move objectives with task_objective (todo → active → done | blocked; done is final).
4. When an agent is done, task_complete_agent consolidates its sessions into facts (new fact: confidence 0.7; a duplicate, Jaccard similarity of the word sets > 0.85, boosts the existing fact by 0.1 instead), collapses duplicates across sessions and merges the agent's facts into the task branch.
5. task_complete classifies the task branch's facts as durable (confidence ≥ 0.8 and category bug_fix, architecture, pattern, decision, security or performance) or ephemeral; with merge true the durable facts are merged into the parent branch, where facts (branch main) finds them.
consolidate runs one level by hand without completing anything; consolidation_history lists the runs.`

// taskArgs is task_context's input.
type taskArgs struct {
	Task string `json:"task"`
}

// taskListResult, factsResult and historyResult wrap the listings: a
// tool's structured content is a JSON object.
type taskListResult struct {
	Tasks []trellis.AgentTaskView `json:"tasks"`
}

type factsResult struct {
	Facts []trellis.FactView `json:"facts"`
}

type historyResult struct {
	Runs []trellis.ConsolidationReport `json:"runs"`
}

// Argument descriptions shared by the memory tools.
const (
	descMemTask    = `The agent task: its name (e.g. "fix-auth") or its task_id, as task_create returned them.`
	descMemAgent   = "The agent's id, 1-64 characters of A-Z a-z 0-9 _ -; use the same id for task_join, observe and task_complete_agent."
	descMemSession = `The working session the observation belongs to, 1-128 characters of A-Z a-z 0-9 _ . : @ -. Optional: defaults to this client's identity (as for queue_next's worker, with / and + as _).`
	descMemMerge   = "Also merge the durable facts (confidence ≥ 0.8, category bug_fix, architecture, pattern, decision, security or performance) into the parent branch; duplicates there (Jaccard > 0.85) are boosted instead of copied. Default false."
)

// reportSchema is the output schema of a consolidation report. The report
// is recursive (Runs holds further reports, one level deep), which schema
// inference refuses; the nested runs get the report's schema without runs.
func reportSchema() *jsonschema.Schema {
	s, err := jsonschema.For[trellis.ConsolidationReport](&jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[[]trellis.ConsolidationReport](): {Type: "array"},
	}})
	if err != nil {
		panic(fmt.Sprintf("mcpapi: consolidation report schema: %v", err))
	}
	inner := s.CloneSchemas()
	delete(inner.Properties, "runs")
	s.Properties["runs"] = &jsonschema.Schema{Type: "array", Items: inner}
	return s
}

// historySchema is consolidation_history's output schema.
func historySchema() *jsonschema.Schema {
	return &jsonschema.Schema{
		Type:                 "object",
		Properties:           map[string]*jsonschema.Schema{"runs": {Type: "array", Items: reportSchema()}},
		Required:             []string{"runs"},
		AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
	}
}

// registerMemoryTools adds the eleven agent-task and memory tools backed
// by svc.
func registerMemoryTools(srv *mcp.Server, svc trellis.MemoryService, who identity) {
	taskOut := outputSchema[trellis.AgentTaskView]()
	reportOut := reportSchema()
	objectiveStatus := oneOf("todo", "active", "done", "blocked")

	boundTool[trellis.AgentTaskCreateRequest]{
		tool: &mcp.Tool{
			Name:  ToolTaskCreate,
			Title: "Create an agent task",
			Description: "Start long-running multi-agent work: create an agent task with a name unique among open tasks, a description and objectives (each starts todo, ids obj-1, obj-2, ...). " +
				"The task gets the memory branch task/<name>, under the parent branch (default main) that its durable facts are merged into at the end. " +
				"Workflow: task_create → agents task_join → observe insights, decisions and discoveries while working → task_complete_agent per agent (consolidation into the task branch) → task_complete (durable vs ephemeral, merge to the parent). " +
				"Returns the task with its task_id. Not the queue: queue_add is for bounded queue tasks.",
			OutputSchema: taskOut,
			Annotations:  &mcp.ToolAnnotations{Title: "Create an agent task", DestructiveHint: jsonschema.Ptr(false), OpenWorldHint: jsonschema.Ptr(false)},
		},
		params: []param{
			{name: "name", desc: "The task's name, 1-64 characters of A-Z a-z 0-9 _ -; unique among open tasks (a completed task's name may be reused). Required."},
			{name: "description", desc: "What the task is about, for the agents that join it."},
			{name: "objectives", desc: "The objectives, one sentence each; they start todo and get the ids obj-1, obj-2, ... in this order."},
			{name: "parent", desc: `The parent branch the task's durable facts merge into (default "main"): segments of A-Z a-z 0-9 _ - separated by /.`},
		},
		req: []string{"name"},
		call: func(ctx context.Context, _ *mcp.CallToolRequest, in *trellis.AgentTaskCreateRequest) (*mcp.CallToolResult, error) {
			t, err := svc.TaskCreate(ctx, *in)
			if err != nil {
				return nil, fmt.Errorf("task_create: %w", err)
			}
			return agentTaskResult(fmt.Sprintf("Created task %s (task_id %s) on branch %s. Next: each agent joins with task_join.", t.Name, t.TaskID, t.Branch), t), nil
		},
	}.register(srv)

	boundTool[trellis.AgentTaskJoinRequest]{
		tool: &mcp.Tool{
			Name:  ToolTaskJoin,
			Title: "Join an agent task",
			Description: "Assign an agent to an open agent task with a role (e.g. implementer, reviewer): the agent gets its own memory branch task/<name>/<agent_id>, where its observations are recorded. " +
				"An agent joins a task once. After joining, read task_context, work, record what you learn with observe, and finish with task_complete_agent, which consolidates your observations into facts and merges them into the task branch.",
			OutputSchema: outputSchema[trellis.AgentTaskJoinResult](),
			Annotations:  &mcp.ToolAnnotations{Title: "Join an agent task", DestructiveHint: jsonschema.Ptr(false), OpenWorldHint: jsonschema.Ptr(false)},
		},
		params: []param{
			{name: "task", desc: descMemTask},
			{name: "agent_id", desc: descMemAgent},
			{name: "role", desc: "The agent's role in the task, 1-64 characters (e.g. implementer, reviewer)."},
		},
		req: []string{"task", "agent_id", "role"},
		call: func(ctx context.Context, _ *mcp.CallToolRequest, in *trellis.AgentTaskJoinRequest) (*mcp.CallToolResult, error) {
			j, err := svc.TaskJoin(ctx, *in)
			if err != nil {
				return nil, fmt.Errorf("task_join: %w", err)
			}
			task := in.Task
			if task != j.TaskID {
				task += " (task_id " + j.TaskID + ")"
			}
			return structured(fmt.Sprintf("Agent %s joined task %s as %s; its branch is %s. Read task_context, then record insights, decisions and discoveries with observe (task %q, agent_id %q) and finish with task_complete_agent.",
				j.AgentID, task, j.Role, j.Branch, in.Task, j.AgentID), j), nil
		},
	}.register(srv)

	boundTool[trellis.AgentTaskObjectiveRequest]{
		tool: &mcp.Tool{
			Name:  ToolTaskObjective,
			Title: "Update an objective",
			Description: "Move one objective of an open agent task to a new status: todo → active | done | blocked; active → done | blocked | todo; blocked → active | todo; done is final. " +
				"Name the agent working on it with agent_id; task_complete_agent lists the objectives an agent got done in its summary. Returns the task with its progress counts.",
			OutputSchema: taskOut,
			Annotations:  &mcp.ToolAnnotations{Title: "Update an objective", DestructiveHint: jsonschema.Ptr(false), OpenWorldHint: jsonschema.Ptr(false)},
		},
		params: []param{
			{name: "task", desc: descMemTask},
			{name: "objective_id", desc: `The objective's id as the task lists it, e.g. "obj-1".`},
			{name: "status", desc: "The new status: todo, active, done or blocked.", refine: objectiveStatus},
			{name: "agent_id", desc: "The agent working on the objective (optional)."},
		},
		req: []string{"task", "objective_id", "status"},
		call: func(ctx context.Context, _ *mcp.CallToolRequest, in *trellis.AgentTaskObjectiveRequest) (*mcp.CallToolResult, error) {
			t, err := svc.TaskObjective(ctx, *in)
			if err != nil {
				return nil, fmt.Errorf("task_objective: %w", err)
			}
			return agentTaskResult(fmt.Sprintf("Objective %s of task %s is %s.", in.ObjectiveID, t.Name, in.Status), t), nil
		},
	}.register(srv)

	boundTool[trellis.AgentCompleteRequest]{
		tool: &mcp.Tool{
			Name:  ToolTaskCompleteAgent,
			Title: "Complete an agent's work",
			Description: "Finish an agent's work on an open task and consolidate its memory: every session's observations on the agent's branch become facts " +
				"(insight, decision and discovery only; a new fact starts at confidence 0.7, a duplicate, Jaccard similarity > 0.85, boosts the existing fact by 0.1), " +
				"duplicates across sessions collapse into the most confident fact, and the agent's active facts merge into the task branch (duplicates of facts already there boost them). " +
				"Records the agent's summary; the agent can no longer observe on the task. Returns the agent run, with the session runs in runs.",
			OutputSchema: reportOut,
			Annotations:  &mcp.ToolAnnotations{Title: "Complete an agent's work", DestructiveHint: jsonschema.Ptr(false), OpenWorldHint: jsonschema.Ptr(false)},
		},
		params: []param{
			{name: "task", desc: descMemTask},
			{name: "agent_id", desc: descMemAgent},
		},
		req: []string{"task", "agent_id"},
		call: func(ctx context.Context, _ *mcp.CallToolRequest, in *trellis.AgentCompleteRequest) (*mcp.CallToolResult, error) {
			r, err := svc.TaskCompleteAgent(ctx, *in)
			if err != nil {
				return nil, fmt.Errorf("task_complete_agent: %w", err)
			}
			return reportResult(fmt.Sprintf("Agent %s completed its work on task %s.", in.Agent, in.Task), r), nil
		},
	}.register(srv)

	boundTool[trellis.AgentTaskCompleteRequest]{
		tool: &mcp.Tool{
			Name:  ToolTaskComplete,
			Title: "Complete an agent task",
			Description: "Complete an open agent task once its agents are done: the task consolidation classifies the task branch's active facts as durable " +
				"(confidence ≥ 0.8 and category bug_fix, architecture, pattern, decision, security or performance) or ephemeral (they stay on the task branch). " +
				"With merge true the durable facts are merged into the parent branch (e.g. main): a duplicate of a fact already there (Jaccard > 0.85) boosts it, anything else is copied with its provenance. " +
				"The task becomes completed and its name free again. Returns the task run (durable, ephemeral), with the merge run in runs. " +
				"A task with objectives not done or agents that have not completed (task_complete_agent) is refused with a conflict naming them; force true completes it anyway.",
			OutputSchema: reportOut,
			Annotations:  &mcp.ToolAnnotations{Title: "Complete an agent task", DestructiveHint: jsonschema.Ptr(false), OpenWorldHint: jsonschema.Ptr(false)},
		},
		params: []param{
			{name: "task", desc: descMemTask},
			{name: "merge", desc: descMemMerge},
			{name: "force", desc: "Complete the task even though objectives are not done or agents are still working (without it that is a conflict naming them). Default false."},
		},
		req: []string{"task"},
		call: func(ctx context.Context, _ *mcp.CallToolRequest, in *trellis.AgentTaskCompleteRequest) (*mcp.CallToolResult, error) {
			r, err := svc.TaskComplete(ctx, *in)
			if err != nil {
				return nil, fmt.Errorf("task_complete: %w", err)
			}
			lead := fmt.Sprintf("Task %s is completed: %d durable and %d ephemeral fact(s).", in.Task, len(r.Durable), len(r.Ephemeral))
			if in.Merge {
				lead += " Durable facts were merged into " + r.TargetBranch + "."
			} else if len(r.Durable) > 0 {
				lead += " Nothing was merged (merge false)."
			}
			return reportResult(lead, r), nil
		},
	}.register(srv)

	boundTool[taskArgs]{
		tool: &mcp.Tool{
			Name:  ToolTaskContext,
			Title: "Agent task context",
			Description: "Everything an agent needs when it joins or resumes an agent task: the task (name, description, branch, status), its objectives with status, " +
				"the agents with their roles and, once they completed, their summaries, the key facts of the task branch (active, most confident first, at most 20) " +
				"and the progress counts (todo, active, done, blocked). Read it right after task_join. Read-only.",
			OutputSchema: outputSchema[trellis.AgentTaskContextView](),
			Annotations:  &mcp.ToolAnnotations{Title: "Agent task context", ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: jsonschema.Ptr(false)},
		},
		params: []param{{name: "task", desc: descMemTask}},
		req:    []string{"task"},
		call: func(ctx context.Context, _ *mcp.CallToolRequest, in *taskArgs) (*mcp.CallToolResult, error) {
			c, err := svc.TaskContext(ctx, in.Task)
			if err != nil {
				return nil, fmt.Errorf("task_context: %w", err)
			}
			return structured(renderContext(c), c), nil
		},
	}.register(srv)

	boundTool[trellis.AgentTaskListRequest]{
		tool: &mcp.Tool{
			Name:  ToolTaskList,
			Title: "List agent tasks",
			Description: "List the agent tasks (multi-agent tasks, not queue tasks), each with its branch, status (open or completed), objectives, agents and progress counts. " +
				"Filter by status. Use task_context for one task's full context and key facts. Read-only.",
			OutputSchema: outputSchema[taskListResult](),
			Annotations:  &mcp.ToolAnnotations{Title: "List agent tasks", ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: jsonschema.Ptr(false)},
		},
		params: []param{
			{name: "status", desc: "Only tasks in this status: open or completed (default: both).", refine: oneOf(events.AgentTaskStatusOpen, events.AgentTaskStatusCompleted)},
		},
		call: func(ctx context.Context, _ *mcp.CallToolRequest, in *trellis.AgentTaskListRequest) (*mcp.CallToolResult, error) {
			l, err := svc.TaskList(ctx, *in)
			if err != nil {
				return nil, fmt.Errorf("task_list: %w", err)
			}
			if l == nil {
				l = []trellis.AgentTaskView{}
			}
			return structured(renderTaskList(l), &taskListResult{Tasks: l}), nil
		},
	}.register(srv)

	boundTool[trellis.ObserveRequest]{
		tool: &mcp.Tool{
			Name:  ToolObserve,
			Title: "Record an observation",
			Description: "Record what you learn while working, as it happens: an observation of type insight, decision or discovery (other lowercase types are kept but never become facts), " +
				"on your agent branch of a task (task and agent_id, after task_join) or on a branch directly (branch). Observations are raw working memory: " +
				"consolidation (task_complete_agent, or consolidate) turns them into facts, a duplicate of an existing fact (Jaccard > 0.85) boosting it instead of adding one. " +
				"The category is inferred from the text (bug/fix/error → bug_fix, architecture/design → architecture, security/auth → security, performance/latency/slow → performance, pattern → pattern, else insight; the decision and discovery types give their own). " +
				"One finding per observation, in a sentence.",
			OutputSchema: outputSchema[trellis.ObservationView](),
			Annotations:  &mcp.ToolAnnotations{Title: "Record an observation", DestructiveHint: jsonschema.Ptr(false), OpenWorldHint: jsonschema.Ptr(false)},
		},
		params: []param{
			{name: "branch", desc: "Record on this branch directly (e.g. main), instead of task and agent_id."},
			{name: "task", desc: descMemTask + " With agent_id: record on that agent's branch of the task."},
			{name: "agent_id", desc: "The agent recording, which must have joined the task and not completed its work."},
			{name: "session", desc: descMemSession},
			{name: "type", desc: "insight, decision or discovery (another lowercase word is recorded but not consolidated)."},
			{name: "text", desc: "The finding, in a sentence. Required, not empty."},
		},
		req: []string{"type", "text"},
		call: func(ctx context.Context, req *mcp.CallToolRequest, in *trellis.ObserveRequest) (*mcp.CallToolResult, error) {
			in.Session = who.session(req, in.Session)
			o, err := svc.Observe(ctx, *in)
			if err != nil {
				return nil, fmt.Errorf("observe: %w", err)
			}
			return structured(fmt.Sprintf("Recorded %s %s on %s in session %s. It becomes a fact when the session is consolidated (task_complete_agent or consolidate).",
				o.Type, o.ObservationID, o.Branch, o.Session), o), nil
		},
	}.register(srv)

	boundTool[trellis.ConsolidateRequest]{
		tool: &mcp.Tool{
			Name:  ToolConsolidate,
			Title: "Run a consolidation",
			Description: "Run one consolidation level by hand, without completing an agent or a task: session (one session's unconsolidated observations, wherever they are, become facts or boost duplicates, Jaccard > 0.85), " +
				"agent (an agent's sessions, then cross-session deduplication and the merge of its facts into the task branch; needs task and agent_id) or " +
				"task (classify the task branch's facts durable vs ephemeral, and with merge merge the durable ones into the parent branch; needs task). " +
				"task_complete_agent and task_complete run the agent and task levels and complete. Returns the run, with further runs in runs.",
			OutputSchema: reportOut,
			Annotations:  &mcp.ToolAnnotations{Title: "Run a consolidation", DestructiveHint: jsonschema.Ptr(false), OpenWorldHint: jsonschema.Ptr(false)},
		},
		params: []param{
			{name: "level", desc: "session, agent or task.", refine: oneOf("session", "agent", "task")},
			{name: "session", desc: `level session: the session to consolidate. Optional: defaults to this client's identity (as for queue_next's worker, with / and + as _).`},
			{name: "task", desc: descMemTask + " Required by levels agent and task."},
			{name: "agent_id", desc: "level agent: the agent whose memory to consolidate."},
			{name: "merge", desc: "level task: " + descMemMerge},
		},
		req: []string{"level"},
		call: func(ctx context.Context, req *mcp.CallToolRequest, in *trellis.ConsolidateRequest) (*mcp.CallToolResult, error) {
			if in.Level == "session" {
				in.Session = who.session(req, in.Session)
			}
			r, err := svc.Consolidate(ctx, *in)
			if err != nil {
				return nil, fmt.Errorf("consolidate: %w", err)
			}
			lead := fmt.Sprintf("Consolidated at level %s.", in.Level)
			if r.RunID == "" && len(r.Runs) == 0 {
				lead = fmt.Sprintf("Nothing new to consolidate at level %s.", in.Level)
			}
			return reportResult(lead, r), nil
		},
	}.register(srv)

	boundTool[trellis.FactsRequest]{
		tool: &mcp.Tool{
			Name:  ToolFacts,
			Title: "Query facts",
			Description: "Query the fact store, the consolidated memory: facts with their text, category, confidence, status (active, or superseded/archived), branch and provenance " +
				"(source observations, source fact, task, agent, session). Filter by branch (main holds what completed tasks merged; task/<name> and task/<name>/<agent_id> hold a task's: " +
				"those of the current task of that name; an older task of the name is read with task set to its id), status, category, text query and task. Read-only.",
			OutputSchema: outputSchema[factsResult](),
			Annotations:  &mcp.ToolAnnotations{Title: "Query facts", ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: jsonschema.Ptr(false)},
		},
		params: []param{
			{name: "branch", desc: "Only facts on this branch (e.g. main, task/fix-auth, task/fix-auth/agent_1)."},
			{name: "status", desc: "Only facts in this status: active, superseded or archived (default: all).", refine: oneOf("active", "superseded", "archived")},
			{name: "category", desc: "Only facts of this category: bug_fix, architecture, pattern, decision, security, performance, discovery, insight."},
			{name: "query", desc: "Only facts whose text contains this text (case-insensitive)."},
			{name: "task", desc: "Only facts of this agent task (name or task_id)."},
		},
		call: func(ctx context.Context, _ *mcp.CallToolRequest, in *trellis.FactsRequest) (*mcp.CallToolResult, error) {
			fs, err := svc.Facts(ctx, *in)
			if err != nil {
				return nil, fmt.Errorf("facts: %w", err)
			}
			if fs == nil {
				fs = []trellis.FactView{}
			}
			return structured(renderFacts(fs), &factsResult{Facts: fs}), nil
		},
	}.register(srv)

	boundTool[trellis.HistoryRequest]{
		tool: &mcp.Tool{
			Name:  ToolConsolidationHistory,
			Title: "Consolidation history",
			Description: "The audit trail of consolidation runs, oldest first: each run's type (session_end, agent_complete, task_checkpoint, merge), source and target branches, " +
				"facts created, updated, deduplicated and superseded, observations processed, the durable and ephemeral facts of a task run, and its summary. " +
				"Filter by task to follow one task from its agents' sessions to the merge. Read-only.",
			OutputSchema: historySchema(),
			Annotations:  &mcp.ToolAnnotations{Title: "Consolidation history", ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: jsonschema.Ptr(false)},
		},
		params: []param{{name: "task", desc: "Only the runs of this agent task (name or task_id; default: every run)."}},
		call: func(ctx context.Context, _ *mcp.CallToolRequest, in *trellis.HistoryRequest) (*mcp.CallToolResult, error) {
			rs, err := svc.History(ctx, *in)
			if err != nil {
				return nil, fmt.Errorf("consolidation_history: %w", err)
			}
			if rs == nil {
				rs = []trellis.ConsolidationReport{}
			}
			return structured(renderHistory(rs), &historyResult{Runs: rs}), nil
		},
	}.register(srv)
}
