package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/codememory"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/handlers"
	"github.com/trellis/trellis/projections"
)

// IngestConfig sizes the ingest benchmark.
type IngestConfig struct {
	// Root is the tree to ingest (default $(go env GOROOT)/src).
	Root string
	// Queries is how many queries time the search (default 300).
	Queries int
	// Code, with an embedder, embeds the ingested chunks after the ingest
	// (timed apart) and times hybrid queries too.
	Code codememory.Config
}

// IngestReport is the result of RunIngest.
type IngestReport struct {
	Root            string  `json:"root"`
	Files           int     `json:"files"`
	Chunks          int     `json:"chunks"`
	IngestSeconds   float64 `json:"ingest_seconds"`
	IndexedSeconds  float64 `json:"ingest_and_index_seconds"`
	FilesPerSec     float64 `json:"files_per_sec"`
	ChunksPerSec    float64 `json:"chunks_per_sec"`
	RawIndexSeconds float64 `json:"raw_bleve_index_seconds"`
	RawChunksPerSec float64 `json:"raw_bleve_chunks_per_sec"`
	Ratio           float64 `json:"ingest_vs_raw_ratio"`
	ReingestSeconds float64 `json:"unchanged_reingest_seconds"`
	ReingestShare   float64 `json:"unchanged_reingest_share"`
	IndexMB         float64 `json:"index_mb"`
	PeakRSSMB       float64 `json:"peak_rss_mb"`
	QueryP50Ms      float64 `json:"query_p50_ms"`
	QueryP99Ms      float64 `json:"query_p99_ms"`
	// With an embedder: the embedding of every chunk (apart from the
	// ingest) and hybrid query latency (query embedding included).
	EmbedModel   string  `json:"embed_model,omitempty"`
	EmbedSeconds float64 `json:"embed_seconds,omitempty"`
	EmbedDims    int     `json:"embed_dims,omitempty"`
	HybridP50Ms  float64 `json:"hybrid_query_p50_ms,omitempty"`
	HybridP99Ms  float64 `json:"hybrid_query_p99_ms,omitempty"`
	VectorP50Ms  float64 `json:"vector_search_p50_ms,omitempty"`
}

// Print writes the report.
func (r *IngestReport) Print(w io.Writer) {
	fmt.Fprintf(w, "ingest of %s: %d files, %d chunks\n", r.Root, r.Files, r.Chunks)
	fmt.Fprintf(w, "  ingest (chunk + append events)          %7.1f s\n", r.IngestSeconds)
	fmt.Fprintf(w, "  ingest until searchable (+ projection)  %7.1f s   %6.0f files/s %7.0f chunks/s\n", r.IndexedSeconds, r.FilesPerSec, r.ChunksPerSec)
	fmt.Fprintf(w, "  raw bleve batch index of the same chunks %6.1f s   %14.0f chunks/s\n", r.RawIndexSeconds, r.RawChunksPerSec)
	fmt.Fprintf(w, "  ratio ingest / raw                      %7.2f     (goal >= 0.70)\n", r.Ratio)
	fmt.Fprintf(w, "  unchanged re-ingest                     %7.2f s   (%.1f%% of the first ingest; goal <= 5%%)\n", r.ReingestSeconds, 100*r.ReingestShare)
	fmt.Fprintf(w, "  index %.0f MB, peak RSS %.0f MB; lexical query p50 %.2f ms, p99 %.2f ms (goal p50 < 2 ms)\n", r.IndexMB, r.PeakRSSMB, r.QueryP50Ms, r.QueryP99Ms)
	if r.EmbedModel != "" {
		fmt.Fprintf(w, "  embedding (apart from the ingest)       %7.1f s   %s, %d dimensions\n", r.EmbedSeconds, r.EmbedModel, r.EmbedDims)
		fmt.Fprintf(w, "  hybrid query p50 %.2f ms, p99 %.2f ms (goal p50 < 10 ms; query embedding included); flat vector search alone p50 %.2f ms\n",
			r.HybridP50Ms, r.HybridP99Ms, r.VectorP50Ms)
	}
}

