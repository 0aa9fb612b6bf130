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
	var asJSON bool
	var req trellis.ControlRequest
	use := action + " QUEUE"
	args := cobra.ExactArgs(1)
	switch action {
	case "limit":
		use = "limit QUEUE MAX_IN_FLIGHT"
		args = cobra.ExactArgs(2)
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
			case "limit":
				if _, err := fmt.Sscanf(args[1], "%d", &req.MaxInFlight); err != nil {
					return trellis.FieldError("max_in_flight", "%q is not a number", args[1])
				}
			case "lease":
				d, err := time.ParseDuration(args[1])
				if err != nil {
					return trellis.FieldError("lease", "%q is not a duration (e.g. 30s, 2m)", args[1])
				}
				req.LeaseSeconds = d.Seconds()
			}
			return a.call(cmd, asJSON, func(ctx context.Context, s *session) (any, error) { return s.admin.Control(ctx, req) },
				func(v any) { printControls(a, v.(*trellis.QueueControls)) })
		},
	}
	if action == "pause" {
		c.Flags().StringVar(&req.Reason, "reason", "", "why (recorded in the history)")
	}
	c.Flags().StringVar(&req.Actor, "actor", "", "who asks (recorded in the history; default operator)")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func (a *app) queueControls() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:     "controls QUEUE",
		Short:   "Show a queue's controls: paused, global concurrency limit, lease",
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
	fmt.Fprintf(a.stdout, "queue %s: %s, max in flight %s, lease %s\n", c.Queue, state, limit, lease)
}
