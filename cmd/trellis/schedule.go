package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/trellis/trellis"
)

func (a *app) scheduleCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "schedule",
		Short: "Periodic schedules: each tick adds one task to a queue",
	}
	c.AddCommand(a.scheduleAdd(), a.scheduleList(), a.scheduleRemove())
	return c
}

// schedules returns the schedule side of a session's service.
func schedules(s *session) (trellis.ScheduleService, error) {
	sc, ok := s.admin.(trellis.ScheduleService)
	if !ok {
		return nil, trellis.Errorf(trellis.CodeInternal, "this server does not offer schedules")
	}
	return sc, nil
}

func (a *app) scheduleAdd() *cobra.Command {
	var req trellis.ScheduleRequest
	var meta []string
	var asJSON bool
	c := &cobra.Command{
		Use:   "add NAME --queue Q (--every DURATION | --cron EXPR) --objective TEXT [task flags]",
		Short: "Create a schedule: every tick (an interval, or a five-field cron expression in UTC) adds one task",
		Example: `  trellis schedule add pulse --queue ops --every 10m --objective "Check the disk space"
  trellis schedule add nightly --queue reports --cron "0 9 * * 1-5" --objective "Build the daily report" --priority 1`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req.Name = args[0]
			m, err := parseMetadata(meta)
			if err != nil {
				return err
			}
			req.Metadata = m
			return a.call(cmd, asJSON, func(ctx context.Context, s *session) (any, error) {
				sc, err := schedules(s)
				if err != nil {
					return nil, err
				}
				return sc.AddSchedule(ctx, req)
			}, func(v any) { printSchedule(a, v.(*trellis.Schedule)) })
		},
	}
	f := c.Flags()
	f.StringVar(&req.Every, "every", "", "tick every interval from now (10m, 1h, 24h)")
	f.StringVar(&req.Cron, "cron", "", `tick at the minutes a cron expression matches, UTC ("0 9 * * 1-5")`)
	f.StringVar(&req.Objective, "objective", "", "the objective of each tick's task (required)")
	f.StringVar(&req.Queue, "queue", trellis.DefaultQueue, "queue the tasks go to")
	f.StringArrayVar(&req.Inputs, "input", nil, "an input; repeatable")
	f.StringVar(&req.Acceptance, "acceptance", "", "how to tell a task is done")
	f.IntVar(&req.MaxToolCalls, "max-tool-calls", trellis.DefaultMaxToolCalls, "tool-call budget")
	f.IntVar(&req.MaxSteps, "max-steps", trellis.DefaultMaxSteps, "step budget")
	f.IntVar(&req.MaxAttempts, "max-attempts", trellis.DefaultMaxAttempts, "claims before a worker pool declares a task dead")
	f.StringArrayVar(&meta, "metadata", nil, "metadata key=value; repeatable")
	f.IntVar(&req.Priority, "priority", trellis.DefaultPriority, fmt.Sprintf("1 (claimed first) to %d (last)", trellis.MaxPriority))
	f.StringVar(&req.ConcurrencyKey, "concurrency-key", "", "a key the queue's per-key limit applies to")
	f.StringVar(&req.Actor, "actor", "", "who asks (recorded in the history; default operator)")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func (a *app) scheduleList() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:     "list",
		Short:   "List the schedules: period, next tick, last tick and its task, ticks missed",
		Example: "  trellis schedule list --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.call(cmd, asJSON, func(ctx context.Context, s *session) (any, error) {
				sc, err := schedules(s)
				if err != nil {
					return nil, err
				}
				list, err := sc.Schedules(ctx)
				return map[string]any{"schedules": list}, err
			}, func(v any) {
				list := v.(map[string]any)["schedules"].([]*trellis.Schedule)
				if len(list) == 0 {
					fmt.Fprintln(a.stdout, "no schedules")
				}
				for _, s := range list {
					printSchedule(a, s)
				}
			})
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func (a *app) scheduleRemove() *cobra.Command {
	var asJSON bool
	var req trellis.RemoveScheduleRequest
	c := &cobra.Command{
		Use:     "remove NAME",
		Short:   "Remove a schedule: no tick adds a task after it",
		Example: "  trellis schedule remove nightly",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req.Name = args[0]
			return a.call(cmd, asJSON, func(ctx context.Context, s *session) (any, error) {
				sc, err := schedules(s)
				if err != nil {
					return nil, err
				}
				return sc.RemoveSchedule(ctx, req)
			}, func(v any) { printSchedule(a, v.(*trellis.Schedule)) })
		},
	}
	c.Flags().StringVar(&req.Actor, "actor", "", "who asks (recorded in the history; default operator)")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func printSchedule(a *app, s *trellis.Schedule) {
	period := "every " + s.Every
	if s.Cron != "" {
		period = "cron " + s.Cron + " (UTC)"
	}
	state := ""
	if s.Removed {
		state = " [removed]"
	}
	fmt.Fprintf(a.stdout, "schedule %s%s: queue %s, %s, objective %q\n", s.Name, state, s.Queue, period, s.Task.Objective)
	if s.NextTick != nil {
		fmt.Fprintf(a.stdout, "  next tick:  %s\n", s.NextTick.Format(time.RFC3339))
	}
	if s.LastTick != nil {
		fmt.Fprintf(a.stdout, "  last tick:  %s  task %s  (%d ticks fired)\n", s.LastTick.Format(time.RFC3339), s.LastTaskID, s.Fired)
	}
	if m := s.LastMissed; m != nil {
		fmt.Fprintf(a.stdout, "  missed:     %d ticks in all; last report: %d from %s to %s (no server took them up)\n",
			s.Missed, m.Count, m.First.Format(time.RFC3339), m.Last.Format(time.RFC3339))
	}
}
