package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/workflow"
)

// WorkflowsConfig configures RunWorkflows. Zero values take the defaults.
type WorkflowsConfig struct {
	// Levels are the concurrencies (runs in flight, closed loop) measured
	// (default 8, 32, 128).
	Levels []int
	// Seconds is the length of each measurement (default 3).
	Seconds float64
	// Rate is the offered start rate of the latency phase (default 100/s).
	Rate int
}

// WorkflowsReport is what RunWorkflows measured.
type WorkflowsReport struct {
	// RawAt8 is raw JetStream checked appends/s from 8 publishers, in the
	// same run, for scale (a 3-step run takes 6 synced appends, 5 of them
	// on its path).
	RawAt8 float64 `json:"raw_appends_per_sec_at_8"`
	// Levels holds runs/s per concurrency.
	Levels []RateRow `json:"levels"`
	// Best is the best runs/s and its concurrency.
	Best      float64 `json:"best_runs_per_sec"`
	BestLevel int     `json:"best_concurrency"`
	// Latency phase: start → completed at Rate runs/s offered.
	Rate    int     `json:"offered_rate"`
	Started int     `json:"latency_runs"`
	P50Ms   float64 `json:"latency_p50_ms"`
	P99Ms   float64 `json:"latency_p99_ms"`
}

// Print writes the report as a table.
func (r *WorkflowsReport) Print(w io.Writer) {
	fmt.Fprintf(w, "3-step workflow of no-op steps (start → 3 journaled steps → completed)\n")
	fmt.Fprintf(w, "raw JetStream checked appends at 8 publishers: %.0f/s\n", r.RawAt8)
	for _, l := range r.Levels {
		fmt.Fprintf(w, "  %4d runs in flight: %7.0f runs/s  (p50 %.1f ms per run)\n", l.Concurrency, l.PerSec, l.P50Ms)
	}
	fmt.Fprintf(w, "best: %.0f runs/s at %d in flight\n", r.Best, r.BestLevel)
	fmt.Fprintf(w, "start → completed at %d runs/s offered (%d runs): p50 %.1f ms, p99 %.1f ms\n", r.Rate, r.Started, r.P50Ms, r.P99Ms)
}

// RunWorkflows measures durable workflow runs on store: a 3-step workflow
// of no-op steps hosted by one pool in this process.
func RunWorkflows(ctx context.Context, store *events.Store, cfg WorkflowsConfig) (*WorkflowsReport, error) {
	if len(cfg.Levels) == 0 {
		cfg.Levels = []int{8, 32, 128}
	}
	if cfg.Seconds <= 0 {
		cfg.Seconds = 3
	}
	if cfg.Rate <= 0 {
		cfg.Rate = 100
	}
	dur := time.Duration(cfg.Seconds * float64(time.Second))
	rep := &WorkflowsReport{Rate: cfg.Rate}
	raw, err := rawAppends(ctx, store, 8, min(dur, 2*time.Second))
	if err != nil {
		return nil, err
	}
	rep.RawAt8 = raw
	e := workflow.New(store, workflow.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	noop := func(context.Context) (int, error) { return 1, nil }
	if err := workflow.Register(e, "bench3", 1, func(c *workflow.Context, _ any) (int, error) {
		for _, s := range []string{"a", "b", "c"} {
			if _, err := workflow.Step(c, s, noop); err != nil {
				return 0, err
			}
		}
		return 3, nil
	}); err != nil {
		return nil, err
	}
	// Runs end on the log: a subscriber on the completions hands each to
	// its waiter.
	var mu sync.Mutex
	waiters := map[string]chan time.Time{}
	sub, err := store.Conn().Subscribe("trellis.workflows.run.*."+workflow.Completed, func(m *nats.Msg) {
		id := m.Subject[len("trellis.workflows.run.") : len(m.Subject)-len(workflow.Completed)-1]
		mu.Lock()
		ch := waiters[id]
		delete(waiters, id)
		mu.Unlock()
		if ch != nil {
			ch <- time.Now()
		}
	})
	if err != nil {
		return nil, err
	}
	defer sub.Unsubscribe()
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	served := make(chan error, 1)
	go func() {
		served <- e.Serve(sctx, workflow.ServeConfig{Queue: "bench", Concurrency: slices.Max(cfg.Levels)})
	}()
	for {
		if _, err := e.Definition(ctx, "bench3"); err == nil {
			break
		}
		select {
		case err := <-served:
			return nil, fmt.Errorf("serve: %w", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	var seq int64
	var seqMu sync.Mutex
	one := func() (time.Duration, error) {
		seqMu.Lock()
		seq++
		id := "b" + strconv.FormatInt(time.Now().UnixNano(), 36) + "-" + strconv.FormatInt(seq, 36)
		seqMu.Unlock()
		ch := make(chan time.Time, 1)
		mu.Lock()
		waiters[id] = ch
		mu.Unlock()
		t0 := time.Now()
		if _, err := e.Start(ctx, workflow.StartRequest{Workflow: "bench3", RunID: id}); err != nil {
			return 0, err
		}
		select {
		case t := <-ch:
			return t.Sub(t0), nil
		case <-time.After(60 * time.Second):
			return 0, fmt.Errorf("run %s did not complete within a minute", id)
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	for _, c := range cfg.Levels {
		rate, p50, err := timed(c, dur, func() (int, error) {
			_, err := one()
			return 1, err
		})
		if err != nil {
			return nil, fmt.Errorf("runs at %d: %w", c, err)
		}
		rep.Levels = append(rep.Levels, RateRow{Concurrency: c, PerSec: rate, P50Ms: p50})
		if rate > rep.Best {
			rep.Best, rep.BestLevel = rate, c
		}
	}
	// Open loop at the offered rate.
	var lats []time.Duration
	var wg sync.WaitGroup
	var firstErr error
	tick := time.NewTicker(time.Second / time.Duration(cfg.Rate))
	defer tick.Stop()
	end := time.Now().Add(dur)
	for time.Now().Before(end) {
		<-tick.C
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := one()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				return
			}
			lats = append(lats, d)
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	slices.Sort(lats)
	rep.Started = len(lats)
	if len(lats) > 0 {
		rep.P50Ms = ms(lats[len(lats)/2])
		rep.P99Ms = ms(lats[min(len(lats)-1, len(lats)*99/100)])
	}
	return rep, nil
}

// rawAppends measures raw checked JetStream appends/s from c publishers.
func rawAppends(ctx context.Context, store *events.Store, c int, d time.Duration) (float64, error) {
	js := store.JetStream()
	_ = js.DeleteStream(ctx, "BENCH_WF_RAW")
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name: "BENCH_WF_RAW", Subjects: []string{"bench.wfraw.>"}, Storage: jetstream.FileStorage,
		Duplicates: 2 * time.Minute, Replicas: max(store.Config().Replicas, 1),
	}); err != nil {
		return 0, err
	}
	defer func() { _ = js.DeleteStream(context.Background(), "BENCH_WF_RAW") }()
	var mu sync.Mutex
	n := 0
	body := make([]byte, 300)
	rate, _, err := timed(c, d, func() (int, error) {
		mu.Lock()
		n++
		id := strconv.Itoa(n)
		mu.Unlock()
		m := &nats.Msg{Subject: "bench.wfraw." + id + ".e", Data: body, Header: nats.Header{}}
		m.Header.Set(nats.MsgIdHdr, "w"+id)
		m.Header.Set(nats.ExpectedLastSubjSeqHdr, "0")
		_, err := js.PublishMsg(ctx, m)
		return 1, err
	})
	return rate, err
}
