package taskqueue_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/taskqueue"
)

// TestExportBoundedCacheSameOutput: an export that may keep only one or
// three task packets in memory (dropping the rest and folding them again
// from their events when they come back) writes exactly the lines of an
// export that keeps every packet, which are the log folded event by
// event.
func TestExportBoundedCacheSameOutput(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	q := taskqueue.New(b.Store, taskqueue.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rng := rand.New(rand.NewSource(5))
	var claimed []*trellis.Task
	for i := 0; i < 120; i++ {
		switch op := rng.Intn(10); {
		case op < 4:
			if _, err := q.Add(ctx, trellis.AddTaskRequest{Objective: fmt.Sprintf("task %d", i), Queue: []string{"a", "b"}[rng.Intn(2)]}); err != nil {
				t.Fatal(err)
			}
		case op < 7:
			task, err := q.Next(ctx, trellis.NextRequest{Queue: []string{"a", "b"}[rng.Intn(2)], Worker: "w"})
			if err != nil {
				t.Fatal(err)
			}
			if task != nil {
				claimed = append(claimed, task)
			}
		default:
			if len(claimed) == 0 {
				continue
			}
			k := rng.Intn(len(claimed))
			task := claimed[k]
			claimed = append(claimed[:k], claimed[k+1:]...)
			var err error
			if rng.Intn(2) == 0 {
				_, err = q.Done(ctx, trellis.DoneRequest{TaskID: task.TaskID, Worker: "w", WhatWasDone: "done"})
			} else if _, err = q.Fail(ctx, trellis.FailRequest{TaskID: task.TaskID, Worker: "w", Error: "boom"}); err == nil {
				_, err = q.Retry(ctx, task.TaskID, "operator")
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}

	// The oracle: every packet kept, folded event by event.
	var want bytes.Buffer
	tasks := map[string]*trellis.Task{}
	lines := 0
	err := b.Store.Read(ctx, events.StreamQueue, "", 0, func(rec events.Recorded) error {
		next, err := taskqueue.Apply(tasks[rec.AggregateID], rec)
		if err != nil || next == nil {
			return err
		}
		tasks[rec.AggregateID] = next
		lines++
		data, err := json.Marshal(next)
		want.Write(data)
		want.WriteByte('\n')
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if lines < 100 || len(tasks) < 20 {
		t.Fatalf("workload too small: %d lines, %d tasks", lines, len(tasks))
	}
	for _, size := range []int{1, 3, taskqueue.ExportCacheSize} {
		var got bytes.Buffer
		n, err := taskqueue.ExportTasksCached(ctx, b.Store, &got, size)
		if err != nil {
			t.Fatal(err)
		}
		if n != lines || !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Fatalf("cache of %d packets: %d lines differ from the full fold's %d", size, n, lines)
		}
	}
}
