package events

import (
	"encoding/json"
	"math"
)

// DecodeEnvelope reads an event's JSON body: exactly what json.Unmarshal
// into an Envelope gives, and the same error when it fails. The bodies
// Trellis writes (Encode: known keys once each, plain-text strings, a
// UTC time, an object or array payload) are read directly, without
// reflection; anything else (escaped characters, non-ASCII text, nulls,
// other keys or spellings, a payload reference, a malformed body) goes
// through json.Unmarshal.
func DecodeEnvelope(data []byte) (Envelope, error) {
	if env, ok := parseEnvelope(data); ok {
		return env, nil
	}
	var env Envelope
	err := json.Unmarshal(data, &env)
	return env, err
}

// The envelope's keys as parseEnvelope knows them (a bit each, to refuse
// a repeated key: json.Unmarshal keeps the last, the direct path
// leaves that to it).
const (
	keyID = 1 << iota
	keyType
	keyAggregate
	keyTime
	keyActor
	keyCausation
	keyCorrelation
	keySchema
	keyPrev
	keyPayload
)

// parseEnvelope reads the envelope directly; false when it cannot prove
// the result is json.Unmarshal's (the caller then uses json.Unmarshal).
func parseEnvelope(data []byte) (Envelope, bool) {
	var e Envelope
	// The string fields' bounds; once read, one string holds their text.
	var bounds [7][2]int
	var fields [7]*string
	nfields, textEnd := 0, 0
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return e, false
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return e, skipSpace(data, i+1) == len(data)
	}
	seen := 0
	for {
		ks, ke, ok := plainQuoted(data, i)
		if !ok {
			return e, false
		}
		i = skipSpace(data, ke+1)
		if i >= len(data) || data[i] != ':' {
			return e, false
		}
		i = skipSpace(data, i+1)
		var key int
		var field *string
		switch string(data[ks:ke]) {
		case "id":
			key, field = keyID, &e.ID
		case "type":
			key, field = keyType, &e.Type
		case "aggregate_id":
			key, field = keyAggregate, &e.AggregateID
		case "actor":
			key, field = keyActor, &e.Actor
		case "causation_id":
			key, field = keyCausation, &e.CausationID
		case "correlation_id":
			key, field = keyCorrelation, &e.CorrelationID
		case "prev":
			key, field = keyPrev, &e.Prev
		case "time":
			key = keyTime
		case "schema":
			key = keySchema
		case "payload":
			key = keyPayload
		default:
			return e, false // another key, another spelling, payload_ref
		}
		if seen&key != 0 {
			return e, false
		}
		seen |= key
		switch {
		case field != nil:
			vs, ve, ok := plainQuoted(data, i)
			if !ok {
				return e, false
			}
			bounds[nfields], fields[nfields] = [2]int{vs, ve}, field
			nfields++
			textEnd = max(textEnd, ve)
			i = ve + 1
		case key == keyTime:
			_, ve, ok := plainQuoted(data, i)
			if !ok || e.Time.UnmarshalJSON(data[i:ve+1]) != nil {
				return e, false
			}
			i = ve + 1
		case key == keySchema:
			end := numberEnd(data, i)
			if end < 0 {
				return e, false
			}
			n, ok := parseInt(data[i:end])
			if !ok {
				return e, false
			}
			e.Schema = n
			i = end
		default: // payload
			end := compositeEnd(data, i)
			if end < 0 || !json.Valid(data[i:end]) {
				return e, false
			}
			e.Payload = append(json.RawMessage(nil), data[i:end]...)
			i = end
		}
		i = skipSpace(data, i)
		if i >= len(data) {
			return e, false
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case '}':
			if skipSpace(data, i+1) != len(data) {
				return e, false
			}
			text := string(data[:textEnd])
			for k := 0; k < nfields; k++ {
				*fields[k] = text[bounds[k][0]:bounds[k][1]]
			}
			return e, true
		default:
			return e, false
		}
	}
}

// skipSpace returns the index of the first byte at or after i that is
// not JSON whitespace.
func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// plainQuoted reads a JSON string at i whose text json.Unmarshal takes
// as it is (printable ASCII, no escape) and returns the bounds of its
// text: data[start:end], data[end] the closing quote.
func plainQuoted(data []byte, i int) (start, end int, ok bool) {
	if i >= len(data) || data[i] != '"' {
		return 0, 0, false
	}
	for j := i + 1; j < len(data); j++ {
		c := data[j]
		switch {
		case c == '"':
			return i + 1, j, true
		case c < 0x20 || c == '\\' || c >= 0x80:
			return 0, 0, false
		}
	}
	return 0, 0, false
}

// numberEnd returns the end of a JSON integer at i (an optional minus,
// then 0 or digits without a leading zero), or -1 when there is none or
// the number goes on as a fraction or exponent (json.Unmarshal refuses
// those for an int, with its own error).
func numberEnd(data []byte, i int) int {
	j := i
	if j < len(data) && data[j] == '-' {
		j++
	}
	start := j
	for j < len(data) && data[j] >= '0' && data[j] <= '9' {
		j++
	}
	switch {
	case j == start, data[start] == '0' && j-start > 1:
		return -1
	case j < len(data) && (data[j] == '.' || data[j] == 'e' || data[j] == 'E'):
		return -1
	}
	return j
}

// parseInt reads an integer numberEnd found; false when it overflows an
// int.
func parseInt(b []byte) (int, bool) {
	neg := b[0] == '-'
	if neg {
		b = b[1:]
	}
	var n uint64
	for _, c := range b {
		d := uint64(c - '0')
		if n > (math.MaxUint64-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	switch {
	case neg && n <= uint64(math.MaxInt)+1:
		return int(-n), true
	case !neg && n <= math.MaxInt:
		return int(n), true
	}
	return 0, false
}

// compositeEnd returns the end of the JSON object or array at i, matching
// its brackets outside strings, or -1 (the value is another kind, or
// unterminated). It does not check the value: json.Valid does.
func compositeEnd(data []byte, i int) int {
	if i >= len(data) || (data[i] != '{' && data[i] != '[') {
		return -1
	}
	depth := 0
	for j := i; j < len(data); j++ {
		switch data[j] {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return j + 1
			}
		case '"':
			for j++; j < len(data) && data[j] != '"'; j++ {
				if data[j] == '\\' {
					j++
				}
			}
		}
	}
	return -1
}
