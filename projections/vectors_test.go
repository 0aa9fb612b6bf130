package projections

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/trellis/trellis/events"
)

func vecRec(seq uint64, typ string, payload any) events.Recorded {
	env, err := events.NewEnvelope(time.Now(), typ, "x", "test", events.ChunksSchema, payload)
	if err != nil {
		panic(err)
	}
	return events.Recorded{Envelope: env, Seq: seq, Subject: "trellis.chunks.demo.e0.x"}
}

// TestVectorsProjection: vectors of the projection's model only, filters,
// removal keeps the vector for a returning chunk, snapshot round trip.
func TestVectorsProjection(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	v := NewVectors(dir, "m")
	if seq, err := v.Load(); err != nil || seq != 0 {
		t.Fatalf("load = %d, %v", seq, err)
	}
	chunks := []events.ChunkRecord{
		{ChunkID: "chunk_a", Repo: "demo", SourcePath: "db/tx.go", ChunkType: "method", Tags: []string{"go"}},
		{ChunkID: "chunk_b", Repo: "demo", SourcePath: "lib/text.py", ChunkType: "method", Tags: []string{"python"}},
		{ChunkID: "chunk_c", Repo: "other", SourcePath: "db/tx_test.go", ChunkType: "function", Tags: []string{"go", "test"}},
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(v.Apply(vecRec(1, events.FileIndexed, events.FileIndexedPayload{Added: chunks})))
	if ids, _ := v.Pending(0); strings.Join(ids, ",") != "chunk_a,chunk_b,chunk_c" {
		t.Fatalf("pending = %v", ids)
	}
	emb := func(model string, vs map[string][]float32) events.ChunksEmbeddedPayload {
		p := events.ChunksEmbeddedPayload{Model: model, Dims: 2}
		for id, vec := range vs {
			p.Vectors = append(p.Vectors, events.ChunkVector{ChunkID: id, Vector: events.EncodeVector(vec)})
		}
		return p
	}
	must(v.Apply(vecRec(2, events.ChunksEmbedded, emb("other-model", map[string][]float32{"chunk_a": {1, 0}}))))
	if v.Has("chunk_a") {
		t.Fatal("a vector of another model was taken")
	}
	must(v.Apply(vecRec(3, events.ChunksEmbedded, emb("m", map[string][]float32{"chunk_a": {1, 0}, "chunk_b": {0, 3}, "chunk_c": {1, 1}}))))
	got := func(q []float32, f Filters) string {
		t.Helper()
		res, err := v.Search(q, 10, f)
		must(err)
		var ids []string
		for _, r := range res {
			ids = append(ids, r.ChunkID)
		}
		return strings.Join(ids, ",")
	}
	if s := got([]float32{1, 0.1}, Filters{}); s != "chunk_a,chunk_c,chunk_b" {
		t.Fatalf("search = %s", s)
	}
	for f, want := range map[Filters]string{
		{PathPrefix: "lib"}: "chunk_b", {FileType: "go"}: "chunk_a,chunk_c", {Repo: "other"}: "chunk_c",
		{Tag: "test"}: "chunk_c", {ChunkType: "method"}: "chunk_a,chunk_b", {PathPrefix: "db/tx_"}: "chunk_c",
	} {
		if s := got([]float32{1, 0.1}, f); s != want {
			t.Errorf("filters %+v: %s, want %s", f, s, want)
		}
	}
	if _, err := v.Search([]float32{1, 2, 3}, 10, Filters{}); err == nil {
		t.Fatal("a query of the wrong dimension was accepted")
	}
	// Removal: the chunk leaves the search, its vector stays for its return.
	must(v.Apply(vecRec(4, events.FileDeleted, events.FileDeletedPayload{ChunkIDs: []string{"chunk_a"}})))
	if s := got([]float32{1, 0}, Filters{}); strings.Contains(s, "chunk_a") {
		t.Fatalf("removed chunk found: %s", s)
	}
	must(v.Apply(vecRec(5, events.FileIndexed, events.FileIndexedPayload{Added: chunks[:1]})))
	if ids, _ := v.Pending(0); len(ids) != 0 {
		t.Fatalf("a returning chunk must not be embedded again: pending %v", ids)
	}
	// Snapshot round trip.
	must(v.Close())
	w := NewVectors(dir, "m")
	seq, err := w.Load()
	if err != nil || seq != 5 {
		t.Fatalf("reload = %d, %v", seq, err)
	}
	if s := got([]float32{1, 0.1}, Filters{}); s != "chunk_a,chunk_c,chunk_b" {
		t.Fatalf("search = %s", s)
	}
	a, b, d := w.Stats()
	if a != 3 || b != 3 || d != 2 {
		t.Fatalf("stats = %d %d %d", a, b, d)
	}
	// A mismatched dimension is refused.
	if err := w.Apply(vecRec(6, events.ChunksEmbedded, events.ChunksEmbeddedPayload{Model: "m", Dims: 3,
		Vectors: []events.ChunkVector{{ChunkID: "chunk_a", Vector: events.EncodeVector([]float32{1, 2, 3})}}})); err == nil {
		t.Fatal("a vector of another dimension was taken")
	}
}

// BenchmarkVectorsSearch is the exact flat search over 100,000 chunks
// (the Go standard library's size) at common dimensions.
func BenchmarkVectorsSearch(b *testing.B) {
	for _, dims := range []int{256, 768} {
		b.Run(fmt.Sprintf("100k-d%d", dims), func(b *testing.B) {
			v := NewVectors(b.TempDir(), "m")
			rng := rand.New(rand.NewPCG(1, 2))
			const n = 100_000
			var recs []events.ChunkRecord
			p := events.ChunksEmbeddedPayload{Model: "m", Dims: dims}
			for i := 0; i < n; i++ {
				id := fmt.Sprintf("chunk_%016x", i)
				recs = append(recs, events.ChunkRecord{ChunkID: id, Repo: "bench", SourcePath: fmt.Sprintf("p%d/f%d.go", i%50, i)})
				vec := make([]float32, dims)
				for k := range vec {
					vec[k] = rng.Float32() - 0.5
				}
				p.Vectors = append(p.Vectors, events.ChunkVector{ChunkID: id, Vector: events.EncodeVector(vec)})
			}
			if err := v.Apply(vecRec(1, events.FileIndexed, events.FileIndexedPayload{Added: recs})); err != nil {
				b.Fatal(err)
			}
			if err := v.Apply(vecRec(2, events.ChunksEmbedded, p)); err != nil {
				b.Fatal(err)
			}
			q := make([]float32, dims)
			for k := range q {
				q[k] = rng.Float32() - 0.5
			}
			if _, err := v.Search(q, 50, Filters{}); err != nil { // builds the slab
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := v.Search(q, 50, Filters{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
