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
	// The server's own readers of a task (the reactor resolving its
	// dependants, a pool's heartbeat, the agent lease sweeper, an add
	// naming it as parent) meet the tombstone as well (found in review:
	// the first two panicked).
	for name, check := range map[string]func() error{
		"resolve dependants": func() error { return q.ResolveDependants(ctx, id) },
		"cancel requested": func() error {
			if stop, _, err := q.CancelRequested(ctx, id); err != nil || !stop {
				return fmt.Errorf("stop %v, %v; want the holder told to stop", stop, err)
			}
			return nil
		},
		"expire agent lease": func() error {
			if until, err := q.ExpireAgentLease(ctx, id); err != nil || !until.IsZero() {
				return fmt.Errorf("until %v, %v; want nothing to expire", until, err)
			}
			return nil
		},
		"add with a pruned parent": func() error {
			_, err := q.Add(ctx, trellis.AddTaskRequest{Queue: "late", Objective: "child", ParentID: id})
			if trellis.ErrorCode(err) != trellis.CodeInvalid {
				return fmt.Errorf("%v; want invalid: the parent does not exist", err)
			}
			return nil
		},
	} {
		err := func() (err error) {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("panic: %v", r)
				}
			}()
			return check()
		}()
		if err != nil {
			t.Errorf("%s of a pruned task: %v", name, err)
		}
	}
	if fs := verifyLog(t, store); len(fs) > 0 {
		t.Fatalf("verify after the late commands: %v", fs)
	}
}
