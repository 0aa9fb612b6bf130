package bench_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/trellis/trellis/bench"
	"github.com/trellis/trellis/events/eventstest"
)

// TestRunQueueSmoke runs every phase on a tiny workload: it checks that the
// harness works and reports sane figures, not how fast anything is.
func TestRunQueueSmoke(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := bench.RunQueue(ctx, b.Store, bench.QueueConfig{Tasks: 100, Workers: 4, OfferedRate: 200, LatencySeconds: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	if rep.RawAppendPerSec <= 0 || rep.RawWorkQueuePerSec <= 0 || rep.LifecyclePerSec <= 0 || rep.Ratio <= 0 {
		t.Fatalf("report has empty figures: %+v", rep)
	}
	if rep.Claimed != 100 {
		t.Fatalf("latency phase claimed %d of 100 tasks", rep.Claimed)
	}
}

// BenchmarkQueue runs the full comparison with fsync on every write (the
// durable default) and logs the table. Run with
// `go test ./bench -run XXX -bench Queue -benchtime 1x -v`.
func BenchmarkQueue(b *testing.B) {
	bundle := eventstest.Start(b, eventstest.Options{Durable: true})
	for i := 0; i < b.N; i++ {
		rep, err := bench.RunQueue(context.Background(), bundle.Store, bench.QueueConfig{})
		if err != nil {
			b.Fatal(err)
		}
		rep.Print(os.Stdout)
		b.ReportMetric(rep.Ratio, "ratio")
		b.ReportMetric(rep.LifecyclePerSec, "lifecycles/s")
		b.ReportMetric(rep.WaitP99Ms, "claim-p99-ms")
	}
}

// TestRunWorkersSmoke runs the worker-pool comparison on a tiny workload.
func TestRunWorkersSmoke(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := bench.RunWorkers(ctx, b.Store, bench.WorkersConfig{Tasks: 50, Levels: []int{1, 4}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Rows) != 2 || rep.Rows[1].TrellisPerSec <= 0 || rep.Rows[1].RawPerSec <= 0 {
		t.Fatalf("report = %+v", rep)
	}
}

// BenchmarkWorkers runs the worker-pool comparison with fsync on every
// write. Run with `go test ./bench -run XXX -bench Workers -benchtime 1x -v`.
func BenchmarkWorkers(b *testing.B) {
	bundle := eventstest.Start(b, eventstest.Options{Durable: true})
	for i := 0; i < b.N; i++ {
		rep, err := bench.RunWorkers(context.Background(), bundle.Store, bench.WorkersConfig{})
		if err != nil {
			b.Fatal(err)
		}
		rep.Print(os.Stdout)
	}
}

// BenchmarkVineClaims runs the VINE claim comparison with fsync on every
// write. Run with `go test ./bench -run XXX -bench VineClaims -benchtime 1x -v`.
func BenchmarkVineClaims(b *testing.B) {
	bundle := eventstest.Start(b, eventstest.Options{Durable: true})
	for i := 0; i < b.N; i++ {
		rep, err := bench.RunVine(context.Background(), bundle.Store, bench.VineConfig{})
		if err != nil {
			b.Fatal(err)
		}
		rep.Print(os.Stdout)
	}
}

// TestRunVineSmoke runs the VINE claim comparison on a tiny graph.
func TestRunVineSmoke(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := bench.RunVine(ctx, b.Store, bench.VineConfig{Tasks: 30, Agents: 3})
	if err != nil {
		t.Fatal(err)
	}
	if rep.ClaimsPerSec <= 0 || rep.DirectPerSec <= 0 || rep.FileFrontierMs <= 0 {
		t.Fatalf("report = %+v", rep)
	}
}
