package bench

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/taskqueue"
)

// AppendConfig sizes the append benchmark.
type AppendConfig struct {
	// Publishers are the concurrencies of raw single appends (default 1, 8, 32).
	Publishers []int
	// Sizes are the atomic batch sizes measured (default 2, 4, 8, 12, 16, 32, 64, 128, 256).
	Sizes []int
	// Appenders are the concurrencies of appends through the Store's group
	// commit (default 1, 8, 32, 128).
	Appenders []int
	// Seconds each measurement runs (default 2).
	Seconds float64
}

func (c AppendConfig) withDefaults() AppendConfig {
	if len(c.Publishers) == 0 {
		c.Publishers = []int{1, 8, 32}
	}
	if len(c.Sizes) == 0 {
		c.Sizes = []int{2, 4, 8, 12, 16, 32, 64, 128, 256}
	}
	if len(c.Appenders) == 0 {
		c.Appenders = []int{1, 8, 32, 128}
	}
	if c.Seconds <= 0 {
		c.Seconds = 2
	}
	return c
}

// AppendReport is the result of RunAppend.
type AppendReport struct {
	Singles   []RateRow        `json:"raw_single_appends"`
	Batches   []BatchRow       `json:"raw_atomic_batches"`
	Crossover int              `json:"crossover_batch_size"`
	Store     []GroupCommitRow `json:"group_commit"`
	BatchMin  int              `json:"default_batch_min"`
	Replicas  int              `json:"replicas"`
}

// RateRow is a rate at one concurrency.
type RateRow struct {
	Concurrency int     `json:"concurrency"`
	PerSec      float64 `json:"events_per_sec"`
	P50Ms       float64 `json:"latency_p50_ms"`
}

// BatchRow is the rate of atomic batches of one size.
type BatchRow struct {
	Size       int     `json:"size"`
	PerSec     float64 `json:"events_per_sec"`
	MsPerBatch float64 `json:"ms_per_batch"`
}

// GroupCommitRow is the rate of appends through the Store at one
// concurrency and how the group commit sent them.
type GroupCommitRow struct {
	Appenders int     `json:"appenders"`
	PerSec    float64 `json:"events_per_sec"`
	Ratio     float64 `json:"ratio_to_raw"`
	P50Ms     float64 `json:"latency_p50_ms"`
	Batches   uint64  `json:"batches"`
	AvgBatch  float64 `json:"avg_batch"`
	Singles   uint64  `json:"singles"`
}

// Print writes the report as tables.
func (r *AppendReport) Print(w io.Writer) {
	fmt.Fprintf(w, "checked appends on one stream (%d replica(s), file storage), same server\n", r.Replicas)
	fmt.Fprintln(w, "  raw single appends (one message, message id, expected-last-subject-sequence on a wildcard):")
	fmt.Fprintf(w, "    %-12s %12s %10s\n", "publishers", "events/s", "p50")
	for _, s := range r.Singles {
		fmt.Fprintf(w, "    %-12d %12.0f %8.2fms\n", s.Concurrency, s.PerSec, s.P50Ms)
	}
	fmt.Fprintln(w, "  raw atomic batches, one publisher (each message keeps its id and its check):")
	fmt.Fprintf(w, "    %-12s %12s %12s\n", "batch size", "events/s", "ms/batch")
	for _, b := range r.Batches {
		fmt.Fprintf(w, "    %-12d %12.0f %12.2f\n", b.Size, b.PerSec, b.MsPerBatch)
	}
	if r.Crossover > 0 {
		fmt.Fprintf(w, "  batches beat the best single-append rate from %d events up (default batch minimum: %d)\n", r.Crossover, r.BatchMin)
	} else {
		fmt.Fprintf(w, "  no batch size measured beat the best single-append rate (default batch minimum: %d)\n", r.BatchMin)
	}
	fmt.Fprintln(w, "  through the Store (group commit), each appender creating its own aggregates:")
	fmt.Fprintf(w, "    %-12s %12s %8s %10s %9s %9s %9s\n", "appenders", "events/s", "ratio", "p50", "batches", "avg size", "singles")
	for _, g := range r.Store {
		fmt.Fprintf(w, "    %-12d %12.0f %8.2f %8.2fms %9d %9.1f %9d\n", g.Appenders, g.PerSec, g.Ratio, g.P50Ms, g.Batches, g.AvgBatch, g.Singles)
	}
	fmt.Fprintln(w, "  ratio: group-commit rate / raw single-append rate at 8 publishers")
}

