package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/handlers"
)

func (a *app) auditCommand() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:     "audit ID",
		Short:   "Print every event of an aggregate in order: a queue task (ULID), a graph (g…), or GRAPH:TASK",
		Example: "  trellis audit 01J... --json",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.call(cmd, asJSON, func(ctx context.Context, s *session) (any, error) { return handlers.Audit(ctx, s.store, args[0]) }, func(v any) {
				for _, r := range v.([]events.Recorded) {
					actor := r.Actor
					if actor == "" {
						actor = "-"
					}
					fmt.Fprintf(a.stdout, "%s  #%-6d %-10s %-16s %s\n", r.Time.Format(time.RFC3339Nano), r.Seq, r.Type, actor, string(r.Payload))
				}
			})
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print a JSON list of events (each with a type field)")
	return c
}

func (a *app) replayCommand() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:     "replay",
		Short:   "Drop every projection (queue board, checkpoints) and rebuild it from the event log",
		Example: "  trellis replay",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.call(cmd, asJSON, func(ctx context.Context, s *session) (any, error) { return s.replay(ctx) }, func(v any) {
				res := v.(*handlers.ReplayResult)
				for _, p := range res.Projections {
					fmt.Fprintf(a.stdout, "rebuilt %-12s from %s up to #%d\n", p.Name, p.Stream, p.LastSeq)
				}
				fmt.Fprintf(a.stdout, "replay took %d ms\n", res.Millis)
			})
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}
