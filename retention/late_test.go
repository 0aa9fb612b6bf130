package retention_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/retention"
)

// TestCommandsOnAPrunedTaskAreNotFound: a worker's late command on a task
// a prune removed, while the task's tombstone is still in the log (here
// the stream's last message, which stays), answers not_found: it
// dereferenced the tombstone's empty state and panicked (found in
// review; a paced prune leaves tombstones in the log for longer).
func TestCommandsOnAPrunedTaskAreNotFound(t *testing.T) {
	t.Parallel()
	store, q := startQueue(t)
	ctx := ctxT(t)
	f := &fixture{q: q}
	task := f.add(t, "done", trellis.AddTaskRequest{Queue: "late"})
	f.done(t, "late", task.TaskID)
	res, err := retention.Prune(ctx, store, retention.Options{OlderThan: time.Minute, Archive: t.TempDir(), Now: later})
	if err != nil || res.Tasks != 1 {
		t.Fatalf("prune: %+v %v", res, err)
	}
	id := task.TaskID
	for name, cmd := range map[string]func() (*trellis.Task, error){
		"done": func() (*trellis.Task, error) {
			return q.Done(ctx, trellis.DoneRequest{TaskID: id, Worker: "w1", WhatWasDone: "late"})
		},
		"fail": func() (*trellis.Task, error) {
			return q.Fail(ctx, trellis.FailRequest{TaskID: id, Worker: "w1", Error: "late"})
		},
		"release": func() (*trellis.Task, error) { return q.Release(ctx, id, "w1", "late") },
		"retry":   func() (*trellis.Task, error) { return q.Retry(ctx, id, "op") },
		"cancel":  func() (*trellis.Task, error) { return q.Cancel(ctx, trellis.CancelRequest{TaskID: id, Reason: "late"}) },
		"heartbeat": func() (*trellis.Task, error) {
			return q.Heartbeat(ctx, trellis.HeartbeatRequest{TaskID: id, Worker: "w1"})
		},
	} {
		got, err := func() (got *trellis.Task, err error) {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("panic: %v", r)
				}
			}()
			return cmd()
		}()
		if trellis.ErrorCode(err) != trellis.CodeNotFound {
			t.Errorf("%s on a pruned task: %+v, %v; want not_found", name, got, err)
		}
	}
	if fs := verifyLog(t, store); len(fs) > 0 {
		t.Fatalf("verify after the late commands: %v", fs)
	}
}
