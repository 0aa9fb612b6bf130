package trellis

import (
	"encoding/json"
	"time"
)

// Live feed limits. They are part of the contract (README, HTTP API).
const (
	// MaxLiveTail bounds LiveRequest.Tail.
	MaxLiveTail = 1000
	// MaxLivePayloadBytes is the largest payload a live event carries;
	// a larger one is omitted (payload_omitted, with its size), and the
	// audit of its aggregate has it.
	MaxLivePayloadBytes = 16 << 10
)

// LiveStreamName returns the stream a domain (queue, vine, chunks, memory,
// tasks, workflows) or stream name (TRELLIS_QUEUE, ...) names, and false
// for anything else.
func LiveStreamName(s string) (string, bool) {
	switch s {
	case "queue", "TRELLIS_QUEUE":
		return "TRELLIS_QUEUE", true
	case "vine", "TRELLIS_VINE":
		return "TRELLIS_VINE", true
	case "chunks", "TRELLIS_CHUNKS":
		return "TRELLIS_CHUNKS", true
	case "memory", "TRELLIS_MEMORY":
		return "TRELLIS_MEMORY", true
	case "tasks", "TRELLIS_TASKS":
		return "TRELLIS_TASKS", true
	case "workflows", "TRELLIS_WORKFLOWS":
		return "TRELLIS_WORKFLOWS", true
	}
	return "", false
}

// LiveRequest selects what a live feed of the log delivers: the events of
// some streams, filtered, from a starting point on, and every new event as
// it is appended.
type LiveRequest struct {
	// Streams are the streams to follow (names or domains); empty: all
	// six domain streams.
	Streams []string `json:"streams,omitempty"`
	// Types keeps only events of these types.
	Types []string `json:"types,omitempty"`
	// Actor keeps only events this actor caused.
	Actor string `json:"actor,omitempty"`
	// Aggregate keeps only events of this aggregate (a task id, graph id,
	// agent task id, ...).
	Aggregate string `json:"aggregate,omitempty"`
	// The starting point, first that applies: After (per stream, start
	// after that sequence: resuming a feed), Since (the first event
	// stored at or after it), Tail (the last Tail events of each stream,
	// before filtering), else only events appended from now on.
	After map[string]uint64 `json:"after,omitempty"`
	Since time.Time         `json:"since,omitzero"`
	Tail  int               `json:"tail,omitempty"`
	// Payloads includes each event's payload (up to MaxLivePayloadBytes).
	Payloads bool `json:"payloads,omitempty"`
}

// Normalize resolves stream domains to names and checks the request.
func (r *LiveRequest) Normalize() error {
	if len(r.Streams) == 0 {
		r.Streams = []string{"TRELLIS_QUEUE", "TRELLIS_VINE", "TRELLIS_CHUNKS", "TRELLIS_MEMORY", "TRELLIS_TASKS", "TRELLIS_WORKFLOWS"}
	}
	seen := map[string]bool{}
	var names []string
	for _, s := range r.Streams {
		name, ok := LiveStreamName(s)
		if !ok {
			return FieldError("stream", "%q is not a stream: use queue, vine, chunks, memory, tasks or workflows (or TRELLIS_QUEUE, ...)", truncate(s, 64))
		}
		if !seen[name] {
			seen[name] = true
			names = append(names, name)
		}
	}
	r.Streams = names
	after := map[string]uint64{}
	for s, seq := range r.After {
		name, ok := LiveStreamName(s)
		if !ok {
			return FieldError("after", "%q is not a stream: use queue, vine, chunks, memory, tasks or workflows", truncate(s, 64))
		}
		after[name] = seq
	}
	r.After = after
	for _, t := range r.Types {
		if !validToken(t) {
			return FieldError("type", "%q is not an event type (one subject token: no '.', '*', '>' or spaces)", truncate(t, 64))
		}
	}
	if err := checkItem("actor", r.Actor); err != nil {
		return err
	}
	if err := checkItem("aggregate", r.Aggregate); err != nil {
		return err
	}
	if r.Tail < 0 || r.Tail > MaxLiveTail {
		return FieldError("tail", "must be between 0 and %d, got %d", MaxLiveTail, r.Tail)
	}
	return nil
}

// validToken reports whether s is one subject token: non-empty, at most
// 256 bytes, no '.', '*', '>', spaces or control characters.
func validToken(s string) bool {
	if s == "" || len(s) > 256 {
		return false
	}
	for _, c := range s {
		if c == '.' || c == '*' || c == '>' || c <= ' ' || c == 0x7f {
			return false
		}
	}
	return true
}

// LiveEvent is one event of a live feed: the envelope without its hash
// chain, where the log holds it, and its payload when asked for and small
// enough.
type LiveEvent struct {
	Stream      string    `json:"stream"`
	Seq         uint64    `json:"seq"`
	Subject     string    `json:"subject"`
	ID          string    `json:"id"`
	Type        string    `json:"type"`
	AggregateID string    `json:"aggregate_id"`
	Time        time.Time `json:"time"`
	Actor       string    `json:"actor"`
	// Payload is the event's payload; absent when not asked for, larger
	// than MaxLivePayloadBytes or stored apart (PayloadOmitted is then
	// true).
	Payload        json.RawMessage `json:"payload,omitempty"`
	PayloadBytes   int             `json:"payload_bytes"`
	PayloadOmitted bool            `json:"payload_omitted,omitempty"`
}
