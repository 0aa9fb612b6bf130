package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/taskqueue"
	"github.com/trellis/trellis/workers"
)

// WorkersConfig sizes the worker-pool benchmark.
type WorkersConfig struct {
	// Tasks per concurrency level (default 1000).
	Tasks int
	// Levels are the handler concurrencies measured (default 1, 4, 8, 32).
	Levels []int
	// AddBatch is how many tasks a producer adds per call (AddMany);
	// 1 adds them one by one (default 100).
	AddBatch int
	// ClaimWindow is the pools' claim window (workers.Config.ClaimWindow:
	// 0 is its default; negative records every claim first).
	ClaimWindow time.Duration
}

// WorkersRow is one concurrency level's result.
type WorkersRow struct {
	Concurrency   int                     `json:"concurrency"`
	RawPerSec     float64                 `json:"raw_workqueue_per_sec"`
	TrellisPerSec float64                 `json:"trellis_per_sec"`
	Ratio         float64                 `json:"ratio"`
	AppendRatio   float64                 `json:"ratio_to_raw_append"`
	ClaimP50Ms    float64                 `json:"claim_latency_p50_ms"`
	ClaimP99Ms    float64                 `json:"claim_latency_p99_ms"`
	Commit        events.GroupCommitStats `json:"group_commit"`
}

// WorkersReport is the result of RunWorkers.
type WorkersReport struct {
	Tasks           int          `json:"tasks"`
	AddBatch        int          `json:"add_batch"`
	ClaimWindowMs   float64      `json:"claim_window_ms"`
	RawAppendPerSec float64      `json:"raw_checked_append_per_sec"`
	Rows            []WorkersRow `json:"rows"`
}

// Print writes the report as a table.
func (r *WorkersReport) Print(w io.Writer) {
	window := "every claim recorded first"
	if r.ClaimWindowMs > 0 {
		window = fmt.Sprintf("claim window %.0f ms", r.ClaimWindowMs)
	}
	fmt.Fprintf(w, "worker pools end to end: %d tasks per level, no-op handler, same server, file storage, %s\n", r.Tasks, window)
	fmt.Fprintf(w, "  raw JetStream checked append (8 publishers, one message each): %.0f /s\n", r.RawAppendPerSec)
	fmt.Fprintf(w, "  %-11s %12s %12s %9s %9s %10s %10s %18s\n", "concurrency", "raw WQ /s", "Trellis /s", "/raw WQ", "/append", "claim p50", "claim p99", "writes (batches)")
	for _, row := range r.Rows {
		c := row.Commit
		fmt.Fprintf(w, "  %-11d %12.0f %12.0f %9.2f %9.2f %8.2fms %8.2fms %9d (%d of %.0f)\n", row.Concurrency, row.RawPerSec, row.TrellisPerSec, row.Ratio, row.AppendRatio,
			row.ClaimP50Ms, row.ClaimP99Ms, c.Singles+c.Batches, c.Batches, avg(c.BatchedEvents, c.Batches))
	}
	fmt.Fprintln(w, "  raw WQ: N goroutines each doing publish -> fetch 1 -> ack on a work-queue stream (one synced write per task)")
	if r.AddBatch > 1 {
		fmt.Fprintf(w, "  Trellis: N producers add tasks (%d per AddMany call) while a pool of N runs them; add, claim and done are checked appends, committed through the group commit\n", r.AddBatch)
	} else {
		fmt.Fprintln(w, "  Trellis: N producers add tasks one by one while a pool of N runs them; add, claim and done are checked appends, committed through the group commit")
	}
	fmt.Fprintln(w, "  /append: Trellis tasks/s over the raw single-append rate; writes: synced writes the store made (single appends + atomic batches, of average size)")
}

func avg(n, d uint64) float64 {
	if d == 0 {
		return 0
	}
	return float64(n) / float64(d)
}

