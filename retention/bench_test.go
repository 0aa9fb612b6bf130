package retention_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/retention"
	"github.com/trellis/trellis/taskqueue"
)

// BenchmarkPrune measures prune throughput (events/s removed, archive
// included) and the bytes a task lifecycle takes on disk (added, claimed,
// completed), with the production default of a sync on every write.
// Each iteration builds its own log of 2,000 tasks and prunes them all:
// run it with -benchtime=1x.
func BenchmarkPrune(b *testing.B) {
	const tasks = 2000
	for i := 0; i < b.N; i++ {
		bundle := eventstest.Start(b, eventstest.Options{Durable: true})
		store := bundle.Store
		q := taskqueue.New(store, taskqueue.Config{})
		ctx := context.Background()
		var req trellis.AddManyRequest
		for j := 0; j < 1000; j++ {
			req.Tasks = append(req.Tasks, trellis.AddTaskRequest{Queue: "bench", Objective: fmt.Sprintf("a task of typical size %d", j)})
		}
		for added := 0; added < tasks; added += 1000 {
			if _, err := q.AddMany(ctx, req); err != nil {
				b.Fatal(err)
			}
		}
		for j := 0; j < tasks; j++ {
			task, err := q.Next(ctx, trellis.NextRequest{Queue: "bench", Worker: "w"})
			if err != nil || task == nil {
				b.Fatal(task, err)
			}
			if _, err := q.Done(ctx, trellis.DoneRequest{TaskID: task.TaskID, Worker: "w", WhatWasDone: "did the thing", WhatChanged: []string{"a.go"}}); err != nil {
				b.Fatal(err)
			}
		}
		info, err := store.StreamInfo(ctx, events.StreamQueue)
		if err != nil {
			b.Fatal(err)
		}
		disk := dirSize(bundle.StoreDir)
		b.ReportMetric(float64(info.State.Bytes)/tasks, "stream-bytes/task")
		b.ReportMetric(float64(disk)/tasks, "disk-bytes/task")
		b.ReportMetric(float64(info.State.Msgs)/tasks, "events/task")
		dir := filepath.Join(b.TempDir(), "archive")
		start := time.Now()
		res, err := retention.Prune(ctx, store, retention.Options{OlderThan: time.Minute, Archive: dir, Now: later})
		if err != nil {
			b.Fatal(err)
		}
		el := time.Since(start)
		if res.Tasks != tasks {
			b.Fatalf("pruned %d", res.Tasks)
		}
		var archived int64
		for _, a := range res.Archives {
			archived += a.Bytes
		}
		b.ReportMetric(float64(res.Events)/el.Seconds(), "events/s")
		b.ReportMetric(float64(archived)/tasks, "archive-bytes/task")
	}
}

func dirSize(dir string) int64 {
	var n int64
	_ = filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			n += fi.Size()
		}
		return nil
	})
	return n
}
