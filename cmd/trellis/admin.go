package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/trellis/trellis"
)

func (a *app) queueRetry() *cobra.Command {
	var asJSON bool
	var req trellis.RetryRequest
	c := &cobra.Command{
		Use:     "retry TASK_ID",
		Short:   "Queue a failed or dead task again with fresh attempts",
		Example: "  trellis queue retry 01J... ",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req.TaskID = args[0]
			return a.call(cmd, asJSON, func(ctx context.Context, s *session) (any, error) { return s.admin.Retry(ctx, req) },
				func(v any) { printTask(a.stdout, v.(*trellis.Task)) })
		},
	}
	c.Flags().StringVar(&req.Actor, "actor", "", "who asks (recorded in the history; default operator)")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

// queueControl builds pause, resume and limit: cluster-wide controls of a
// queue, recorded as events.
func (a *app) queueControl(action, short, example string) *cobra.Command {
	var asJSON, agent bool
	var req trellis.ControlRequest
	use := action + " QUEUE"
	args := cobra.ExactArgs(1)
	switch action {
	case "lease":
		use = "lease QUEUE DURATION"
		args = cobra.ExactArgs(2)
	}
	c := &cobra.Command{
		Use:     use,
		Short:   short,
		Example: example,
		Args:    args,
		RunE: func(cmd *cobra.Command, args []string) error {
			req.Queue, req.Action = args[0], action
			switch action {
			case "lease":
				d, err := time.ParseDuration(args[1])
				if err != nil {
					return trellis.FieldError("lease", "%q is not a duration (e.g. 30s, 2m)", args[1])
				}
				req.LeaseSeconds = d.Seconds()
				if agent {
					req.Action = "agent_lease"
				}
			}
			return a.call(cmd, asJSON, func(ctx context.Context, s *session) (any, error) { return s.admin.Control(ctx, req) },
				func(v any) { printControls(a, v.(*trellis.QueueControls)) })
		},
	}
	if action == "pause" {
		c.Flags().StringVar(&req.Reason, "reason", "", "why (recorded in the history)")
	}
	if action == "lease" {
		c.Flags().BoolVar(&agent, "agent", false, "set the default lease of the queue's queue next claims (agents) instead: "+
			"used when a claim gives no --lease / lease_seconds (1s to 24h; 0 restores 10m); claims already made keep theirs")
	}
	c.Flags().StringVar(&req.Actor, "actor", "", "who asks (recorded in the history; default operator)")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

// queueCancel is queue cancel TASK_ID [--reason TEXT].
func (a *app) queueCancel() *cobra.Command {
	var asJSON bool
	var req trellis.CancelRequest
	c := &cobra.Command{
		Use:     "cancel TASK_ID [--reason TEXT]",
		Short:   "Cancel a task: at once when scheduled, waiting or queued; a running task's worker stops it at its next heartbeat",
		Example: `  trellis queue cancel 01J... --reason "wrong branch"`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req.TaskID = args[0]
			return a.call(cmd, asJSON, func(ctx context.Context, s *session) (any, error) { return s.admin.Cancel(ctx, req) },
				func(v any) { printTask(a.stdout, v.(*trellis.Task)) })
		},
	}
	c.Flags().StringVar(&req.Reason, "reason", "", "why (recorded in the task's history)")
	c.Flags().StringVar(&req.Actor, "actor", "", "who asks (recorded in the history; default operator)")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

// queueLimit is queue limit QUEUE [MAX_IN_FLIGHT] [--rate R [--burst N]]
// [--per-key N]: each given limit is a control event.
func (a *app) queueLimit() *cobra.Command {
	var asJSON bool
	var rate, actor string
	var burst, perKey int
	c := &cobra.Command{
		Use:   "limit QUEUE [MAX_IN_FLIGHT] [--rate N/s [--burst N]] [--per-key N]",
		Short: "Cap a queue cluster-wide: leased tasks in flight (0 = unlimited), claims per second, tasks running per concurrency key",
		Example: `  trellis queue limit default 10            # at most 10 leased tasks in flight across all workers
  trellis queue limit llm --rate 10/s --burst 5   # at most 10 claims a second, 5 at once (--rate off removes it)
  trellis queue limit agents --per-key 1     # one task per --concurrency-key (e.g. per repository) at a time`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var reqs []trellis.ControlRequest
			if len(args) == 2 {
				r := trellis.ControlRequest{Queue: args[0], Action: "limit", Actor: actor}
				if _, err := fmt.Sscanf(args[1], "%d", &r.MaxInFlight); err != nil {
					return trellis.FieldError("max_in_flight", "%q is not a number", args[1])
				}
				reqs = append(reqs, r)
			}
			if cmd.Flags().Changed("burst") && !cmd.Flags().Changed("rate") {
				return trellis.FieldError("burst", "needs --rate")
			}
			if cmd.Flags().Changed("rate") {
				reqs = append(reqs, trellis.ControlRequest{Queue: args[0], Action: "rate", Rate: rate, Burst: burst, Actor: actor})
			}
			if cmd.Flags().Changed("per-key") {
				reqs = append(reqs, trellis.ControlRequest{Queue: args[0], Action: "per_key", PerKey: perKey, Actor: actor})
			}
			if len(reqs) == 0 {
				return trellis.FieldError("max_in_flight", "give MAX_IN_FLIGHT, --rate or --per-key")
			}
			for _, r := range reqs {
				if err := r.Normalize(); err != nil {
					return err
				}
			}
			return a.call(cmd, asJSON, func(ctx context.Context, s *session) (any, error) {
				var out *trellis.QueueControls
				for _, r := range reqs {
					c, err := s.admin.Control(ctx, r)
					if err != nil {
						return nil, err
					}
					out = c
				}
				return out, nil
			}, func(v any) { printControls(a, v.(*trellis.QueueControls)) })
		},
	}
	c.Flags().StringVar(&rate, "rate", "", "claims per second, minute or hour for the whole cluster: 10/s, 100/m, 1000/h; off removes it")
	c.Flags().IntVar(&burst, "burst", 0, "claims that may go at once under --rate (default one second's worth)")
	c.Flags().IntVar(&perKey, "per-key", 0, "tasks running at once per concurrency key (0 = unlimited)")
	c.Flags().StringVar(&actor, "actor", "", "who asks (recorded in the history; default operator)")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func (a *app) queueControls() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:     "controls QUEUE",
		Short:   "Show a queue's controls: paused, global concurrency limit, lease, rate, per-key limit",
		Example: "  trellis queue controls default",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.call(cmd, asJSON, func(ctx context.Context, s *session) (any, error) { return s.admin.Controls(ctx, args[0]) },
				func(v any) { printControls(a, v.(*trellis.QueueControls)) })
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func printControls(a *app, c *trellis.QueueControls) {
	state := "running"
	if c.Paused {
		state = "paused"
	}
	limit := "unlimited"
	if c.MaxInFlight > 0 {
		limit = fmt.Sprint(c.MaxInFlight)
	}
	lease := "30s (default)"
	if c.LeaseSeconds > 0 {
		lease = (time.Duration(c.LeaseSeconds * float64(time.Second))).String()
	}
	if c.LeaseFrom != nil {
		lease += fmt.Sprintf(" from %s (until then %s)", c.LeaseFrom.Format(time.RFC3339), time.Duration(c.PreviousLeaseSeconds*float64(time.Second)))
	}
	agentLease := trellis.DefaultAgentLease.String() + " (default)"
	if c.AgentLeaseSeconds > 0 {
		agentLease = c.AgentLease().String()
	}
	rate := "no rate"
	if c.RatePerSecond > 0 {
		rate = fmt.Sprintf("rate %s (burst %d)", c.Rate, c.Burst)
	}
	perKey := "unlimited"
	if c.PerKey > 0 {
		perKey = fmt.Sprint(c.PerKey)
	}
	fmt.Fprintf(a.stdout, "queue %s: %s, max in flight %s, lease %s, agent lease %s, %s, per key %s\n", c.Queue, state, limit, lease, agentLease, rate, perKey)
}
