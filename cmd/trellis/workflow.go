package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/workflow"
)

// callWorkflows runs fn on the session's workflow service, printing as
// a.call does.
func (a *app) callWorkflows(cmd *cobra.Command, asJSON bool, fn func(ctx context.Context, wf workflow.Service) (any, error), human func(any)) error {
	return a.call(cmd, asJSON, func(ctx context.Context, s *session) (any, error) {
		wf, err := s.workflows()
		if err != nil {
			return nil, err
		}
		return fn(ctx, wf)
	}, human)
}

// workflows returns the session's workflow API: the engine on the log, or
// the server's NATS API with a token.
func (s *session) workflows() (workflow.Service, error) {
	if s.store != nil {
		return workflow.New(s.store, workflow.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}), nil
	}
	if s.client != nil {
		return s.client.Workflows(), nil
	}
	return nil, trellis.Errorf(trellis.CodeUnavailable, "no workflow API in this session")
}

func (a *app) workflowCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "workflow",
		Short: "Durable workflows in code: start runs, show their steps, send signals, cancel, retry",
		Long: `Workflows are Go functions registered with the workflow package and hosted by worker pools
(see go run ./workflow/example/order worker). Each step's result is journaled as an event on the
TRELLIS_WORKFLOWS stream; a run resumes after any crash by replaying its journal.`,
	}
	c.AddCommand(a.workflowStart(), a.workflowShow(), a.workflowList(), a.workflowSignal(), a.workflowCancel(), a.workflowRetry())
	return c
}

// rawJSON parses a flag's JSON value.
func rawJSON(field, v string) (json.RawMessage, error) {
	if v == "" {
		return nil, nil
	}
	if !json.Valid([]byte(v)) {
		return nil, trellis.FieldError(field, "is not valid JSON: %q", v)
	}
	return json.RawMessage(v), nil
}

