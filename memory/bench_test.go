package memory

import (
	"runtime"
	"sync"
	"testing"
	"time"
)

// peakHeap samples runtime.MemStats.HeapInuse until stopped and returns the
// peak, in bytes.
func peakHeap() (stop func() uint64) {
	var peak uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	sample := func() {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapInuse)
	}
	go func() {
		defer wg.Done()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				sample()
			}
		}
	}()
	return func() uint64 {
		close(done)
		wg.Wait()
		sample()
		return peak
	}
}

// BenchmarkConsolidateSession100k consolidates 100,000 observations (~20%
// near duplicates made by small edits) against 1,000 active facts: with a
// realistic type mix (about a quarter skipped by type), and with every
// observation of a consolidated type.
func BenchmarkConsolidateSession100k(b *testing.B) {
	for _, allTypes := range []bool{false, true} {
		name := "mixed-types"
		if allTypes {
			name = "all-consolidated"
		}
		b.Run(name, func(b *testing.B) {
			g := newTextGen(2026, nil, 6, 25, 0.2)
			g.vocab = vocabulary(20000, g.r)
			g = newTextGen(2026, g.vocab, 6, 25, 0.2)
			active := genFacts(g, 1000, "f")
			obs := genObservations(g, 100000)
			if allTypes {
				for i := range obs {
					obs[i].Type = obsTypes[i%6] // the first six are consolidated types
				}
			}
			runtime.GC()
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			b.ReportAllocs()
			b.ResetTimer()
			stop := peakHeap()
			var res SessionResult
			for range b.N {
				res = ConsolidateSession(active, obs, counterIDs("n"))
			}
			b.StopTimer()
			peak := stop()
			b.ReportMetric(float64(peak-min(peak, before.HeapInuse))/(1<<20), "peak-heap-MB")
			b.Logf("processed %d skipped %d created %d updated %d deduplicated %d",
				res.Processed, res.Skipped, len(res.Created), len(res.Updated), len(res.Deduplicated))
		})
	}
}

// BenchmarkGroupDuplicates100k groups 100,000 facts (~20% near duplicates).
func BenchmarkGroupDuplicates100k(b *testing.B) {
	g := newTextGen(7, nil, 6, 25, 0.2)
	g.vocab = vocabulary(20000, g.r)
	g = newTextGen(7, g.vocab, 6, 25, 0.2)
	facts := genFacts(g, 100000, "f")
	runtime.GC()
	b.ReportAllocs()
	b.ResetTimer()
	var sup []Supersession
	for range b.N {
		_, sup = GroupDuplicates(facts)
	}
	b.StopTimer()
	b.Logf("superseded %d", len(sup))
}
