package events

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"
	"time"
)

// encodeCases are envelopes the direct writer must encode exactly as
// json.Marshal does, or hand over to it.
func encodeCases() []Envelope {
	now := time.Date(2026, 11, 28, 22, 10, 5, 123456789, time.UTC)
	base := Envelope{ID: "01JABCDEFGHJKMNPQRSTVWXYZ0", Type: "task.added", AggregateID: "q.01JABC", Time: now, Schema: 1,
		Payload: json.RawMessage(`{"queue":"q","objective":"noop"}`)}
	with := func(f func(*Envelope)) Envelope { e := base; f(&e); return e }
	return []Envelope{
		base,
		with(func(e *Envelope) {
			e.Actor, e.CausationID, e.CorrelationID, e.Prev = "worker:a", "01C", "01R", "sha256-00ff"
		}),
		with(func(e *Envelope) { e.Time = now.Truncate(time.Second) }),
		with(func(e *Envelope) { e.Time = time.Time{} }),
		with(func(e *Envelope) { e.Time = now.In(time.FixedZone("x", 3600)) }),
		with(func(e *Envelope) { e.Time = now.In(time.FixedZone("z", 0)) }),
		with(func(e *Envelope) { e.Time = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }),
		with(func(e *Envelope) { e.Payload = nil }),
		with(func(e *Envelope) { e.Payload = json.RawMessage(" { \"a\" : [1, 2,\n3] } ") }),
		with(func(e *Envelope) { e.Payload = json.RawMessage(`{"html":"<b>&amp;</b>"}`) }),
		with(func(e *Envelope) { e.Payload = json.RawMessage("{\"sep\":\"a\u2028b\u2029\"}") }),
		with(func(e *Envelope) { e.Payload = json.RawMessage(`{"u":"héllo \u00e9 \ud83d\ude00"}`) }),
		with(func(e *Envelope) { e.Payload = json.RawMessage(`{"broken":`) }),
		with(func(e *Envelope) { e.Payload = json.RawMessage(`"\u0000"`) }),
		with(func(e *Envelope) { e.Actor = `quote " back \ slash` }),
		with(func(e *Envelope) { e.Actor = "<script>&" }),
		with(func(e *Envelope) { e.AggregateID = "tab\there\nnewline\x01" }),
		with(func(e *Envelope) { e.Type = "héllo" }),
		with(func(e *Envelope) { e.Type = "bad \xff utf8" }),
		with(func(e *Envelope) { e.Prev = "line\u2028sep" }),
		with(func(e *Envelope) { e.Schema = -7 }),
		with(func(e *Envelope) { e.PayloadRef = &BlobRef{} }),
		{},
	}
}

// TestEncodeMatchesMarshal: Encode is byte for byte json.Marshal, so the
// stored bodies and the chain's hashes are what they were.
func TestEncodeMatchesMarshal(t *testing.T) {
	for i, e := range encodeCases() {
		want, wantErr := json.Marshal(e)
		got, err := Encode(e)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("case %d: error %v, json.Marshal's %v", i, err, wantErr)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("case %d:\n got %s\nwant %s", i, got, want)
		}
		if err != nil {
			continue
		}
		e2 := e
		e2.PayloadRef = nil
		data, _ := json.Marshal(e2)
		if h := Hash(e); h != blobDigest(data) {
			t.Fatalf("case %d: hash %s, want %s", i, h, blobDigest(data))
		}
	}
}

// TestEncodeFastPathTaken: the hot envelopes are written directly (the
// benchmark's allocations depend on it).
func TestEncodeFastPathTaken(t *testing.T) {
	for i, e := range encodeCases()[:4] {
		if _, ok := appendEnvelope(nil, e); !ok {
			t.Fatalf("case %d: not written directly", i)
		}
	}
	for _, i := range []int{4, 6, 9, 10, 12, 14, 15, 16, 17, 18, 21} {
		if _, ok := appendEnvelope(nil, encodeCases()[i]); ok {
			t.Fatalf("case %d: written directly, must go through json.Marshal", i)
		}
	}
}

// FuzzEncodeMatchesMarshal checks Encode against json.Marshal on
// arbitrary strings and payloads.
func FuzzEncodeMatchesMarshal(f *testing.F) {
	f.Add("01J", "task.added", "q.1", "w", "sha256-ab", []byte(`{"a":1}`), int64(0))
	f.Add("<", "\u2028", "\x00", "\"", "\\", []byte(" [ 1 , \"<\" ] "), int64(-1))
	f.Fuzz(func(t *testing.T, id, typ, agg, actor, prev string, payload []byte, nanos int64) {
		e := Envelope{ID: id, Type: typ, AggregateID: agg, Actor: actor, Prev: prev, Time: time.Unix(0, nanos).UTC(), Payload: payload}
		want, wantErr := json.Marshal(e)
		got, err := Encode(e)
		if (err != nil) != (wantErr != nil) || !bytes.Equal(got, want) {
			t.Fatalf("got %s (%v), want %s (%v)", got, err, want, wantErr)
		}
	})
}

var sinkBytes []byte
var sinkString string

func benchEnvelope() Envelope {
	return Envelope{ID: NewID(time.Now()), Type: "task.claimed", AggregateID: "wbench-128.01JDZQ8Y4R1V5P0M3N6K2X7W9A", Time: time.Now().UTC(),
		Actor: "worker:bench", Schema: 1, Prev: "sha256-9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		Payload: json.RawMessage(`{"worker":"bench","lease_ms":30000,"attempt":1,"claim_id":"01JDZQ8Y4R1V5P0M3N6K2X7W9B"}`)}
}

// BenchmarkEncodeEnvelope: the body of every append (was json.Marshal).
func BenchmarkEncodeEnvelope(b *testing.B) {
	e := benchEnvelope()
	b.Run("json.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sinkBytes, _ = json.Marshal(e)
		}
	})
	b.Run("Encode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sinkBytes, _ = Encode(e)
		}
	})
}

// BenchmarkHash: the chain hash of every event an aggregate appends.
func BenchmarkHash(b *testing.B) {
	e := benchEnvelope()
	b.Run("json.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			e := e
			e.PayloadRef = nil
			data, _ := json.Marshal(e)
			sum := sha256.Sum256(data)
			sinkString = "sha256-" + hex.EncodeToString(sum[:])
		}
	})
	b.Run("Hash", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sinkString = Hash(e)
		}
	})
}
