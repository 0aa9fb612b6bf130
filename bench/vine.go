package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/handlers"
	"github.com/trellis/trellis/vine"
	"github.com/trellis/trellis/vinegraph"
)

// VineConfig sizes the VINE claim benchmark.
type VineConfig struct {
	// Tasks is the number of ready leaf tasks under the root (default 500).
	Tasks int
	// Agents claim concurrently, each with its own handler as separate
	// processes would (default 8).
	Agents int
}

// VineReport is the result of RunVine.
type VineReport struct {
	Tasks             int     `json:"tasks"`
	Agents            int     `json:"agents"`
	RawAppendPerSec   float64 `json:"raw_checked_append_per_sec"`
	ClaimsPerSec      float64 `json:"claims_per_sec"`
	Ratio             float64 `json:"claims_vs_raw_append_ratio"`
	DirectPerSec      float64 `json:"claims_per_sec_separate_handlers"`
	ProjectionReadMs  float64 `json:"projection_frontier_read_ms"`
	FileFrontierMs    float64 `json:"file_parse_validate_frontier_ms"`
	Batch1000OpsMs    float64 `json:"batch_1000_ops_ms"`
	FrontierGraphSize int     `json:"frontier_graph_nodes"`
	BigNodes          int     `json:"big_graph_nodes"`
	BigBytes          int     `json:"big_graph_bytes"`
	BigImportNextMs   float64 `json:"big_graph_import_and_next_ms"`
	BigClaimMs        float64 `json:"big_graph_claim_ms"`
	BigFirstClaimMs   float64 `json:"big_graph_first_claim_ms"`
	BigClaims         int     `json:"big_graph_claims"`
}

// Print writes the report.
func (r *VineReport) Print(w io.Writer) {
	fmt.Fprintf(w, "VINE: %d ready tasks, %d agents claiming at once, same embedded server\n", r.Tasks, r.Agents)
	fmt.Fprintf(w, "  raw JetStream checked append        %10.0f /s\n", r.RawAppendPerSec)
	fmt.Fprintf(w, "  Trellis atomic claims via one server %9.0f /s   (ratio %.2f; each claim: reconcile the file, decide, checked append, rewrite the file)\n", r.ClaimsPerSec, r.Ratio)
	fmt.Fprintf(w, "  same, %d separate handlers racing    %9.0f /s   (as %d servers on one graph: every lost race reloads and retries)\n", r.Agents, r.DirectPerSec, r.Agents)
	fmt.Fprintf(w, "  %d-node graph: parse+validate+frontier from the file %.2f ms (goal < 20 ms); frontier read from the projection %.3f ms (goal < 1 ms)\n",
		r.FrontierGraphSize, r.FileFrontierMs, r.ProjectionReadMs)
	fmt.Fprintf(w, "  1,000-operation batch on a 1,000-node graph: %.2f ms\n", r.Batch1000OpsMs)
	fmt.Fprintf(w, "  %d-node graph (%.1f MB .vine): imported and its frontier read by vine next in %.0f ms (goal < 2000 ms); one claim %.1f ms (median of %d; the first %.1f ms; goal < 20 ms)\n",
		r.BigNodes, float64(r.BigBytes)/(1<<20), r.BigImportNextMs, r.BigClaimMs, r.BigClaims, r.BigFirstClaimMs)
}

// RunVine measures claims/s of concurrent agents on one graph beside the
// raw checked-append rate, and the frontier timings on a 10,000-node graph.
func RunVine(ctx context.Context, store *events.Store, cfg VineConfig) (*VineReport, error) {
	if cfg.Tasks <= 0 {
		cfg.Tasks = 500
	}
	if cfg.Agents <= 0 {
		cfg.Agents = 8
	}
	rep := &VineReport{Tasks: cfg.Tasks, Agents: cfg.Agents, FrontierGraphSize: 10000}
	var err error
	if rep.RawAppendPerSec, err = rawCheckedAppend(ctx, store, QueueConfig{Tasks: cfg.Tasks, Workers: cfg.Agents}); err != nil {
		return nil, err
	}
	ws, err := os.MkdirTemp("", "trellis-bench-vine-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(ws)
	var b strings.Builder
	b.WriteString("vine 1.2.0\n---\n[root] Root (notstarted)\n")
	for i := 0; i < cfg.Tasks; i++ {
		fmt.Fprintf(&b, "-> t%05d\n", i)
	}
	for i := 0; i < cfg.Tasks; i++ {
		fmt.Fprintf(&b, "---\n[t%05d] Task %d (notstarted)\n", i, i)
	}
	shared := handlers.NewService(store, handlers.ServiceConfig{DataDir: filepath.Join(ws, "shared"), Vine: vinegraph.Config{Roots: []string{ws}}})
	one := make([]*handlers.Service, cfg.Agents)
	separate := make([]*handlers.Service, cfg.Agents)
	for i := range one {
		one[i] = shared
		separate[i] = handlers.NewService(store, handlers.ServiceConfig{DataDir: filepath.Join(ws, fmt.Sprintf("data%d", i)), Vine: vinegraph.Config{Roots: []string{ws}}})
	}
	if rep.ClaimsPerSec, err = claimAll(ctx, filepath.Join(ws, "one.vine"), b.String(), one, cfg.Tasks); err != nil {
		return nil, err
	}
	if rep.DirectPerSec, err = claimAll(ctx, filepath.Join(ws, "separate.vine"), b.String(), separate, cfg.Tasks); err != nil {
		return nil, err
	}
	rep.Ratio = rep.ClaimsPerSec / rep.RawAppendPerSec
	timeFrontiers(rep)
	if err := timeBigGraph(ctx, ws, store, rep); err != nil {
		return nil, fmt.Errorf("big graph: %w", err)
	}
	return rep, nil
}

// timeBigGraph imports a 50,000-node graph (about 6.5 MB of text, stored
// through the log's large-payload path) and reads its frontier, as
// `trellis vine import` then `trellis vine next` would, then claims one
// task.
func timeBigGraph(ctx context.Context, ws string, store *events.Store, rep *VineReport) error {
	svc := handlers.NewService(store, handlers.ServiceConfig{DataDir: filepath.Join(ws, "big"), Vine: vinegraph.Config{Roots: []string{ws}}})
	if err := svc.Start(ctx); err != nil {
		return err
	}
	defer svc.Close()
	rep.BigNodes = 50000
	text := wideDeepGraphDescribed(rep.BigNodes)
	rep.BigBytes = len(text)
	file := filepath.Join(ws, "big.vine")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		return err
	}
	start := time.Now()
	if _, err := svc.VineImport(ctx, trellis.VineFileRequest{File: file}); err != nil {
		return err
	}
	if _, err := svc.VineNext(ctx, trellis.VineFileRequest{File: file}); err != nil {
		return err
	}
	rep.BigImportNextMs = float64(time.Since(start)) / float64(time.Millisecond)
	// Claims one after the other: each claimed task is then completed
	// (not timed), which makes the next one in the chain ready.
	rep.BigClaims = 9
	times := make([]float64, 0, rep.BigClaims)
	for i := 0; i < rep.BigClaims; i++ {
		start = time.Now()
		c, err := svc.VineClaim(ctx, trellis.VineClaimRequest{File: file, Agent: "bench"})
		if err != nil {
			return err
		}
		times = append(times, float64(time.Since(start))/float64(time.Millisecond))
		if c.Node == nil {
			return fmt.Errorf("claim %d: nothing ready", i)
		}
		if _, err := svc.VineWrite(ctx, trellis.VineWriteRequest{File: file, Agent: "bench",
			Operations: []vine.Op{{Op: vine.OpSetStatus, ID: c.Node.Node.ID, Status: vine.StatusComplete}}}); err != nil {
			return err
		}
	}
	rep.BigFirstClaimMs = times[0]
	slices.Sort(times)
	rep.BigClaimMs = times[len(times)/2]
	return nil
}

