package trellis

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// AuditService answers audit queries across aggregates: what happened in a
// queue, a graph or a whole stream over a time window, by whom. It answers
// a page at a time, so neither side holds more than a page of the log.
type AuditService interface {
	// AuditQuery returns one page of the events matching req, in log
	// order, and the cursor of the next page.
	AuditQuery(ctx context.Context, req AuditQuery) (*AuditPage, error)
}

// ProjectionStatus tells how far a running server's projections have
// folded the log: `audit verify` compares it with the streams, so a
// projection showing events the log no longer holds is a finding.
type ProjectionStatus interface {
	// Projections returns the position of every projection the server
	// runs (board, checkpoints, frontiers, tasks, facts, search, ...).
	Projections(ctx context.Context) ([]ProjectionPosition, error)
}

// ProjectionPosition is how far one projection has folded its stream.
type ProjectionPosition struct {
	Projection string `json:"projection"`
	Stream     string `json:"stream"`
	// Applied is the last sequence of Stream it applied (0: none).
	Applied uint64 `json:"applied"`
	// EventID is the id of the event at Applied, when the server applied
	// it since it started ("" when it loaded that position from disk).
	EventID string `json:"event_id,omitempty"`
}

// Paging of audit queries.
const (
	// DefaultAuditLimit is the page size of a query that sets none.
	DefaultAuditLimit = 500
	// MaxAuditLimit is the largest page a query may ask for.
	MaxAuditLimit = 5000
	// MaxAuditPageBytes bounds a page's events as JSON: a page that would
	// exceed it ends early, with a next cursor (so a page fits in one NATS
	// message).
	MaxAuditPageBytes = 512 << 10
	// MaxAuditPayloadBytes bounds the payload a query event carries;
	// larger ones are left out (PayloadOmitted).
	MaxAuditPayloadBytes = 128 << 10
)

// AuditQuery selects events of one stream: those of a queue, of a graph,
// or of a whole stream (exactly one of Queue, Graph, Stream), stored within
// [Since, Until], optionally only those by one actor or of one type.
type AuditQuery struct {
	// Queue selects the events of one task queue (its tasks and its
	// controls).
	Queue string `json:"queue,omitempty"`
	// Graph selects the events of one VINE graph (g + 20 hex).
	Graph string `json:"graph,omitempty"`
	// Stream selects every event of one stream: TRELLIS_QUEUE,
	// TRELLIS_VINE, TRELLIS_CHUNKS, TRELLIS_MEMORY, TRELLIS_TASKS (or the
	// domain alone: queue, vine, chunks, memory, tasks).
	Stream string `json:"stream,omitempty"`
	// Since keeps the events the log stored at or after this time (RFC
	// 3339, or a duration such as 90m meaning that long ago).
	Since string `json:"since,omitempty"`
	// Until keeps the events the log stored at or before this time (same
	// forms as Since).
	Until string `json:"until,omitempty"`
	// Actor keeps only the events this actor caused.
	Actor string `json:"actor,omitempty"`
	// Type keeps only the events of this type (added, claimed, ...).
	Type string `json:"type,omitempty"`
	// Limit is the page size: 0 means DefaultAuditLimit; at most
	// MaxAuditLimit.
	Limit int `json:"limit,omitempty"`
	// Cursor continues a query: the next_cursor of the previous page,
	// with the same other fields.
	Cursor string `json:"cursor,omitempty"`
}

// AuditEvent is one event as the audit shows it: the envelope (every field
// present; actor is "" when no one acted), where the log holds it, when
// the log stored it, and its hash in its aggregate's chain.
type AuditEvent struct {
	ID            string    `json:"id"`
	Type          string    `json:"type"`
	AggregateID   string    `json:"aggregate_id"`
	Time          time.Time `json:"time"`
	Actor         string    `json:"actor"`
	CausationID   string    `json:"causation_id,omitempty"`
	CorrelationID string    `json:"correlation_id,omitempty"`
	Schema        int       `json:"schema"`
	// Payload is the event's payload; null (with PayloadOmitted) when it
	// is larger than MaxAuditPayloadBytes: `trellis audit ID` and `trellis
	// audit export` give it whole.
	Payload json.RawMessage `json:"payload"`
	// PayloadOmitted is true when Payload was left out for its size.
	PayloadOmitted bool `json:"payload_omitted,omitempty"`
	// PayloadBytes is the payload's size when it was left out.
	PayloadBytes int    `json:"payload_bytes,omitempty"`
	Stream       string `json:"stream"`
	Subject      string `json:"subject"`
	Seq          uint64 `json:"seq"`
	// Stored is when the log stored the event (the server's clock); the
	// query's time window applies to it.
	Stored time.Time `json:"stored"`
	// Prev is the hash of the aggregate's previous event ("" for its first
	// event, and for events from before the chain existed).
	Prev string `json:"prev"`
	// Hash is this event's hash: the next event of its aggregate carries it
	// as its prev.
	Hash string `json:"hash"`
}

