package events

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"
)

// Encode returns the envelope's JSON encoding, byte for byte what
// json.Marshal(e) returns. Hot events (ids, types, plain-text actors and
// compact payloads, times in UTC) are written directly, without reflection; anything
// the direct writer cannot prove it writes identically (escaped
// characters, a payload reference, a year outside 0..9999) goes through
// json.Marshal.
func Encode(e Envelope) ([]byte, error) {
	if b, ok := appendEnvelope(make([]byte, 0, envelopeSize(e)), e); ok {
		return b, nil
	}
	return json.Marshal(e)
}

// envelopeSize is a close upper estimate of the direct encoding's size.
func envelopeSize(e Envelope) int {
	return 160 + len(e.ID) + len(e.Type) + len(e.AggregateID) + len(e.Actor) + len(e.CausationID) + len(e.CorrelationID) + len(e.Prev) + len(e.Payload)
}

// appendEnvelope appends the envelope's encoding to b; false when it
// cannot be written directly (the caller then uses json.Marshal).
func appendEnvelope(b []byte, e Envelope) ([]byte, bool) {
	if e.PayloadRef != nil {
		return nil, false
	}
	if y := e.Time.Year(); y < 0 || y > 9999 {
		return nil, false
	}
	if _, offset := e.Time.Zone(); offset != 0 {
		return nil, false // UTC ("Z") only: json.Marshal checks other zones
	}
	ok := true
	str := func(b []byte, s string) []byte {
		if !plainString(s) {
			ok = false
			return b
		}
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	b = append(b, `{"id":`...)
	b = str(b, e.ID)
	b = append(b, `,"type":`...)
	b = str(b, e.Type)
	b = append(b, `,"aggregate_id":`...)
	b = str(b, e.AggregateID)
	b = append(b, `,"time":"`...)
	b = e.Time.AppendFormat(b, time.RFC3339Nano)
	b = append(b, '"')
	if e.Actor != "" {
		b = append(b, `,"actor":`...)
		b = str(b, e.Actor)
	}
	if e.CausationID != "" {
		b = append(b, `,"causation_id":`...)
		b = str(b, e.CausationID)
	}
	if e.CorrelationID != "" {
		b = append(b, `,"correlation_id":`...)
		b = str(b, e.CorrelationID)
	}
	b = append(b, `,"schema":`...)
	b = strconv.AppendInt(b, int64(e.Schema), 10)
	if e.Prev != "" {
		b = append(b, `,"prev":`...)
		b = str(b, e.Prev)
	}
	b = append(b, `,"payload":`...)
	if !ok {
		return nil, false
	}
	if e.Payload == nil {
		b = append(b, "null"...)
	} else {
		if !plainPayload(e.Payload) {
			return nil, false
		}
		buf := bytes.NewBuffer(b)
		if err := json.Compact(buf, e.Payload); err != nil {
			return nil, false // json.Marshal reports it
		}
		b = buf.Bytes()
	}
	return append(b, '}'), true
}

// plainString reports whether encoding/json writes s as it is between
// quotes: printable ASCII with nothing it escapes (quote, backslash and
// the HTML characters < > &).
func plainString(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// plainPayload reports whether encoding/json copies the raw payload
// as json.Compact writes it: it holds none of the characters Marshal
// escapes in raw JSON (< > & and the line and paragraph separators).
func plainPayload(p []byte) bool {
	return bytes.IndexAny(p, "<>&") < 0 && !bytes.Contains(p, []byte("\u2028")) && !bytes.Contains(p, []byte("\u2029"))
}