// wideDeepGraphDescribed is wideDeepGraph with a longer description per
// node (about 130 bytes per node in all).
func wideDeepGraphDescribed(n int) string {
	return strings.ReplaceAll(wideDeepGraph(n), ".\n", ": a longer description, as real plans have, of what to do and why.\n")
}

// claimAll writes the graph, imports it, and times one agent per service
// claiming until no task is ready.
func claimAll(ctx context.Context, file, text string, svcs []*handlers.Service, tasks int) (float64, error) {
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		return 0, err
	}
	if _, err := svcs[0].VineImport(ctx, trellis.VineFileRequest{File: file}); err != nil {
		return 0, err
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	claimed := 0
	errs := make(chan error, len(svcs))
	start := time.Now()
	for i := range svcs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for {
				c, err := svcs[i].VineClaim(ctx, trellis.VineClaimRequest{File: file, Agent: fmt.Sprintf("bench-%d", i)})
				if err != nil {
					errs <- err
					return
				}
				if c.Node == nil {
					return
				}
				mu.Lock()
				claimed++
				mu.Unlock()
			}
		}(i)
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		return 0, err
	}
	if claimed != tasks {
		return 0, fmt.Errorf("claimed %d of %d tasks", claimed, tasks)
	}
	return float64(claimed) / elapsed.Seconds(), nil
}

// timeFrontiers measures the 10,000-node frontier from a file and from an
// incremental index, and a 1,000-operation batch.
func timeFrontiers(rep *VineReport) {
	text := wideDeepGraph(rep.FrontierGraphSize)
	best := func(n int, f func()) float64 {
		min := time.Duration(1 << 62)
		for i := 0; i < n; i++ {
			start := time.Now()
			f()
			if d := time.Since(start); d < min {
				min = d
			}
		}
		return float64(min) / float64(time.Millisecond)
	}
	rep.FileFrontierMs = best(5, func() {
		g, err := vine.Parse(text)
		if err == nil && vine.Validate(g) == nil {
			_ = vine.Next(g)
		}
	})
	g, _ := vine.Parse(text)
	idx := vine.NewFrontierIndex(g)
	rep.ProjectionReadMs = best(20, func() { _ = idx.Frontier() })
	small, _ := vine.Parse(wideDeepGraph(1000))
	ops := make([]vine.Op, 0, 1000)
	for i := 0; i < 1000; i++ {
		ops = append(ops, vine.Op{Op: vine.OpUpdate, ID: fmt.Sprintf("n%05d", i%999+1), Decisions: []string{fmt.Sprintf("decision %d", i)}})
	}
	rep.Batch1000OpsMs = best(5, func() { _, _ = vine.Apply(small, ops) })
}

// wideDeepGraph is n nodes: each depends on the next one and on one ten
// ahead, so there are long chains and fan-in.
func wideDeepGraph(n int) string {
	var b strings.Builder
	b.WriteString("vine 1.2.0\n---\n")
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString("---\n")
		}
		status := "notstarted"
		if i > n/2 {
			status = "complete"
		}
		fmt.Fprintf(&b, "[n%05d] Node %d (%s)\nDescription of node %d.\n", i, i, status, i)
		if i+1 < n {
			fmt.Fprintf(&b, "-> n%05d\n", i+1)
		}
		if i+10 < n {
			fmt.Fprintf(&b, "-> n%05d\n", i+10)
		}
	}
	return b.String()
}
