package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
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
			return a.call(cmd, asJSON, func(ctx context.Context, s *session) (any, error) {
				recs, err := s.audit(ctx, args[0])
				if err != nil || !asJSON {
					return recs, err
				}
				return auditEvents(recs), nil
			}, func(v any) {
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

// auditEvent is one event as `audit --json` prints it: every field is
// always present (actor is "" when no one acted, as for an add).
type auditEvent struct {
	ID            string          `json:"id"`
	Type          string          `json:"type"`
	AggregateID   string          `json:"aggregate_id"`
	Time          time.Time       `json:"time"`
	Actor         string          `json:"actor"`
	CausationID   string          `json:"causation_id,omitempty"`
	CorrelationID string          `json:"correlation_id,omitempty"`
	Schema        int             `json:"schema"`
	Payload       json.RawMessage `json:"payload"`
	Stream        string          `json:"stream"`
	Subject       string          `json:"subject"`
	Seq           uint64          `json:"seq"`
}

func auditEvents(recs []events.Recorded) []auditEvent {
	out := make([]auditEvent, 0, len(recs))
	for _, r := range recs {
		payload := r.Payload
		if len(payload) == 0 {
			payload = json.RawMessage("null")
		}
		out = append(out, auditEvent{ID: r.ID, Type: r.Type, AggregateID: r.AggregateID, Time: r.Time, Actor: r.Actor,
			CausationID: r.CausationID, CorrelationID: r.CorrelationID, Schema: r.Schema, Payload: payload,
			Stream: r.Stream, Subject: r.Subject, Seq: r.Seq})
	}
	return out
}

func (a *app) replayCommand() *cobra.Command {
	var asJSON bool
	// The list comes from the service itself, so it names every
	// projection replay rebuilds.
	names := strings.Join(handlers.NewService(nil, handlers.ServiceConfig{}).ProjectionNames(), ", ")
	c := &cobra.Command{
		Use:   "replay",
		Short: "Drop every projection (" + names + ") and rebuild it from the event log",
		Long: "Drops every projection and rebuilds it from the event log, in this order: " + names + ".\n" +
			"With a server running, the server rebuilds its own projections.",
		Example: "  trellis replay\n  trellis replay --json",
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