// RunWorkers measures, per concurrency level, the raw work-queue consume
// rate and a worker pool's end-to-end rate over the same number of tasks.
func RunWorkers(ctx context.Context, store *events.Store, cfg WorkersConfig) (*WorkersReport, error) {
	if cfg.Tasks <= 0 {
		cfg.Tasks = 1000
	}
	if len(cfg.Levels) == 0 {
		cfg.Levels = []int{1, 4, 8, 32}
	}
	if cfg.AddBatch <= 0 {
		cfg.AddBatch = 100
	}
	if cfg.ClaimWindow == 0 {
		cfg.ClaimWindow = workers.DefaultClaimWindow
	}
	rep := &WorkersReport{Tasks: cfg.Tasks, AddBatch: cfg.AddBatch, ClaimWindowMs: max(0, float64(cfg.ClaimWindow)/float64(time.Millisecond))}
	var err error
	if rep.RawAppendPerSec, err = rawCheckedAppend(ctx, store, QueueConfig{Tasks: cfg.Tasks, Workers: 8}); err != nil {
		return nil, fmt.Errorf("raw append: %w", err)
	}
	for _, c := range cfg.Levels {
		raw, err := rawRoundTrip(ctx, store, cfg.Tasks, c)
		if err != nil {
			return nil, fmt.Errorf("raw work queue at %d: %w", c, err)
		}
		before := store.GroupCommitStats()
		row, err := poolRun(ctx, store, cfg.Tasks, c, cfg.AddBatch, cfg.ClaimWindow)
		if err != nil {
			return nil, fmt.Errorf("worker pool at %d: %w", c, err)
		}
		after := store.GroupCommitStats()
		row.Commit = events.GroupCommitStats{Batches: after.Batches - before.Batches, BatchedEvents: after.BatchedEvents - before.BatchedEvents,
			Singles: after.Singles - before.Singles, Fallbacks: after.Fallbacks - before.Fallbacks}
		row.RawPerSec = raw
		if raw > 0 {
			row.Ratio = row.TrellisPerSec / raw
		}
		if rep.RawAppendPerSec > 0 {
			row.AppendRatio = row.TrellisPerSec / rep.RawAppendPerSec
		}
		rep.Rows = append(rep.Rows, *row)
	}
	return rep, nil
}

// rawRoundTrip is the raw work-queue round trip of the queue benchmark
// (publish -> fetch 1 -> ack) run by c goroutines over n messages.
func rawRoundTrip(ctx context.Context, store *events.Store, n, c int) (float64, error) {
	return rawWorkQueue(ctx, store, QueueConfig{Tasks: n, Workers: c})
}

