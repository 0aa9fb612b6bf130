package bench_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/trellis/trellis/bench"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
)

// TestRunWorkersEndsWhenAddsFail: when adding the tasks fails (appends
// timing out under load), the worker-pool benchmark ends with an error
// naming the add, instead of waiting for ever for tasks that were never
// added.
func TestRunWorkersEndsWhenAddsFail(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	// Appends without a deadline of their own give up at once: the bulk
	// adds (the benchmark's context has no deadline) fail, as they do
	// when the store cannot keep up.
	store, err := events.NewStore(b.Conn, events.StoreConfig{AppendTimeout: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		rep *bench.WorkersReport
		err error
	}
	ended := make(chan result, 1)
	go func() {
		rep, err := bench.RunWorkers(context.Background(), store, bench.WorkersConfig{Tasks: 2000, Levels: []int{2}, AddBatch: 1000})
		ended <- result{rep, err}
	}()
	select {
	case r := <-ended:
		if r.err == nil || !strings.Contains(r.err.Error(), "add tasks") {
			t.Fatalf("RunWorkers with failing adds = %+v, %v; want an error naming the add", r.rep, r.err)
		}
	case <-time.After(90 * time.Second):
		t.Fatal("RunWorkers still waits 90 s after its adds failed")
	}
}
