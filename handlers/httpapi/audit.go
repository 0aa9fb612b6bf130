package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/trellis/trellis/events"
)

// AuditResponse is the body of GET /v1/audit/{id}: every event of the
// aggregate, in log order.
type AuditResponse struct {
	ID     string       `json:"id"`
	Events []AuditEvent `json:"events"`
}

// AuditEvent is one event of an audit trail.
type AuditEvent struct {
	// Seq is the event's stream sequence.
	Seq uint64 `json:"seq"`
	// Subject is the subject the event was stored on.
	Subject string `json:"subject"`
	// Type is the event type (added, claimed, completed, failed, ...).
	Type string `json:"type"`
	// Time is when the event was decided.
	Time time.Time `json:"time"`
	// Actor is the worker or agent that caused it; empty for an add.
	Actor string `json:"actor"`
	// AggregateID is the id the event belongs to.
	AggregateID string `json:"aggregate_id"`
	// ID is the event's own ULID.
	ID string `json:"id"`
	// Payload is the event's JSON payload as stored.
	Payload json.RawMessage `json:"payload"`
}

// audit serves GET /v1/audit/{id}.
func (s *server) audit(w http.ResponseWriter, r *http.Request) error {
	if _, err := queryParams(r); err != nil {
		return err
	}
	id := r.PathValue("id")
	recs, err := s.svc.Audit(r.Context(), id)
	if err != nil {
		return fmt.Errorf("audit %s: %w", id, err)
	}
	return s.writeJSON(w, r, http.StatusOK, newAuditResponse(id, recs))
}

// newAuditResponse converts recorded events to the response.
func newAuditResponse(id string, recs []events.Recorded) AuditResponse {
	out := AuditResponse{ID: id, Events: make([]AuditEvent, 0, len(recs))}
	for _, rec := range recs {
		payload := rec.Payload
		if len(payload) == 0 {
			payload = json.RawMessage("null")
		}
		out.Events = append(out.Events, AuditEvent{
			Seq:         rec.Seq,
			Subject:     rec.Subject,
			Type:        rec.Type,
			Time:        rec.Time,
			Actor:       rec.Actor,
			AggregateID: rec.AggregateID,
			ID:          rec.ID,
			Payload:     payload,
		})
	}
	return out
}

// replayRequest is the body of POST /v1/replay: no options yet, so an
// empty body or {}.
type replayRequest struct{}

// replay serves POST /v1/replay: drops every projection and rebuilds it
// from the log.
func (s *server) replay(w http.ResponseWriter, r *http.Request) error {
	if _, err := queryParams(r); err != nil {
		return err
	}
	var req replayRequest
	if err := s.decodeBody(w, r, &req, true); err != nil {
		return err
	}
	res, err := s.svc.Replay(r.Context())
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	return s.writeJSON(w, r, http.StatusOK, res)
}
