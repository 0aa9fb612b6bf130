package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/trellis/trellis"
)

// queueHeartbeat is queue heartbeat TASK_ID --worker W: an agent keeps a
// claim it made with queue next.
func (a *app) queueHeartbeat() *cobra.Command {
	var asJSON bool
	var req trellis.HeartbeatRequest
	c := &cobra.Command{
		Use:   "heartbeat TASK_ID --worker W",
		Short: "Keep a task claimed with queue next: its lease ends the claim's lease from now",
		Long: "Keep a task claimed with queue next: its lease ends the claim's lease (queue next --lease) from now.\n\n" +
			"Refused (exit 4, conflict) when the task is not claimed by this worker: finished, released, cancelled, " +
			"or its lease already ran out (the task is no longer yours; stop working on it).",
		Example: `  trellis queue heartbeat 01J... --worker agent-1`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req.TaskID = args[0]
			return a.call(cmd, asJSON, func(ctx context.Context, s *session) (any, error) { return s.leases.Heartbeat(ctx, req) },
				func(v any) { printTask(a.stdout, v.(*trellis.Task)) })
		},
	}
	c.Flags().StringVar(&req.Worker, "worker", "", "worker id: the claimant (required)")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

// queueRelease is queue release TASK_ID [--reason TEXT]: an operator
// gives a claimed task back to its queue.
func (a *app) queueRelease() *cobra.Command {
	var asJSON bool
	var req trellis.ReleaseRequest
	c := &cobra.Command{
		Use:   "release TASK_ID [--reason TEXT]",
		Short: "Give a claimed task back to its queue (queued again at once; the attempt does not count)",
		Long: "Give a claimed task back to its queue: for a claim whose agent is gone, rather than wait for its lease.\n" +
			"The task is queued again at once and the attempt does not count; the claimant's heartbeats and outcome are refused " +
			"from then on. A task a worker pool runs is refused: cancel it (queue cancel) or let its lease run out. Admin only.",
		Example: `  trellis queue release 01J... --reason "agent-3 crashed"`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req.TaskID = args[0]
			return a.call(cmd, asJSON, func(ctx context.Context, s *session) (any, error) { return s.leases.ReleaseClaim(ctx, req) },
				func(v any) { printTask(a.stdout, v.(*trellis.Task)) })
		},
	}
	c.Flags().StringVar(&req.Reason, "reason", "", "why (recorded in the task's history)")
	c.Flags().StringVar(&req.Actor, "actor", "", "who asks (recorded in the history; default operator)")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}
