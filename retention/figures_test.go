package retention_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/audit"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/retention"
	"github.com/trellis/trellis/server"
	"github.com/trellis/trellis/taskqueue"
)

// The figures of docs/retention.md. Each benchmark iteration builds its
// own log: run them with -benchtime=1x. TRELLIS_BENCH_TASKS sets the
// number of task lifecycles (default 20,000).

// benchTasks is the number of task lifecycles of a figure.
func benchTasks(b *testing.B) int {
	n := 20000
	if s := os.Getenv("TRELLIS_BENCH_TASKS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v <= 0 {
			b.Fatalf("TRELLIS_BENCH_TASKS=%q: not a positive number", s)
		}
		n = v
	}
	return n
}

// lifecycler is what lifecycles needs of a queue (the queue handler or
// a server's service).
type lifecycler interface {
	AddMany(ctx context.Context, req trellis.AddManyRequest) (*trellis.AddManyResult, error)
	Next(ctx context.Context, req trellis.NextRequest) (*trellis.Task, error)
	Done(ctx context.Context, req trellis.DoneRequest) (*trellis.Task, error)
}

// lifecycles adds n tasks to queue and has 4 workers claim and complete
// them: n lifecycles of added, claimed, completed.
func lifecycles(b *testing.B, q lifecycler, queue string, n int) {
	b.Helper()
	ctx := context.Background()
	for added := 0; added < n; {
		var req trellis.AddManyRequest
		for j := 0; j < min(trellis.MaxAddMany, n-added); j++ {
			req.Tasks = append(req.Tasks, trellis.AddTaskRequest{Queue: queue, Objective: fmt.Sprintf("a task of typical size %d", added+j)})
		}
		res, err := q.AddMany(ctx, req)
		if err != nil || len(res.Errors) > 0 {
			b.Fatal(err, res)
		}
		added += len(req.Tasks)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	var mu sync.Mutex
	left := n
	deadline := time.Now().Add(20 * time.Minute)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			worker := fmt.Sprintf("w%d", w)
			for time.Now().Before(deadline) {
				mu.Lock()
				if left == 0 {
					mu.Unlock()
					return
				}
				mu.Unlock()
				task, err := q.Next(ctx, trellis.NextRequest{Queue: queue, Worker: worker})
				if err == nil && task == nil {
					time.Sleep(10 * time.Millisecond) // none dispatched yet (or all claimed by others)
					continue
				}
				if err == nil {
					_, err = q.Done(ctx, trellis.DoneRequest{TaskID: task.TaskID, Worker: worker, WhatWasDone: "did the thing", WhatChanged: []string{"a.go"}})
				}
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				left--
				mu.Unlock()
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	if left != 0 {
		b.Fatalf("%d of %d tasks not completed within 20 minutes", left, n)
	}
}

// BenchmarkRetentionDisk measures the disk a log takes after N task
// lifecycles, without retention and with a prune after every round of
// 5,000 (each prune removes every task finished so far), and the prunes'
// throughput (events removed per second, archive included). The log syncs
// every second (disk use does not depend on the sync mode).
func BenchmarkRetentionDisk(b *testing.B) {
	n := benchTasks(b)
	const round = 5000
	for _, retain := range []bool{false, true} {
		name := "without-retention"
		if retain {
			name = "with-retention"
		}
		b.Run(name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				bundle := eventstest.Start(b)
				q := taskqueue.New(bundle.Store, taskqueue.Config{})
				archive := filepath.Join(b.TempDir(), "archive")
				var pruned int
				var pruning time.Duration
				for done := 0; done < n; done += round {
					lifecycles(b, q, "bench", min(round, n-done))
					if !retain {
						continue
					}
					start := time.Now()
					res, err := retention.Prune(context.Background(), bundle.Store, retention.Options{OlderThan: time.Minute, Archive: archive, Now: later})
					if err != nil {
						b.Fatal(err)
					}
					pruning += time.Since(start)
					pruned += res.Events
				}
				info, err := bundle.Store.StreamInfo(context.Background(), events.StreamQueue)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(dirSize(bundle.StoreDir))/1e6, "disk-MB")
				b.ReportMetric(float64(info.State.Bytes)/1e6, "stream-MB")
				b.ReportMetric(float64(info.State.Msgs), "events-kept")
				if retain {
					b.ReportMetric(float64(dirSize(archive))/1e6, "archive-MB")
					b.ReportMetric(float64(pruned)/pruning.Seconds(), "pruned-events/s")
				}
			}
		})
	}
}

// BenchmarkColdStart measures a server's cold start on a log of N task
// lifecycles, before and after a prune removed them: from Start (the
// embedded NATS server recovering its stream files included) until every
// projection caught up, with no projection state (as a new server on an
// existing log, or after `replay`). A few open tasks stay in both.
func BenchmarkColdStart(b *testing.B) {
	n := benchTasks(b)
	for i := 0; i < b.N; i++ {
		data := b.TempDir()
		ctx := context.Background()
		cfg := server.Config{DataDir: data, NATSAddr: "-", SyncInterval: time.Second}
		srv, err := server.Start(ctx, cfg)
		if err != nil {
			b.Fatal(err)
		}
		lifecycles(b, srv.Service(), "bench", n)
		for j := 0; j < 10; j++ {
			if _, err := srv.Service().Add(ctx, trellis.AddTaskRequest{Queue: "open", Objective: "stays open"}); err != nil {
				b.Fatal(err)
			}
		}
		srv.Close()
		cold := func() time.Duration {
			for _, d := range []string{"projections", "checkpoints", "asof", "index"} {
				if err := os.RemoveAll(filepath.Join(data, d)); err != nil {
					b.Fatal(err)
				}
			}
			start := time.Now()
			srv, err := server.Start(ctx, cfg)
			if err != nil {
				b.Fatal(err)
			}
			// CatchUp bounds each wait; a long catch-up takes several.
			for deadline := time.Now().Add(20 * time.Minute); ; {
				err := srv.Service().CatchUp(ctx)
				if err == nil {
					break
				}
				if trellis.ErrorCode(err) != trellis.CodeUnavailable || time.Now().After(deadline) {
					b.Fatal(err)
				}
			}
			el := time.Since(start)
			srv.Close()
			return el
		}
		before := cold()
		srv, err = server.Start(ctx, cfg)
		if err != nil {
			b.Fatal(err)
		}
		key, err := audit.AnchorKey(data, true)
		if err != nil {
			b.Fatal(err)
		}
		res, err := retention.Prune(ctx, srv.Store(), retention.Options{OlderThan: time.Minute, Archive: filepath.Join(b.TempDir(), "archive"), Key: key, Now: later})
		if err != nil || res.Tasks != n {
			b.Fatalf("prune: %v %v", res, err)
		}
		srv.Close()
		after := cold()
		b.ReportMetric(before.Seconds(), "cold-s-unpruned")
		b.ReportMetric(after.Seconds(), "cold-s-pruned")
		b.ReportMetric(float64(n), "tasks")
	}
}
