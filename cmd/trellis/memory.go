package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/trellis/trellis"
)

// withMemory runs fn with the session's memory service (see call).
func (a *app) withMemory(cmd *cobra.Command, asJSON bool, fn func(ctx context.Context, m trellis.MemoryService) (any, error), human func(any)) error {
	return a.call(cmd, asJSON, func(ctx context.Context, s *session) (any, error) { return fn(ctx, s.memory) }, human)
}

func (a *app) taskCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "task",
		Short: "Agent tasks: create, join, objectives, complete agents and tasks with consolidation",
	}
	c.AddCommand(a.taskCreate(), a.taskJoin(), a.taskObjective(), a.taskCompleteAgent(), a.taskComplete(),
		a.taskShow(), a.taskList(), a.taskContext())
	return c
}

func (a *app) printTask(v *trellis.AgentTaskView) {
	fmt.Fprintf(a.stdout, "task %s  %s  [%s]  branch %s (parent %s)\n", v.TaskID, v.Name, v.Status, v.Branch, v.ParentBranch)
	if v.Description != "" {
		fmt.Fprintf(a.stdout, "  %s\n", v.Description)
	}
	for _, o := range v.Objectives {
		agent := ""
		if o.AgentID != "" {
			agent = " (" + o.AgentID + ")"
		}
		fmt.Fprintf(a.stdout, "  %-8s %-8s %s%s\n", o.ObjectiveID, o.Status, o.Description, agent)
	}
	for _, ag := range v.Agents {
		state := "working"
		if ag.Completed {
			state = "completed"
		}
		fmt.Fprintf(a.stdout, "  agent %s (%s) %s on %s\n", ag.AgentID, ag.Role, state, ag.Branch)
		if ag.Summary != "" {
			fmt.Fprintf(a.stdout, "    %s\n", ag.Summary)
		}
	}
	fmt.Fprintf(a.stdout, "  progress: %d done, %d active, %d todo, %d blocked\n", v.Progress["done"], v.Progress["active"], v.Progress["todo"], v.Progress["blocked"])
}

func (a *app) printReport(r *trellis.ConsolidationReport) {
	for _, sub := range r.Runs {
		fmt.Fprintf(a.stdout, "%s: %s\n", sub.Type, sub.Summary)
	}
	fmt.Fprintf(a.stdout, "%s: %s\n", r.Type, r.Summary)
	if len(r.Durable)+len(r.Ephemeral) > 0 {
		fmt.Fprintf(a.stdout, "  durable: %s\n  ephemeral: %s\n", strings.Join(r.Durable, ", "), strings.Join(r.Ephemeral, ", "))
	}
}

