// Command riverpeer measures River (riverqueue/river on PostgreSQL) the way
// `trellis bench workers` measures Trellis's worker pools, so the two can
// be set side by side from one sitting on one machine: no-op jobs, a fixed
// number of workers, jobs inserted in bulk (throughput) or one at a time
// at a paced rate (pickup latency). It is its own Go module so that
// Trellis itself does not depend on River or PostgreSQL drivers; run.sh
// starts a throwaway PostgreSQL and runs it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
)

// noop is the job: it carries its number and does nothing.
type noop struct {
	N int `json:"n"`
}

// Kind names the job kind in River's table.
func (noop) Kind() string { return "trellis_peer_noop" }

// noopWorker does nothing; with latency on, it records how long each job
// waited between its insert and the start of its work.
type noopWorker struct {
	river.WorkerDefaults[noop]
	mu      sync.Mutex
	latency bool
	waits   []time.Duration
}

// Work records the job's pickup wait when asked to.
func (w *noopWorker) Work(_ context.Context, j *river.Job[noop]) error {
	if w.latency {
		d := time.Since(j.CreatedAt)
		w.mu.Lock()
		w.waits = append(w.waits, d)
		w.mu.Unlock()
	}
	return nil
}

func main() {
	db := flag.String("db", "", "PostgreSQL URL (River's tables migrated)")
	mode := flag.String("mode", "throughput", "throughput (bulk inserts) or latency (paced single inserts)")
	workers := flag.Int("workers", 8, "River workers (MaxWorkers of the queue)")
	n := flag.Int("n", 20000, "jobs")
	batch := flag.Int("batch", 1000, "jobs per InsertMany (throughput)")
	rate := flag.Int("rate", 1000, "jobs per second offered (latency)")
	flag.Parse()
	if err := run(*db, *mode, *workers, *n, *batch, *rate); err != nil {
		fmt.Fprintln(os.Stderr, "riverpeer:", err)
		os.Exit(1)
	}
}

func run(db, mode string, workers, n, batch, rate int) error {
	if db == "" {
		return errors.New("-db is required")
	}
	if workers < 1 || n < 1 || batch < 1 || rate < 1 {
		return errors.New("-workers, -n, -batch and -rate must be positive")
	}
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, db)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer pool.Close()
	w := &noopWorker{latency: mode == "latency"}
	reg := river.NewWorkers()
	river.AddWorker(reg, w)
	// The fetch settings of River's own `river bench`: without them a
	// client polls once a second and a comparison would be unfair.
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: workers}},
		Workers:           reg,
		FetchCooldown:     2 * time.Millisecond,
		FetchPollInterval: 20 * time.Millisecond,
	})
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	done, stopSub := client.Subscribe(river.EventKindJobCompleted)
	defer stopSub()
	if err := client.Start(ctx); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = client.Stop(sctx)
	}()
	start := time.Now()
	insertErr := make(chan error, 1)
	go func() { insertErr <- insert(ctx, client, mode, n, batch, rate) }()
	for seen := 0; seen < n; {
		select {
		case <-done:
			seen++
		case err := <-insertErr:
			if err != nil {
				return err
			}
			insertErr = nil
		case <-time.After(2 * time.Minute):
			return fmt.Errorf("%d of %d jobs completed, then nothing for 2 minutes", seen, n)
		}
	}
	elapsed := time.Since(start)
	switch mode {
	case "latency":
		w.mu.Lock()
		waits := slices.Clone(w.waits)
		w.mu.Unlock()
		slices.Sort(waits)
		fmt.Printf("RESULT river latency workers=%d offered=%d/s jobs=%d p50=%s p99=%s\n", workers, rate, n,
			quantile(waits, 0.50), quantile(waits, 0.99))
	default:
		fmt.Printf("RESULT river throughput workers=%d jobs=%d batch=%d elapsed=%s jobs_per_sec=%.0f\n", workers, n, batch,
			elapsed.Round(time.Millisecond), float64(n)/elapsed.Seconds())
	}
	return nil
}

// insert adds n jobs: in InsertMany batches (throughput) or one Insert at
// a time, paced to rate per second (latency).
func insert(ctx context.Context, client *river.Client[pgx.Tx], mode string, n, batch, rate int) error {
	if mode == "latency" {
		tick := time.NewTicker(time.Second / time.Duration(rate))
		defer tick.Stop()
		for i := range n {
			<-tick.C
			if _, err := client.Insert(ctx, noop{N: i}, nil); err != nil {
				return fmt.Errorf("insert: %w", err)
			}
		}
		return nil
	}
	for i := 0; i < n; i += batch {
		params := make([]river.InsertManyParams, 0, batch)
		for j := i; j < min(i+batch, n); j++ {
			params = append(params, river.InsertManyParams{Args: noop{N: j}})
		}
		if _, err := client.InsertMany(ctx, params); err != nil {
			return fmt.Errorf("insert many: %w", err)
		}
	}
	return nil
}

// quantile is the q-quantile of sorted durations.
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := min(int(q*float64(len(sorted))), len(sorted)-1)
	return sorted[i].Round(10 * time.Microsecond)
}
