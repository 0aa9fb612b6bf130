package retention_test

import (
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/audit"
	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/retention"
	"github.com/trellis/trellis/taskqueue"
)

// TestPruneKeepsAnchorsTrue: a server anchors the heads of its streams
// and of the aggregates that changed (the finished tasks' last events
// among them); a prune then removes those tasks. `audit verify` with the
// anchors stays OK: a head a prune record accounts for was pruned (its
// archive holds it), not removed; the same removal without a record is
// still found.
func TestPruneKeepsAnchorsTrue(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	ctx := ctxT(t)
	q := taskqueue.New(b.Store, taskqueue.Config{})
	var ids []string
	for i := 0; i < 3; i++ {
		task, err := q.Add(ctx, trellis.AddTaskRequest{Queue: "anch", Objective: "anchored then pruned"})
		if err != nil {
			t.Fatal(err)
		}
		var got *trellis.Task
		waitFor(t, "claim", func() bool {
			got, err = q.Next(ctx, trellis.NextRequest{Queue: "anch", Worker: "w1"})
			return err == nil && got != nil
		})
		if _, err := q.Done(ctx, trellis.DoneRequest{TaskID: got.TaskID, Worker: "w1", WhatWasDone: "done"}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, task.TaskID)
	}
	dataDir := t.TempDir()
	anchor, err := audit.RecordAnchor(ctx, b.Store, dataDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(anchor.Aggregates) < len(ids) {
		t.Fatalf("the anchor recorded %d aggregate heads; want the %d tasks' at least", len(anchor.Aggregates), len(ids))
	}
	key, err := audit.AnchorKey(dataDir, false)
	if err != nil {
		t.Fatal(err)
	}
	res, err := retention.Prune(ctx, b.Store, retention.Options{OlderThan: time.Minute, Archive: t.TempDir(), Now: later})
	if err != nil {
		t.Fatal(err)
	}
	if res.Tasks < len(ids) {
		t.Fatalf("pruned %d tasks; want %d", res.Tasks, len(ids))
	}
	var fs []audit.Finding
	_, err = audit.Verify(ctx, b.Store, audit.VerifyOptions{Anchors: []audit.Anchor{*anchor}, AnchorKey: key},
		func(f audit.Finding) error { fs = append(fs, f); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 0 {
		t.Fatalf("verify with the anchors after a prune: %d findings, first %+v", len(fs), fs[0])
	}
}