func (a *app) workflowStart() *cobra.Command {
	var input, runID string
	var version int
	var asJSON bool
	c := &cobra.Command{
		Use:   "start NAME --input JSON",
		Short: "Start a run of a workflow (pinned to the highest registered version unless --version)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			in, err := rawJSON("input", input)
			if err != nil {
				return err
			}
			return a.callWorkflows(cmd, asJSON, func(ctx context.Context, wf workflow.Service) (any, error) {
				r, err := wf.Start(ctx, workflow.StartRequest{Workflow: args[0], Version: version, Input: in, RunID: runID})
				if err != nil {
					return nil, err
				}
				return map[string]any{"run_id": r.RunID, "workflow": r.Workflow, "version": r.Version, "status": r.Status}, nil
			}, func(v any) {
				m := v.(map[string]any)
				fmt.Fprintf(a.stdout, "Started run %s (%s v%d)\n", m["run_id"], m["workflow"], m["version"])
			})
		},
	}
	c.Flags().StringVar(&input, "input", "", "the run's input (JSON)")
	c.Flags().IntVar(&version, "version", 0, "version to run (default the highest registered)")
	c.Flags().StringVar(&runID, "run-id", "", "choose the run id (starting an existing id returns that run)")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func (a *app) workflowShow() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "show RUN",
		Short: "Show a run: status, steps in journal order, output",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.callWorkflows(cmd, asJSON, func(ctx context.Context, wf workflow.Service) (any, error) {
				r, err := wf.Show(ctx, args[0])
				if err != nil {
					return nil, err
				}
				return workflow.ViewOf(r), nil
			}, func(v any) {
				r := v.(*workflow.View)
				fmt.Fprintf(a.stdout, "Run %s  %s v%d  [%s]\n", r.RunID, r.Workflow, r.Version, r.Status)
				w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
				for _, e := range r.Journal {
					fmt.Fprintf(w, "  %d\t%s\t%s\t%s\t%s\n", e.Pos, e.Kind, e.Name, e.Status, e.Error)
				}
				w.Flush()
				if r.Error != "" {
					fmt.Fprintf(a.stdout, "  Error: %s\n", r.Error)
				}
				fmt.Fprintf(a.stdout, "  Output: %s\n", r.Output)
			})
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func (a *app) workflowList() *cobra.Command {
	var asJSON bool
	var req workflow.ListRequest
	var status string
	c := &cobra.Command{
		Use:   "list [--status S]",
		Short: "List runs (newest first) and, per registered version, its runs in flight",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			req.Status = workflow.Status(status)
			return a.callWorkflows(cmd, asJSON, func(ctx context.Context, wf workflow.Service) (any, error) {
				return wf.List(ctx, req)
			}, func(v any) {
				l := v.(*workflow.RunList)
				w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(w, "RUN\tWORKFLOW\tVERSION\tSTATUS\tSTEPS\tUPDATED")
				for _, r := range l.Runs {
					fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%d\t%s\n", r.RunID, r.Workflow, r.Version, r.Status, r.Steps, r.Updated.Format("2006-01-02 15:04:05"))
				}
				w.Flush()
				fmt.Fprintln(a.stdout, "\nVERSIONS (an old version's pools can retire when it has no run in flight)")
				w = tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
				for _, v := range l.Versions {
					fmt.Fprintf(w, "%s\tv%d\tqueue %s\t%d in flight\n", v.Workflow, v.Version, v.Queue, v.InFlight)
				}
				w.Flush()
			})
		},
	}
	c.Flags().StringVar(&status, "status", "", "only runs in this status (running, sleeping, waiting, completed, failed, cancelled)")
	c.Flags().StringVar(&req.Workflow, "workflow", "", "only runs of this workflow")
	c.Flags().IntVar(&req.Limit, "limit", 0, "at most this many runs (0: all)")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func (a *app) workflowSignal() *cobra.Command {
	var data string
	var asJSON bool
	c := &cobra.Command{
		Use:   "signal RUN NAME [--data JSON]",
		Short: "Send a signal to a run (a run waiting for it resumes)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := rawJSON("data", data)
			if err != nil {
				return err
			}
			return a.callWorkflows(cmd, asJSON, func(ctx context.Context, wf workflow.Service) (any, error) {
				r, err := wf.Signal(ctx, workflow.SignalRequest{RunID: args[0], Name: args[1], Data: d})
				if err != nil {
					return nil, err
				}
				return map[string]any{"run_id": r.RunID, "signal": args[1], "status": r.Status}, nil
			}, func(any) { fmt.Fprintf(a.stdout, "Signal %s sent to run %s\n", args[1], args[0]) })
		},
	}
	c.Flags().StringVar(&data, "data", "", "the signal's data (JSON)")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func (a *app) workflowCancel() *cobra.Command {
	var reason string
	var asJSON bool
	c := &cobra.Command{
		Use:   "cancel RUN",
		Short: "Cancel a run: its running step is interrupted, compensations run in reverse order",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.callWorkflows(cmd, asJSON, func(ctx context.Context, wf workflow.Service) (any, error) {
				r, err := wf.Cancel(ctx, workflow.CancelRequest{RunID: args[0], Reason: reason})
				if err != nil {
					return nil, err
				}
				return map[string]any{"run_id": r.RunID, "cancel_requested": true, "status": r.Status}, nil
			}, func(any) { fmt.Fprintf(a.stdout, "Cancel requested for run %s\n", args[0]) })
		},
	}
	c.Flags().StringVar(&reason, "reason", "", "why")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func (a *app) workflowRetry() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "retry RUN",
		Short: "Resume a failed run from its failed step",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.callWorkflows(cmd, asJSON, func(ctx context.Context, wf workflow.Service) (any, error) {
				r, err := wf.Retry(ctx, workflow.RetryRequest{RunID: args[0]})
				if err != nil {
					return nil, err
				}
				return map[string]any{"run_id": r.RunID, "status": r.Status}, nil
			}, func(any) { fmt.Fprintf(a.stdout, "Run %s resumes\n", args[0]) })
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}
