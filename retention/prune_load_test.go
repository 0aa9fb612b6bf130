package retention_test

import (
	"context"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/trellis/trellis/bench"
	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/retention"
)

// BenchmarkPoolDuringPrune measures what a prune costs the worker pools
// running beside it (docs/retention.md, goal: under 10% slower). Each
// sub-benchmark builds its own durable log (a sync on every write) with a
// history of TRELLIS_BENCH_TASKS finished task lifecycles (default
// 20,000), then runs `trellis bench workers` (bench.RunWorkers: 10,000
// tasks at 8 and at 128 handlers): "alone" with nothing else running,
// "during-prune" while prunes run one after another, each removing every
// finished task (the history first, then what the pools finish: no
// retention at all), "during-prune-paced-250" and "-500" with those
// prunes' removals paced at 250 and 500 a second (Options.RemoveRate),
// and "during-history-prune" (and "-paced-250") with the cut at the
// pools' start, as a retention period sets it: the prunes remove the
// history, then find nothing more. Run with -benchtime=1x;
// -count=N runs each N times in a row, so on a busy machine run the
// command several times instead, for the four to alternate.
func BenchmarkPoolDuringPrune(b *testing.B) {
	history := benchTasks(b)
	for _, c := range []struct {
		name        string
		pruning     bool
		rate        int
		historyOnly bool
	}{{"alone", false, 0, false}, {"during-prune", true, 0, false}, {"during-prune-paced-250", true, 250, false}, {"during-prune-paced-500", true, 500, false},
		{"during-history-prune", true, 0, true}, {"during-history-prune-paced-250", true, 250, true}} {
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				poolBesidePrune(b, history, c.pruning, c.rate, c.historyOnly)
			}
		})
	}
}

// poolBesidePrune is one iteration of BenchmarkPoolDuringPrune: pruning
// with removals paced at rate a second (0: unpaced).
func poolBesidePrune(b *testing.B, history int, pruning bool, rate int, historyOnly bool) {
	ctx := context.Background()
	bundle := eventstest.Start(b, eventstest.Options{Durable: true})
	if _, err := bench.RunWorkers(ctx, bundle.Store, bench.WorkersConfig{Tasks: history, Levels: []int{8}, AddBatch: 1000}); err != nil {
		b.Fatal(err)
	}
	now := later // every finished task lies before the cut
	if historyOnly {
		cut := time.Now() // the pools' tasks are stored after the cut
		now = func() time.Time { return cut.Add(time.Minute) }
	}
	archive := filepath.Join(b.TempDir(), "archive")
	pctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var pruned, prunes int
	var prunedFor, first time.Duration // the prunes', the first one's
	var pruneErr error
	if pruning {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for pctx.Err() == nil {
				start := time.Now()
				res, err := retention.Prune(pctx, bundle.Store, retention.Options{OlderThan: time.Minute, Archive: archive, Now: now, RemoveRate: rate})
				if err != nil {
					if pctx.Err() == nil {
						pruneErr = err // not the end of the measurement
					}
					return
				}
				if prunes == 0 {
					first = time.Since(start)
				}
				prunedFor += time.Since(start)
				pruned += res.Events
				prunes++
			}
		}()
	}
	rep, err := bench.RunWorkers(ctx, bundle.Store, bench.WorkersConfig{Tasks: 10000, Levels: []int{8, 128}, AddBatch: 1000})
	stop()
	wg.Wait()
	if err != nil {
		b.Fatal(err)
	}
	if pruneErr != nil {
		b.Fatalf("a prune stopped before the pools did, so part of the run was measured without one: %v", pruneErr)
	}
	for _, row := range rep.Rows {
		b.ReportMetric(row.TrellisPerSec, "tasks/s@"+strconv.Itoa(row.Concurrency))
	}
	if pruning {
		// A prune still running when the pools ended is not counted.
		b.ReportMetric(float64(prunes), "prunes-finished")
		if prunes > 0 {
			b.ReportMetric(float64(pruned)/prunedFor.Seconds(), "pruned-events/s")
			b.ReportMetric(first.Seconds(), "first-prune-s")
		}
	}
}