func (a *app) taskCreate() *cobra.Command {
	var req trellis.AgentTaskCreateRequest
	var asJSON bool
	c := &cobra.Command{
		Use:     "create --name NAME",
		Short:   "Create a task (branch task/<name>) with objectives; names are unique among open tasks",
		Example: `  trellis task create --name fix-auth --description "Fix the auth middleware" --objective "Fix middleware" --objective "Add tests"`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withMemory(cmd, asJSON, func(ctx context.Context, m trellis.MemoryService) (any, error) { return m.TaskCreate(ctx, req) },
				func(v any) { a.printTask(v.(*trellis.AgentTaskView)) })
		},
	}
	c.Flags().StringVar(&req.Name, "name", "", "task name (required)")
	c.Flags().StringVar(&req.Description, "description", "", "what the task is about")
	c.Flags().StringArrayVar(&req.Objectives, "objective", nil, "an objective; repeatable")
	c.Flags().StringVar(&req.Parent, "parent", "main", "parent branch")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func (a *app) taskJoin() *cobra.Command {
	var req trellis.AgentTaskJoinRequest
	var asJSON bool
	c := &cobra.Command{
		Use:     "join TASK --agent ID --role ROLE",
		Short:   "Assign an agent to a task (branch task/<name>/<agent>)",
		Example: "  trellis task join fix-auth --agent agent_1 --role implementer",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req.Task = args[0]
			return a.withMemory(cmd, asJSON, func(ctx context.Context, m trellis.MemoryService) (any, error) { return m.TaskJoin(ctx, req) },
				func(v any) {
					r := v.(*trellis.AgentTaskJoinResult)
					fmt.Fprintf(a.stdout, "agent %s joined task %s as %s on branch %s\n", r.AgentID, r.TaskID, r.Role, r.Branch)
				})
		},
	}
	c.Flags().StringVar(&req.Agent, "agent", "", "agent id (required)")
	c.Flags().StringVar(&req.Role, "role", "", "role (required)")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func (a *app) taskObjective() *cobra.Command {
	var req trellis.AgentTaskObjectiveRequest
	var asJSON bool
	c := &cobra.Command{
		Use:     "objective TASK OBJ_ID --status todo|active|done|blocked",
		Short:   "Update an objective's status (todo -> active -> done | blocked; done is final)",
		Example: "  trellis task objective fix-auth obj-1 --status active --agent agent_1",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			req.Task, req.ObjectiveID = args[0], args[1]
			return a.withMemory(cmd, asJSON, func(ctx context.Context, m trellis.MemoryService) (any, error) { return m.TaskObjective(ctx, req) },
				func(v any) { a.printTask(v.(*trellis.AgentTaskView)) })
		},
	}
	c.Flags().StringVar(&req.Status, "status", "", "new status (required)")
	c.Flags().StringVar(&req.Agent, "agent", "", "agent working on it")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func (a *app) taskCompleteAgent() *cobra.Command {
	var req trellis.AgentCompleteRequest
	var asJSON bool
	c := &cobra.Command{
		Use:     "complete-agent TASK --agent ID",
		Short:   "Finish an agent's work: session and agent consolidation, merge into the task branch, summary",
		Example: "  trellis task complete-agent fix-auth --agent agent_1",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req.Task = args[0]
			return a.withMemory(cmd, asJSON, func(ctx context.Context, m trellis.MemoryService) (any, error) { return m.TaskCompleteAgent(ctx, req) },
				func(v any) { a.printReport(v.(*trellis.ConsolidationReport)) })
		},
	}
	c.Flags().StringVar(&req.Agent, "agent", "", "agent id (required)")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func (a *app) taskComplete() *cobra.Command {
	var req trellis.AgentTaskCompleteRequest
	var asJSON bool
	c := &cobra.Command{
		Use:   "complete TASK [--merge] [--force]",
		Short: "Complete a task: classify its facts durable or ephemeral; --merge merges the durable ones into the parent branch",
		Long: `Completes a task: the task consolidation classifies the task branch's facts as durable or ephemeral, and
with --merge the durable ones are merged into the parent branch.

A task whose objectives are not all done, or whose agents have not all completed (task complete-agent),
is not completed: the command exits 4 (conflict) naming them. --force completes it anyway and warns
on stderr what was left unfinished.`,
		Example: "  trellis task complete fix-auth --merge --json\n  trellis task complete fix-auth --force",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req.Task = args[0]
			return a.withMemory(cmd, asJSON, func(ctx context.Context, m trellis.MemoryService) (any, error) {
				if req.Force {
					t, err := m.TaskShow(ctx, req.Task)
					if err != nil {
						return nil, err
					}
					if open := t.Unfinished(); len(open) > 0 && t.Status == "open" {
						fmt.Fprintf(a.stderr, "trellis: warning: completing task %s with unfinished work (--force): %s\n", t.Name, strings.Join(open, "; "))
					}
				}
				return m.TaskComplete(ctx, req)
			}, func(v any) { a.printReport(v.(*trellis.ConsolidationReport)) })
		},
	}
	c.Flags().BoolVar(&req.Merge, "merge", false, "merge durable facts into the parent branch")
	c.Flags().BoolVar(&req.Force, "force", false, "complete the task even with objectives not done or agents still working (warns what is unfinished)")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func (a *app) taskShow() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:     "show TASK",
		Short:   "Show a task (by name or id)",
		Example: "  trellis task show fix-auth",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withMemory(cmd, asJSON, func(ctx context.Context, m trellis.MemoryService) (any, error) { return m.TaskShow(ctx, args[0]) },
				func(v any) { a.printTask(v.(*trellis.AgentTaskView)) })
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func (a *app) taskList() *cobra.Command {
	var req trellis.AgentTaskListRequest
	var asJSON bool
	c := &cobra.Command{
		Use:     "list [--status open|completed]",
		Short:   "List tasks",
		Example: "  trellis task list --status open",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withMemory(cmd, asJSON, func(ctx context.Context, m trellis.MemoryService) (any, error) { return m.TaskList(ctx, req) },
				func(v any) {
					list := v.([]trellis.AgentTaskView)
					if len(list) == 0 {
						fmt.Fprintln(a.stdout, "no tasks")
					}
					for _, t := range list {
						fmt.Fprintf(a.stdout, "%s  %-24s %-9s %d agents, %d/%d objectives done\n", t.TaskID, t.Name, t.Status, len(t.Agents), t.Progress["done"], len(t.Objectives))
					}
				})
		},
	}
	c.Flags().StringVar(&req.Status, "status", "", "open or completed")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func (a *app) taskContext() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:     "context TASK",
		Short:   "What a newly joining agent needs: metadata, objectives, agent summaries, key facts, progress",
		Example: "  trellis task context fix-auth --json",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withMemory(cmd, asJSON, func(ctx context.Context, m trellis.MemoryService) (any, error) { return m.TaskContext(ctx, args[0]) },
				func(v any) {
					c := v.(*trellis.AgentTaskContextView)
					a.printTask(&c.Task)
					fmt.Fprintln(a.stdout, "  key facts:")
					for _, f := range c.KeyFacts {
						fmt.Fprintf(a.stdout, "    [%s %.2f] %s\n", f.Category, f.Confidence, f.FactText)
					}
				})
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func (a *app) observeCommand() *cobra.Command {
	var req trellis.ObserveRequest
	var asJSON bool
	c := &cobra.Command{
		Use:     "observe --session S --type insight|decision|discovery|<other> --text TEXT (--branch B | --task T --agent A)",
		Short:   "Record an observation an agent made in a session",
		Example: `  trellis observe --task fix-auth --agent agent_1 --session s1 --type discovery --text "The token check skips expired tokens"`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withMemory(cmd, asJSON, func(ctx context.Context, m trellis.MemoryService) (any, error) { return m.Observe(ctx, req) },
				func(v any) {
					o := v.(*trellis.ObservationView)
					fmt.Fprintf(a.stdout, "observation %s on %s (session %s, %s)\n", o.ObservationID, o.Branch, o.Session, o.Type)
				})
		},
	}
	c.Flags().StringVar(&req.Branch, "branch", "", "branch to observe on")
	c.Flags().StringVar(&req.Task, "task", "", "task (with --agent): the agent's branch")
	c.Flags().StringVar(&req.Agent, "agent", "", "agent id (with --task)")
	c.Flags().StringVar(&req.Session, "session", "", "session id (required)")
	c.Flags().StringVar(&req.Type, "type", "", "insight, decision, discovery or another lowercase word (required)")
	c.Flags().StringVar(&req.Text, "text", "", "the observation (required)")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func (a *app) consolidateCommand() *cobra.Command {
	var req trellis.ConsolidateRequest
	var asJSON bool
	c := &cobra.Command{
		Use:   "consolidate --level session|agent|task",
		Short: "Run a consolidation: a session's observations into facts, an agent's facts deduplicated and merged, or a task's facts classified",
		Example: `  trellis consolidate --level session --session s1
  trellis consolidate --level agent --task fix-auth --agent agent_1
  trellis consolidate --level task --task fix-auth [--merge]`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withMemory(cmd, asJSON, func(ctx context.Context, m trellis.MemoryService) (any, error) { return m.Consolidate(ctx, req) },
				func(v any) { a.printReport(v.(*trellis.ConsolidationReport)) })
		},
	}
	c.Flags().StringVar(&req.Level, "level", "", "session, agent or task (required)")
	c.Flags().StringVar(&req.Session, "session", "", "session (level session)")
	c.Flags().StringVar(&req.Task, "task", "", "task (levels agent, task)")
	c.Flags().StringVar(&req.Agent, "agent", "", "agent (level agent)")
	c.Flags().BoolVar(&req.Merge, "merge", false, "level task: merge durable facts into the parent branch")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	var hreq trellis.HistoryRequest
	var hJSON bool
	h := &cobra.Command{
		Use:     "history [--task T]",
		Short:   "List consolidation runs: type, branches, facts created/updated/deduplicated, observations, summary",
		Example: "  trellis consolidate history --task fix-auth --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withMemory(cmd, hJSON, func(ctx context.Context, m trellis.MemoryService) (any, error) { return m.History(ctx, hreq) },
				func(v any) {
					for _, r := range v.([]trellis.ConsolidationReport) {
						fmt.Fprintf(a.stdout, "%s  %-15s %s -> %s: %s\n", r.Time, r.Type, r.SourceBranch, r.TargetBranch, r.Summary)
					}
				})
		},
	}
	h.Flags().StringVar(&hreq.Task, "task", "", "only this task's runs")
	h.Flags().BoolVar(&hJSON, "json", false, "print JSON")
	c.AddCommand(h)
	return c
}

func (a *app) factsCommand() *cobra.Command {
	var req trellis.FactsRequest
	var asJSON bool
	c := &cobra.Command{
		Use:     "facts",
		Short:   "Query facts: by branch, status (active|superseded|archived), category, text",
		Example: "  trellis facts --branch task/fix-auth --status active --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withMemory(cmd, asJSON, func(ctx context.Context, m trellis.MemoryService) (any, error) { return m.Facts(ctx, req) },
				func(v any) {
					list := v.([]trellis.FactView)
					if len(list) == 0 {
						fmt.Fprintln(a.stdout, "no facts")
					}
					for _, f := range list {
						fmt.Fprintf(a.stdout, "%s  %-10s %-12s %.2f  %-22s %s\n", f.FactID, f.Status, f.Category, f.Confidence, f.Branch, f.FactText)
					}
				})
		},
	}
	c.Flags().StringVar(&req.Branch, "branch", "", "branch")
	c.Flags().StringVar(&req.Status, "status", "", "active, superseded or archived")
	c.Flags().StringVar(&req.Category, "category", "", "category")
	c.Flags().StringVar(&req.Query, "query", "", "text contained (case-insensitive)")
	c.Flags().StringVar(&req.Task, "task", "", "facts of one task")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}