// AuditPage is one page of an audit query: its events in log order (at
// most the query's limit, fewer when they would exceed MaxAuditPageBytes
// or when the page read many events without a match) and the cursor of the
// next page (absent on the last page; a page may be empty and still have
// one).
type AuditPage struct {
	Events     []AuditEvent `json:"events"`
	NextCursor string       `json:"next_cursor,omitempty"`
}

// Normalize fills the default limit and checks the query's shape (the
// service checks the names against the log).
func (r *AuditQuery) Normalize(now time.Time) error {
	n := 0
	for _, v := range []string{r.Queue, r.Graph, r.Stream} {
		if v != "" {
			n++
		}
	}
	if n != 1 {
		return FieldError("queue", "give exactly one of queue, graph or stream (got %d)", n)
	}
	if r.Queue != "" {
		if err := ValidateQueueName(r.Queue); err != nil {
			return err
		}
	}
	for _, f := range []struct{ name, v string }{{"graph", r.Graph}, {"stream", r.Stream}, {"type", r.Type}} {
		if err := checkToken(f.name, f.v); err != nil {
			return err
		}
	}
	if r.Actor != "" {
		if err := checkItem("actor", r.Actor); err != nil {
			return err
		}
	}
	since, until, err := r.Window(now)
	if err != nil {
		return err
	}
	if !since.IsZero() && !until.IsZero() && until.Before(since) {
		return FieldError("until", "%s is before since %s", until.Format(time.RFC3339Nano), since.Format(time.RFC3339Nano))
	}
	switch {
	case r.Limit < 0:
		return FieldError("limit", "must not be negative (got %d)", r.Limit)
	case r.Limit == 0:
		r.Limit = DefaultAuditLimit
	case r.Limit > MaxAuditLimit:
		return FieldError("limit", "is %d; at most %d allowed", r.Limit, MaxAuditLimit)
	}
	if len(r.Cursor) > 128 {
		return FieldError("cursor", "is %d bytes: pass the next_cursor of the previous page unchanged", len(r.Cursor))
	}
	return nil
}

// Window returns the query's time window (zero times: unbounded), with
// durations counted back from now.
func (r *AuditQuery) Window(now time.Time) (since, until time.Time, err error) {
	if since, err = ParseTimeArg("since", r.Since, now); err != nil {
		return
	}
	until, err = ParseTimeArg("until", r.Until, now)
	return
}

// ParseTimeArg reads a point in time given as RFC 3339 (2026-01-02T15:04:05Z,
// fractions and offsets allowed), a date (2026-01-02, midnight UTC), or a
// duration (90m, 36h, 1h30m: that long before now). Empty gives the zero
// time. field names the argument in the error.
func ParseTimeArg(field, v string, now time.Time) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t.UTC(), nil
	}
	if t, err := time.Parse(time.DateOnly, v); err == nil {
		return t.UTC(), nil
	}
	if d, err := time.ParseDuration(v); err == nil && d > 0 {
		return now.Add(-d).UTC(), nil
	}
	return time.Time{}, FieldError(field, "%q is not a time: give RFC 3339 (2026-01-02T15:04:05Z), a date (2026-01-02) or a positive duration ago (90m, 36h)", truncate(v, 64))
}

// checkToken checks an optional name that becomes one subject token.
func checkToken(field, v string) error {
	if v == "" {
		return nil
	}
	if len(v) > 256 || !utf8.ValidString(v) || strings.ContainsAny(v, ".*> \t\r\n") {
		return FieldError(field, "%q is not a name: at most 256 characters, without '.', '*', '>' or spaces", truncate(v, 64))
	}
	for _, r := range v {
		if r < ' ' || r == 0x7f {
			return FieldError(field, "contains control character %s", strconv.QuoteRune(r))
		}
	}
	return nil
}
