package chunking

import "testing"

// BenchmarkChunkServerGo chunks net/http/server.go (about 4,000 lines).
func BenchmarkChunkServerGo(b *testing.B) {
	data := readServerGo(b)
	b.SetBytes(int64(len(data)))
	n := 0
	for b.Loop() {
		chunks, _, err := ChunkFile("net/http/server.go", data)
		if err != nil {
			b.Fatal(err)
		}
		n = len(chunks)
	}
	b.ReportMetric(float64(n), "chunks")
}

// BenchmarkSensitiveContentServerGo scans net/http/server.go for secrets.
func BenchmarkSensitiveContentServerGo(b *testing.B) {
	data := readServerGo(b)
	r := DefaultRules()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if bad, why := r.SensitiveContent("server.go", data); bad {
			b.Fatal(why)
		}
	}
}
