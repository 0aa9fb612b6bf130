package events

import (
	"encoding/json"
	"reflect"
	"testing"
)

// decodeCases are bodies DecodeEnvelope must read exactly as
// json.Unmarshal does: every encodeCases envelope as Encode wrote it,
// and bodies Trellis never writes (another key order, spellings, nulls,
// repeats, escapes, malformed).
func decodeCases(t testing.TB) [][]byte {
	var out [][]byte
	for _, e := range encodeCases() {
		if b, err := Encode(e); err == nil {
			out = append(out, b)
		}
	}
	for _, s := range []string{
		`{"payload":{"a":1},"schema":2,"time":"2026-11-28T22:10:05Z","id":"x"}`,
		` { "id" : "x" , "payload" : [ 1 , "]" , {"}":"\""} ] } `,
		`{}`, ` {} `, `{} x`, `[]`, `null`, ``, `{`, `{"id":"x"`, `{"id":"x",}`, `{"id":"x"}}`,
		`{"ID":"x"}`, `{"Id":"x","id":"y"}`, `{"id":"x","id":"y"}`, `{"id":null}`, `{"id":1}`,
		`{"id":"a\"b"}`, `{"id":"a\u0041"}`, `{"id":"h\u00e9"}`, "{\"id\":\"h\xc3\xa9\"}", "{\"id\":\"bad\xff\"}", "{\"id\":\"tab\there\"}",
		`{"time":"2026-11-28T22:10:05.123456789Z"}`, `{"time":"2026-11-28T22:10:05+01:00"}`, `{"time":"2026-11-28"}`,
		`{"time":"2026-11-28T22:10:05Z "}`, `{"time":null}`, `{"time":1}`,
		`{"schema":0}`, `{"schema":-0}`, `{"schema":-7}`, `{"schema":01}`, `{"schema":1.0}`, `{"schema":1e3}`, `{"schema":-}`,
		`{"schema":9223372036854775807}`, `{"schema":9223372036854775808}`, `{"schema":-9223372036854775808}`,
		`{"schema":-9223372036854775809}`, `{"schema":99999999999999999999999}`, `{"schema":"1"}`,
		`{"payload":null}`, `{"payload":"x"}`, `{"payload":12}`, `{"payload":{}}`, `{"payload":{"a":}}`, `{"payload":{"a":1}`,
		`{"payload":{"a":"\\"}}`, `{"payload":{"a":"\\\""}}`, `{"payload":[1,2,]}`, `{"payload":{"a":1}} `, `{"payload":{"a":1},"payload":[]}`,
		`{"payload_ref":{"digest":"d","size":1},"payload":null}`, `{"other":1,"id":"x"}`, `{"id":"x" "type":"y"}`,
		"{\"payload\":{\"sep\":\"a\u2028b\"}}", `{"payload":{"deep":[[[{"x":[{}]}]]]}}`,
	} {
		out = append(out, []byte(s))
	}
	return out
}

// checkDecode fails when DecodeEnvelope and json.Unmarshal disagree on
// data.
func checkDecode(t *testing.T, data []byte) {
	t.Helper()
	var want Envelope
	wantErr := json.Unmarshal(data, &want)
	got, err := DecodeEnvelope(data)
	if (err != nil) != (wantErr != nil) || (err != nil && err.Error() != wantErr.Error()) {
		t.Fatalf("%q: error %v, json.Unmarshal's %v", data, err, wantErr)
	}
	if err == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%q:\n got %#v\nwant %#v", data, got, want)
	}
	if _, ok := parseEnvelope(data); ok && wantErr != nil {
		t.Fatalf("%q: read directly, but json.Unmarshal refuses it: %v", data, wantErr)
	}
}

// TestDecodeMatchesUnmarshal: DecodeEnvelope reads every body as
// json.Unmarshal does (the same envelope, the same error), so replaying
// the log gives what it gave before.
func TestDecodeMatchesUnmarshal(t *testing.T) {
	for _, data := range decodeCases(t) {
		checkDecode(t, data)
	}
}

// TestDecodeFastPathTaken: the bodies Trellis writes are read directly
// (the point of the direct path), and the ones it cannot prove are not.
func TestDecodeFastPathTaken(t *testing.T) {
	for i, e := range encodeCases()[:4] {
		data, err := Encode(e)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := parseEnvelope(data); !ok {
			t.Fatalf("case %d: %s not read directly", i, data)
		}
	}
	for _, s := range []string{`{"ID":"x"}`, `{"id":"a\"b"}`, `{"id":null}`, `{"payload":null}`, `{"id":"x","id":"y"}`, `{"schema":1.0}`} {
		if _, ok := parseEnvelope([]byte(s)); ok {
			t.Fatalf("%s read directly, must go through json.Unmarshal", s)
		}
	}
}

// FuzzDecodeMatchesUnmarshal checks DecodeEnvelope against
// json.Unmarshal on arbitrary bodies.
func FuzzDecodeMatchesUnmarshal(f *testing.F) {
	for _, data := range decodeCases(f) {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDecode(t, data)
	})
}

// BenchmarkDecodeEnvelope: the read of every dispatch, load and feed
// (was json.Unmarshal).
func BenchmarkDecodeEnvelope(b *testing.B) {
	data, err := Encode(benchEnvelope())
	if err != nil {
		b.Fatal(err)
	}
	b.Run("json.Unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var e Envelope
			_ = json.Unmarshal(data, &e)
		}
	})
	b.Run("DecodeEnvelope", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = DecodeEnvelope(data)
		}
	})
}