// poolRun times n tasks end to end: c producers add them while a pool of
// c no-op handlers claims and finishes them, until all are done.
func poolRun(ctx context.Context, store *events.Store, n, c, addBatch int, window time.Duration) (*WorkersRow, error) {
	queue := "wbench-" + strconv.Itoa(c) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	q := taskqueue.New(store, taskqueue.Config{})
	if _, err := q.EnsureConsumer(ctx, queue, 0); err != nil {
		return nil, err
	}
	metrics := workers.NewMetrics(prometheus.NewRegistry())
	done := make(chan struct{}, n)
	h := workers.HandlerFunc(func(context.Context, *trellis.Task, *workers.Progress) (*trellis.Checkpoint, error) {
		return &trellis.Checkpoint{WhatWasDone: "noop"}, nil
	})
	pool, err := workers.New(taskqueue.New(store, taskqueue.Config{}), countingHandler{h, done}, workers.Config{
		Queue: queue, Worker: "bench", Concurrency: c, Logger: slog.New(slog.DiscardHandler), Metrics: metrics, FetchWait: 200 * time.Millisecond,
		ClaimWindow: window,
	})
	if err != nil {
		return nil, err
	}
	runCtx, stop := context.WithCancel(ctx)
	finished := make(chan struct{})
	var runErr error
	start := time.Now()
	go func() { runErr = pool.Run(runCtx); close(finished) }()
	addErr := make(chan error, 1)
	go func() {
		if addBatch <= 1 {
			_, err := parallel(c, n, func(_, _ int) error {
				_, err := q.Add(ctx, trellis.AddTaskRequest{Queue: queue, Objective: "noop"})
				return err
			})
			addErr <- err
			return
		}
		calls := (n + addBatch - 1) / addBatch
		_, err := parallel(c, calls, func(_, i int) error {
			size := min(addBatch, n-i*addBatch)
			reqs := make([]trellis.AddTaskRequest, size)
			for j := range reqs {
				reqs[j] = trellis.AddTaskRequest{Queue: queue, Objective: "noop"}
			}
			res, err := q.AddMany(ctx, trellis.AddManyRequest{Tasks: reqs})
			if err == nil && len(res.Errors) > 0 {
				err = fmt.Errorf("add many: %s", res.Errors[0].Message)
			}
			return err
		})
		addErr <- err
	}()
	// The run ends when every task was handled, or as soon as adding them
	// fails (fewer than n tasks will ever run) or the pool stops.
	adding := addErr
	for i := 0; i < n; {
		select {
		case <-done:
			i++
		case err := <-adding:
			if err != nil {
				stop()
				<-finished
				return nil, fmt.Errorf("add tasks: %w", err)
			}
			adding = nil // every task is added: wait for the rest to run
		case <-finished:
			stop()
			return nil, fmt.Errorf("the pool stopped after %d of %d tasks: %w", i, n, cmp.Or(runErr, errPoolStopped))
		case <-ctx.Done():
			stop()
			<-finished
			return nil, ctx.Err()
		}
	}
	// A task counts once its done event is recorded and its dispatch
	// acknowledged: wait for the in-flight gauge to drain.
	for inFlight(metrics, queue) > 0 {
		time.Sleep(time.Millisecond)
	}
	elapsed := time.Since(start)
	stop()
	<-finished
	if adding != nil {
		if err := <-adding; err != nil {
			return nil, fmt.Errorf("add tasks: %w", err)
		}
	}
	hist := histogram(metrics.ClaimLatency.WithLabelValues(queue))
	return &WorkersRow{
		Concurrency:   c,
		TrellisPerSec: float64(n) / elapsed.Seconds(),
		ClaimP50Ms:    quantile(hist, 0.50) * 1000,
		ClaimP99Ms:    quantile(hist, 0.99) * 1000,
	}, nil
}

// errPoolStopped: a benchmark's pool returned before its tasks ran.
var errPoolStopped = errors.New("pool stopped")

// countingHandler signals every handler return.
type countingHandler struct {
	workers.Handler
	done chan<- struct{}
}

func (c countingHandler) Handle(ctx context.Context, t *trellis.Task, p *workers.Progress) (*trellis.Checkpoint, error) {
	defer func() { c.done <- struct{}{} }()
	return c.Handler.Handle(ctx, t, p)
}

func inFlight(m *workers.Metrics, queue string) float64 {
	var d dto.Metric
	if err := m.InFlight.WithLabelValues(queue).Write(&d); err != nil {
		return 0
	}
	return d.GetGauge().GetValue()
}

func histogram(o prometheus.Observer) *dto.Histogram {
	var d dto.Metric
	if m, ok := o.(prometheus.Metric); ok && m.Write(&d) == nil {
		return d.GetHistogram()
	}
	return nil
}

// quantile estimates a quantile from histogram buckets by linear
// interpolation within the bucket that holds it.
func quantile(h *dto.Histogram, q float64) float64 {
	if h == nil || h.GetSampleCount() == 0 {
		return math.NaN()
	}
	rank := q * float64(h.GetSampleCount())
	var prevCount, prevBound float64
	for _, b := range h.GetBucket() {
		count, bound := float64(b.GetCumulativeCount()), b.GetUpperBound()
		if count >= rank {
			if count == prevCount {
				return bound
			}
			return prevBound + (bound-prevBound)*(rank-prevCount)/(count-prevCount)
		}
		prevCount, prevBound = count, bound
	}
	return prevBound
}
