package bench_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/trellis/trellis/bench"
	"github.com/trellis/trellis/events/eventstest"
)

// TestRunWorkflowsSmoke runs every phase on a tiny workload: it checks
// that the harness works and reports sane figures, not how fast anything
// is.
func TestRunWorkflowsSmoke(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := bench.RunWorkflows(ctx, b.Store, bench.WorkflowsConfig{Levels: []int{2}, Seconds: 0.3, Rate: 20})
	if err != nil {
		t.Fatal(err)
	}
	if rep.RawAt8 <= 0 || len(rep.Levels) != 1 || rep.Levels[0].PerSec <= 0 || rep.Started == 0 {
		t.Fatalf("report has empty figures: %+v", rep)
	}
}

// BenchmarkWorkflows runs the workflow measurement with fsync on every
// write and prints the table. Run with
// `go test ./bench -run XXX -bench Workflows -benchtime 1x -v` (add
// -cpuprofile / -blockprofile to profile it).
func BenchmarkWorkflows(b *testing.B) {
	bundle := eventstest.Start(b, eventstest.Options{Durable: true})
	for i := 0; i < b.N; i++ {
		rep, err := bench.RunWorkflows(context.Background(), bundle.Store, bench.WorkflowsConfig{})
		if err != nil {
			b.Fatal(err)
		}
		rep.Print(os.Stdout)
	}
}
