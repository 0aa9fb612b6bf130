package mcpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/auth"
	"github.com/trellis/trellis/workflow"
)

// Workflow tools: agents start runs, read them and send signals.
const (
	ToolWorkflowStart  = "workflow_start"
	ToolWorkflowShow   = "workflow_show"
	ToolWorkflowList   = "workflow_list"
	ToolWorkflowSignal = "workflow_signal"
	ToolWorkflowCancel = "workflow_cancel"
)

// workflowInstructions is appended to the server instructions when the
// service hosts durable workflows.
const workflowInstructions = `Workflows: workflow_start {workflow, input} starts a durable run; workflow_show {run_id} shows its status (running, sleeping, waiting, completed, failed, cancelled), steps and output; a run waiting for a signal (an approval, say) resumes when you send it with workflow_signal {run_id, name, data}; workflow_list lists runs; workflow_cancel stops one.`

// workflowHost is a service that hosts the workflow API.
type workflowHost interface{ Workflows() *workflow.Engine }

type workflowStartArgs struct {
	Workflow string `json:"workflow"`
	Version  int    `json:"version,omitempty"`
	Input    any    `json:"input,omitempty"`
	RunID    string `json:"run_id,omitempty"`
}

type workflowRunArgs struct {
	RunID string `json:"run_id"`
}

type workflowListArgs struct {
	Status   string `json:"status,omitempty"`
	Workflow string `json:"workflow,omitempty"`
	Limit    int    `json:"limit,omitempty"`
}

type workflowSignalArgs struct {
	RunID string `json:"run_id"`
	Name  string `json:"name"`
	Data  any    `json:"data,omitempty"`
}

type workflowCancelArgs struct {
	RunID  string `json:"run_id"`
	Reason string `json:"reason,omitempty"`
}

// rawArg encodes an argument given as any JSON value.
func rawArg(field string, v any) (json.RawMessage, error) {
	if v == nil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, trellis.FieldError(field, "does not encode as JSON: %v", err)
	}
	return b, nil
}

// renderRun describes a run for people.
func renderWorkflowRun(r *workflow.View) string {
	var b strings.Builder
	fmt.Fprintf(&b, "run %s (%s v%d): %s\n", r.RunID, r.Workflow, r.Version, r.Status)
	for _, e := range r.Journal {
		fmt.Fprintf(&b, "  %d %s %s: %s\n", e.Pos, e.Kind, e.Name, e.Status)
	}
	if r.Error != "" {
		fmt.Fprintf(&b, "error: %s\n", r.Error)
	}
	fmt.Fprintf(&b, "output: %s\n", r.Output)
	return b.String()
}

