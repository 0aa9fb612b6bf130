package events

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/oklog/ulid/v2"
)

// Envelope wraps every event on the log. It is the JSON body of the
// JetStream message; ID is also sent as Nats-Msg-Id so a retried append is
// stored once.
type Envelope struct {
	ID            string    `json:"id"`
	Type          string    `json:"type"`
	AggregateID   string    `json:"aggregate_id"`
	Time          time.Time `json:"time"`
	Actor         string    `json:"actor,omitempty"`
	CausationID   string    `json:"causation_id,omitempty"`
	CorrelationID string    `json:"correlation_id,omitempty"`
	Schema        int       `json:"schema"`
	// Prev is the Hash of the aggregate's previous event ("" for its
	// first): the events of an aggregate form a hash chain, so a removed,
	// altered or reordered event is detected (trellis audit verify). Set by
	// the command runner, which knows the previous event.
	Prev    string          `json:"prev,omitempty"`
	Payload json.RawMessage `json:"payload"`
	// PayloadRef names the payload in the blob bucket when it was too
	// large for one message (Payload is then null on the stream; the
	// Store's reads fill it in).
	PayloadRef *BlobRef `json:"payload_ref,omitempty"`
}

// Hash is the event's hash for the chain: "sha256-" + the hex SHA-256 of
// its JSON encoding with the payload inline (never the blob reference), so
// it is the same whether the payload was stored in the message or apart.
func Hash(e Envelope) string {
	e.PayloadRef = nil
	data, err := Encode(e)
	if err != nil {
		return ""
	}
	return blobDigest(data)
}

// Recorded is an envelope as stored: with its stream, subject and sequence.
type Recorded struct {
	Envelope
	Stream  string `json:"stream"`
	Subject string `json:"subject"`
	Seq     uint64 `json:"seq"`
}

// NewID returns a fresh ULID string (monotonic within a process is not
// required: ULIDs from crypto/rand entropy sort by millisecond).
func NewID(now time.Time) string {
	return ulid.MustNew(ulid.Timestamp(now), rand.Reader).String()
}

// NewIDs returns n fresh ULID strings in ascending order (one call's ids:
// a bulk add's tasks sort in the order they were given).
func NewIDs(now time.Time, n int) []string {
	entropy := ulid.Monotonic(rand.Reader, 0)
	ids := make([]string, n)
	for i := range ids {
		ids[i] = ulid.MustNew(ulid.Timestamp(now), entropy).String()
	}
	return ids
}

// NewEnvelope builds an envelope with a new ULID and the payload encoded.
func NewEnvelope(now time.Time, typ, aggregateID, actor string, schema int, payload any) (Envelope, error) {
	raw, err := json.Marshal(payload)
	if err != nil {
		return Envelope{}, fmt.Errorf("encode %s payload: %w", typ, err)
	}
	return Envelope{
		ID:          NewID(now),
		Type:        typ,
		AggregateID: aggregateID,
		Time:        now.UTC(),
		Actor:       actor,
		Schema:      schema,
		Payload:     raw,
	}, nil
}

// ErrBadEvent marks an event that cannot mean anything: its payload does
// not decode, or it refers to an aggregate that does not exist. Such an
// event can only come from outside Trellis (anyone who may publish on the
// subjects); projections skip it, loudly, instead of stopping.
var ErrBadEvent = errors.New("bad event")

// DecodePayload decodes the payload into v.
func (e Envelope) DecodePayload(v any) error {
	if err := json.Unmarshal(e.Payload, v); err != nil {
		return fmt.Errorf("decode %s payload of event %s: %w: %w", e.Type, e.ID, ErrBadEvent, err)
	}
	return nil
}