// RunIngest ingests cfg.Root through a Service on store (its projections
// in a temporary data directory), then indexes the same chunks straight
// into a second, raw index, re-ingests unchanged, and times queries.
func RunIngest(ctx context.Context, store *events.Store, cfg IngestConfig) (*IngestReport, error) {
	if cfg.Root == "" {
		cfg.Root = filepath.Join(goroot(), "src")
	}
	if cfg.Queries <= 0 {
		cfg.Queries = 300
	}
	data, err := os.MkdirTemp("", "trellis-bench-ingest-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(data)
	svc := handlers.NewService(store, handlers.ServiceConfig{DataDir: data, Code: cfg.Code})
	if err := svc.Start(ctx); err != nil {
		return nil, err
	}
	defer svc.Close()
	rep := &IngestReport{Root: cfg.Root}
	start := time.Now()
	sum, err := codememory.Ingest(ctx, store, codememory.IngestConfig{Root: cfg.Root, Repo: "bench"})
	if err != nil {
		return nil, err
	}
	rep.IngestSeconds = time.Since(start).Seconds()
	if _, err := svc.Search(ctx, trellis.SearchRequest{Query: "flush"}); err != nil { // waits for the index, flushes the last batch
		return nil, err
	}
	rep.IndexedSeconds = time.Since(start).Seconds()
	rep.Files, rep.Chunks = sum.FilesNew, sum.ChunksAdded
	rep.FilesPerSec = float64(rep.Files) / rep.IndexedSeconds
	rep.ChunksPerSec = float64(rep.Chunks) / rep.IndexedSeconds

	// The raw rate: the same chunk events straight into a fresh index.
	var recs []events.Recorded
	if err := store.Read(ctx, events.StreamChunks, "trellis.chunks.bench.>", 0, func(r events.Recorded) error {
		recs = append(recs, r)
		return nil
	}); err != nil {
		return nil, err
	}
	raw := projections.NewSearch(filepath.Join(data, "raw"))
	if _, err := raw.Load(); err != nil {
		return nil, err
	}
	rawStart := time.Now()
	for _, r := range recs {
		if err := raw.Apply(r); err != nil {
			return nil, err
		}
	}
	if err := raw.Save(recs[len(recs)-1].Seq); err != nil {
		return nil, err
	}
	rep.RawIndexSeconds = time.Since(rawStart).Seconds()
	_ = raw.Close()
	rep.RawChunksPerSec = float64(rep.Chunks) / rep.RawIndexSeconds
	rep.Ratio = rep.ChunksPerSec / rep.RawChunksPerSec

	reStart := time.Now()
	if _, err := codememory.Ingest(ctx, store, codememory.IngestConfig{Root: cfg.Root, Repo: "bench"}); err != nil {
		return nil, err
	}
	rep.ReingestSeconds = time.Since(reStart).Seconds()
	rep.ReingestShare = rep.ReingestSeconds / rep.IngestSeconds

	_, bytes, err := svc.SearchIndex().Stats()
	if err != nil {
		return nil, err
	}
	rep.IndexMB = float64(bytes) / (1 << 20)
	words := strings.Fields("read write buffer parse header request response close error timeout connection server client encode decode json http token file path sort search hash map list string bytes format print scan lock mutex channel context cancel deadline")
	var lat []time.Duration
	for i := 0; i < cfg.Queries; i++ {
		q := words[i%len(words)] + " " + words[(i*7+3)%len(words)]
		t0 := time.Now()
		if _, err := svc.Search(ctx, trellis.SearchRequest{Query: q, TopK: 10}); err != nil {
			return nil, err
		}
		lat = append(lat, time.Since(t0))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	rep.QueryP50Ms = percentileMs(lat, 0.50)
	rep.QueryP99Ms = percentileMs(lat, 0.99)
	if cfg.Code.Embedder != nil {
		es, err := svc.EmbedPending(ctx)
		if err != nil {
			return nil, err
		}
		rep.EmbedModel, rep.EmbedSeconds, rep.EmbedDims = es.Model, es.Seconds, es.Dims
		var hyb, vec []time.Duration
		for i := 0; i < cfg.Queries; i++ {
			q := words[i%len(words)] + " " + words[(i*7+3)%len(words)] + " " + words[(i*11+5)%len(words)]
			t0 := time.Now()
			if _, err := svc.Search(ctx, trellis.SearchRequest{Query: q, TopK: 10, Mode: trellis.SearchHybrid}); err != nil {
				return nil, err
			}
			hyb = append(hyb, time.Since(t0))
			qv, err := cfg.Code.Embedder.Embed(ctx, []string{q})
			if err != nil {
				return nil, err
			}
			t1 := time.Now()
			if _, err := svc.VectorSearch(qv[0], 50, projections.Filters{}); err != nil {
				return nil, err
			}
			vec = append(vec, time.Since(t1))
		}
		sort.Slice(hyb, func(i, j int) bool { return hyb[i] < hyb[j] })
		sort.Slice(vec, func(i, j int) bool { return vec[i] < vec[j] })
		rep.HybridP50Ms, rep.HybridP99Ms, rep.VectorP50Ms = percentileMs(hyb, 0.50), percentileMs(hyb, 0.99), percentileMs(vec, 0.50)
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		rep.PeakRSSMB = float64(ru.Maxrss) / 1024
	}
	return rep, nil
}

// GoSrc returns the Go installation's source tree ($(go env GOROOT)/src),
// or an error when it is missing.
func GoSrc() (string, error) {
	src := filepath.Join(goroot(), "src")
	if _, err := os.Stat(filepath.Join(src, "net", "http")); err != nil {
		return "", fmt.Errorf("no Go source tree at %s: %w", src, err)
	}
	return src, nil
}

// goroot finds the Go installation: $GOROOT, else `go env GOROOT`, else
// /usr/local/go.
func goroot() string {
	if r := os.Getenv("GOROOT"); r != "" {
		return r
	}
	if out, err := exec.Command("go", "env", "GOROOT").Output(); err == nil {
		if r := strings.TrimSpace(string(out)); r != "" {
			return r
		}
	}
	return "/usr/local/go"
}