// registerWorkflowTools adds the workflow tools.
func registerWorkflowTools(srv *mcp.Server, wf workflow.Service) {
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: jsonschema.Ptr(false)}
	boundTool[workflowStartArgs]{
		tool: &mcp.Tool{Name: ToolWorkflowStart, Title: "Start a workflow run",
			Description: "Start a durable run of a registered workflow (its highest version unless version is given) with a JSON input; returns the run (run_id, status)."},
		params: []param{
			{name: "workflow", desc: "The workflow's name."},
			{name: "version", desc: "The version to run (0 or absent: the highest registered)."},
			{name: "input", desc: "The run's input: any JSON value."},
			{name: "run_id", desc: "Choose the run id (starting an existing id returns that run)."},
		},
		req: []string{"workflow"},
		call: func(ctx context.Context, _ *mcp.CallToolRequest, in *workflowStartArgs) (*mcp.CallToolResult, error) {
			input, err := rawArg("input", in.Input)
			if err != nil {
				return nil, err
			}
			req := workflow.StartRequest{Workflow: in.Workflow, Version: in.Version, Input: input, RunID: in.RunID}
			if err := auth.Bind(ctx, &req); err != nil {
				return nil, err
			}
			r, err := wf.Start(ctx, req)
			if err != nil {
				return nil, fmt.Errorf("workflow_start: %w", err)
			}
			v := workflow.ViewOf(r)
			return structured(renderWorkflowRun(v), v), nil
		},
	}.register(srv)
	boundTool[workflowRunArgs]{
		tool: &mcp.Tool{Name: ToolWorkflowShow, Title: "Show a workflow run", Annotations: ro,
			Description: "A run's status (running, sleeping, waiting, completed, failed, cancelled), its journal (steps, sleeps, signal waits, tasks, children) in order, its error and output."},
		params: []param{{name: "run_id", desc: "The run's id."}},
		req:    []string{"run_id"},
		call: func(ctx context.Context, _ *mcp.CallToolRequest, in *workflowRunArgs) (*mcp.CallToolResult, error) {
			r, err := wf.Show(ctx, in.RunID)
			if err != nil {
				return nil, fmt.Errorf("workflow_show: %w", err)
			}
			v := workflow.ViewOf(r)
			return structured(renderWorkflowRun(v), v), nil
		},
	}.register(srv)
	boundTool[workflowListArgs]{
		tool: &mcp.Tool{Name: ToolWorkflowList, Title: "List workflow runs", Annotations: ro,
			Description: "Runs, newest first (filter by status and workflow), and per registered workflow version its runs in flight."},
		params: []param{
			{name: "status", desc: "Only runs in this status: running, sleeping, waiting, completed, failed or cancelled."},
			{name: "workflow", desc: "Only runs of this workflow."},
			{name: "limit", desc: "At most this many runs (0: all).", refine: between(0, 100000)},
		},
		call: func(ctx context.Context, _ *mcp.CallToolRequest, in *workflowListArgs) (*mcp.CallToolResult, error) {
			l, err := wf.List(ctx, workflow.ListRequest{Status: workflow.Status(in.Status), Workflow: in.Workflow, Limit: in.Limit})
			if err != nil {
				return nil, fmt.Errorf("workflow_list: %w", err)
			}
			var b strings.Builder
			for _, r := range l.Runs {
				fmt.Fprintf(&b, "%s %s v%d %s (%d steps)\n", r.RunID, r.Workflow, r.Version, r.Status, r.Steps)
			}
			return structured(b.String(), l), nil
		},
	}.register(srv)
	boundTool[workflowSignalArgs]{
		tool: &mcp.Tool{Name: ToolWorkflowSignal, Title: "Send a signal to a workflow run",
			Description: "Send a named signal with JSON data to a run (approve, reject, or give it what it waits for); a run waiting for that signal resumes. A finished run refuses signals (conflict)."},
		params: []param{
			{name: "run_id", desc: "The run's id."},
			{name: "name", desc: "The signal's name (letters, digits, '_' or '-')."},
			{name: "data", desc: "The signal's data: any JSON value."},
		},
		req: []string{"run_id", "name"},
		call: func(ctx context.Context, _ *mcp.CallToolRequest, in *workflowSignalArgs) (*mcp.CallToolResult, error) {
			data, err := rawArg("data", in.Data)
			if err != nil {
				return nil, err
			}
			req := workflow.SignalRequest{RunID: in.RunID, Name: in.Name, Data: data}
			if err := auth.Bind(ctx, &req); err != nil {
				return nil, err
			}
			r, err := wf.Signal(ctx, req)
			if err != nil {
				return nil, fmt.Errorf("workflow_signal: %w", err)
			}
			v := workflow.ViewOf(r)
			return structured(renderWorkflowRun(v), v), nil
		},
	}.register(srv)
	boundTool[workflowCancelArgs]{
		tool: &mcp.Tool{Name: ToolWorkflowCancel, Title: "Cancel a workflow run",
			Description: "Ask a run to stop: its running step is interrupted, the compensations of its completed steps run in reverse order, and it ends cancelled."},
		params: []param{
			{name: "run_id", desc: "The run's id."},
			{name: "reason", desc: "Why."},
		},
		req: []string{"run_id"},
		call: func(ctx context.Context, _ *mcp.CallToolRequest, in *workflowCancelArgs) (*mcp.CallToolResult, error) {
			req := workflow.CancelRequest{RunID: in.RunID, Reason: in.Reason}
			if err := auth.Bind(ctx, &req); err != nil {
				return nil, err
			}
			r, err := wf.Cancel(ctx, req)
			if err != nil {
				return nil, fmt.Errorf("workflow_cancel: %w", err)
			}
			v := workflow.ViewOf(r)
			return structured(renderWorkflowRun(v), v), nil
		},
	}.register(srv)
}