// RunAppend measures raw single appends, raw atomic batches of several
// sizes and appends through the Store's group commit, on scratch streams
// of store's server.
func RunAppend(ctx context.Context, store *events.Store, cfg AppendConfig) (*AppendReport, error) {
	cfg = cfg.withDefaults()
	js := store.JetStream()
	replicas := max(store.Config().Replicas, 1)
	rep := &AppendReport{BatchMin: events.DefaultBatchMin(replicas), Replicas: replicas}
	_ = js.DeleteStream(ctx, "BENCH_APPEND")
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name: "BENCH_APPEND", Subjects: []string{"bench.BENCH_APPEND.>"}, Storage: jetstream.FileStorage,
		Duplicates: 2 * time.Minute, AllowAtomicPublish: true, Replicas: replicas,
	}); err != nil {
		return nil, err
	}
	defer func() { _ = js.DeleteStream(context.Background(), "BENCH_APPEND") }()
	dur := time.Duration(cfg.Seconds * float64(time.Second))
	var next atomic.Uint64
	body := make([]byte, 300)
	msg := func() *nats.Msg {
		id := strconv.FormatUint(next.Add(1), 36)
		m := &nats.Msg{Subject: "bench.BENCH_APPEND." + id + ".added", Data: body, Header: nats.Header{}}
		m.Header.Set(nats.MsgIdHdr, "m"+id)
		m.Header.Set(nats.ExpectedLastSubjSeqHdr, "0")
		m.Header.Set("Nats-Expected-Last-Subject-Sequence-Subject", "bench.BENCH_APPEND."+id+".>")
		return m
	}
	best := 0.0
	for _, c := range cfg.Publishers {
		rate, p50, err := timed(c, dur, func() (int, error) {
			_, err := js.PublishMsg(ctx, msg())
			return 1, err
		})
		if err != nil {
			return nil, fmt.Errorf("raw singles at %d: %w", c, err)
		}
		rep.Singles = append(rep.Singles, RateRow{Concurrency: c, PerSec: rate, P50Ms: p50})
		best = max(best, rate)
	}
	for _, n := range cfg.Sizes {
		rate, p50, err := timed(1, dur, func() (int, error) {
			msgs := make([]*nats.Msg, n)
			for i := range msgs {
				msgs[i] = msg()
			}
			_, err := events.PublishBatch(ctx, store.Conn(), msgs)
			return n, err
		})
		if err != nil {
			return nil, fmt.Errorf("raw batches of %d: %w", n, err)
		}
		rep.Batches = append(rep.Batches, BatchRow{Size: n, PerSec: rate, MsPerBatch: p50})
		if rep.Crossover == 0 && rate >= best {
			rep.Crossover = n
		}
	}
	raw8 := rateAt(rep.Singles, 8)
	for _, c := range cfg.Appenders {
		before := store.GroupCommitStats()
		rate, p50, err := timed(c, dur, func() (int, error) {
			id := events.NewID(time.Now())
			e, err := events.NewEnvelope(time.Now(), "added", id, "bench", 1, map[string]string{"objective": "bench"})
			if err != nil {
				return 0, err
			}
			_, err = store.Append(ctx, taskqueue.Subject("bench-append", id, "added"), e, events.Expect{Filter: taskqueue.Filter(id)}, "")
			return 1, err
		})
		if err != nil {
			return nil, fmt.Errorf("group commit at %d: %w", c, err)
		}
		after := store.GroupCommitStats()
		row := GroupCommitRow{Appenders: c, PerSec: rate, P50Ms: p50, Batches: after.Batches - before.Batches, Singles: after.Singles - before.Singles}
		if row.Batches > 0 {
			row.AvgBatch = float64(after.BatchedEvents-before.BatchedEvents) / float64(row.Batches)
		}
		if raw8 > 0 {
			row.Ratio = rate / raw8
		}
		rep.Store = append(rep.Store, row)
	}
	return rep, nil
}

// rateAt returns the rate measured at concurrency c (or the closest
// below).
func rateAt(rows []RateRow, c int) float64 {
	r := 0.0
	for _, row := range rows {
		if row.Concurrency <= c {
			r = row.PerSec
		}
	}
	return r
}

// timed runs op from c goroutines for d and returns events per second and
// the median duration of one op in ms.
func timed(c int, d time.Duration, op func() (int, error)) (float64, float64, error) {
	var total atomic.Int64
	var mu sync.Mutex
	var lat []time.Duration
	var firstErr error
	var wg sync.WaitGroup
	end := time.Now().Add(d)
	start := time.Now()
	for w := 0; w < c; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for time.Now().Before(end) {
				t0 := time.Now()
				n, err := op()
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
				mine = append(mine, time.Since(t0))
				total.Add(int64(n))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return 0, 0, firstErr
	}
	return float64(total.Load()) / time.Since(start).Seconds(), percentileMs(lat, 0.5), nil
}
