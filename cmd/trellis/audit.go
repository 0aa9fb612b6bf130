package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

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
			s, err := a.openSession(cmd.Context())
			if err != nil {
				return err
			}
			defer s.close()
			recs, err := handlers.Audit(cmd.Context(), s.store, args[0])
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(a.stdout, recs)
			}
			for _, r := range recs {
				actor := r.Actor
				if actor == "" {
					actor = "-"
				}
				fmt.Fprintf(a.stdout, "%s  #%-6d %-10s %-16s %s\n", r.Time.Format(time.RFC3339Nano), r.Seq, r.Type, actor, string(r.Payload))
			}
			return nil
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
			s, err := a.openSession(cmd.Context())
			if err != nil {
				return err
			}
			defer s.close()
			res, err := s.replay(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(a.stdout, res)
			}
			for _, p := range res.Projections {
				fmt.Fprintf(a.stdout, "rebuilt %-12s from %s up to #%d\n", p.Name, p.Stream, p.LastSeq)
			}
			fmt.Fprintf(a.stdout, "replay took %d ms\n", res.Millis)
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}
