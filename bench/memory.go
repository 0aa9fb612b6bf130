package bench

import (
	"fmt"
	"io"
	"math/rand"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/trellis/trellis/memory"
)

// MemoryConfig sizes the consolidation benchmark.
type MemoryConfig struct {
	// Observations to consolidate in one session run (default 100,000).
	Observations int
	// NearDuplicates is the share of observations that are small edits of
	// an earlier one (default 0.2).
	NearDuplicates float64
}

// MemoryReport is the result of RunMemory.
type MemoryReport struct {
	Observations int     `json:"observations"`
	Seconds      float64 `json:"seconds"`
	FactsCreated int     `json:"facts_created"`
	Updated      int     `json:"facts_updated"`
	Deduplicated int     `json:"deduplicated"`
	HeapMB       float64 `json:"heap_alloc_mb_after"`
	AllocMB      float64 `json:"total_alloc_mb"`
}

// Print writes the report.
func (r *MemoryReport) Print(w io.Writer) {
	fmt.Fprintf(w, "session consolidation of %d observations (~20%% near duplicates): %.2f s (goal < 5 s)\n", r.Observations, r.Seconds)
	fmt.Fprintf(w, "  %d facts created, %d confidence updates, %d deduplicated at 1.0\n", r.FactsCreated, r.Updated, r.Deduplicated)
	fmt.Fprintf(w, "  memory: %.0f MB allocated in total, %.0f MB live after the run\n", r.AllocMB, r.HeapMB)
}

// Observations generates n realistic observations: sentences of 8–17 words
// drawn with a Zipf distribution (s = 1.1) from a vocabulary of 5,000
// words whose most frequent ones are developer words, so common words
// recur everywhere and the tail is long, as in real text; a share of the
// sentences are near duplicates (an earlier sentence with one word changed
// or added).
func Observations(n int, near float64, seed int64) []memory.Observation {
	rng := rand.New(rand.NewSource(seed))
	words := strings.Fields(`the auth middleware token refresh handler cache index query latency error bug fix retry
		timeout database connection pool lock deadlock queue worker lease heartbeat consumer stream subject replay
		projection checkpoint budget step tool call agent session branch merge fact observation graph node frontier
		claim status review complete blocked expand reference file parse serialize validate cycle island chunk
		search ranking bleve tree sitter python golang rust java typescript function method class struct interface
		design architecture pattern security vulnerability performance throughput slow fast memory disk fsync`)
	for i := len(words); i < 5000; i++ {
		words = append(words, "term"+strconv.Itoa(i))
	}
	zipf := rand.NewZipf(rng, 1.1, 1, uint64(len(words)-1))
	types := []string{"insight", "decision", "discovery", "insight", "note"}
	obs := make([]memory.Observation, 0, n)
	var texts []string
	for i := 0; i < n; i++ {
		var text string
		if len(texts) > 0 && rng.Float64() < near {
			base := strings.Fields(texts[rng.Intn(len(texts))])
			if rng.Intn(2) == 0 {
				base[rng.Intn(len(base))] = words[zipf.Uint64()]
			} else {
				base = append(base, words[zipf.Uint64()])
			}
			text = strings.Join(base, " ")
		} else {
			k := 8 + rng.Intn(10)
			parts := make([]string, k)
			for j := range parts {
				parts[j] = words[zipf.Uint64()]
			}
			text = strings.Join(parts, " ")
		}
		texts = append(texts, text)
		obs = append(obs, memory.Observation{ID: "obs" + strconv.Itoa(i), Type: types[rng.Intn(len(types))], Text: text})
	}
	return obs
}

// RunMemory times one session consolidation over generated observations.
func RunMemory(cfg MemoryConfig) *MemoryReport {
	if cfg.Observations <= 0 {
		cfg.Observations = 100000
	}
	if cfg.NearDuplicates <= 0 {
		cfg.NearDuplicates = 0.2
	}
	obs := Observations(cfg.Observations, cfg.NearDuplicates, 1)
	n := 0
	newID := func() string { n++; return "f" + strconv.Itoa(n) }
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	res := memory.ConsolidateSession(nil, obs, newID)
	el := time.Since(start)
	runtime.ReadMemStats(&after)
	return &MemoryReport{
		Observations: cfg.Observations, Seconds: el.Seconds(), FactsCreated: len(res.Created), Updated: len(res.Updated),
		Deduplicated: len(res.Deduplicated), HeapMB: float64(after.HeapAlloc) / (1 << 20),
		AllocMB: float64(after.TotalAlloc-before.TotalAlloc) / (1 << 20),
	}
}
