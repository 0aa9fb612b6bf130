package retention_test

import (
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/audit"
	"github.com/trellis/trellis/events"
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
	res, err := retention.Prune(ctx, b.Store, retention.Options{OlderThan: time.Minute, Archive: t.TempDir(), Now: later, Key: key})
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

	// A hostile client with NATS credentials (no audit key) writes a
	// prune record of its own, chained correctly, naming a finished task,
	// then deletes that task's events: verify with the key does not trust
	// the record, and the removal is found.
	victim, err := q.Add(ctx, trellis.AddTaskRequest{Queue: "anch", Objective: "removed under a forged record"})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "claim", func() bool {
		got, err := q.Next(ctx, trellis.NextRequest{Queue: "anch", Worker: "w1"})
		return err == nil && got != nil
	})
	if _, err := q.Done(ctx, trellis.DoneRequest{TaskID: victim.TaskID, Worker: "w1", WhatWasDone: "done"}); err != nil {
		t.Fatal(err)
	}
	var seqs [][2]uint64
	var last uint64
	err = b.Store.Scan(ctx, events.StreamQueue, events.ScanRange{}, func(m events.Message) error {
		if m.Bad == nil && m.AggregateID == victim.TaskID {
			seqs = append(seqs, [2]uint64{m.Seq, m.Seq})
		}
		return nil
	})
	if err != nil || len(seqs) < 3 {
		t.Fatalf("the victim's events: %v, %v", seqs, err)
	}
	recs, lastSeq, err := b.Store.Load(ctx, events.StreamQueue, events.RetentionFilter)
	if err != nil || len(recs) == 0 {
		t.Fatalf("the retention log: %v", err)
	}
	last = lastSeq
	forged := events.PrunedPayload{Stream: events.StreamQueue, Cut: time.Now().UTC().Format(time.RFC3339Nano), Archive: "prune-x.jsonl",
		Digest: "00", Events: len(seqs), Removed: seqs, Aggregates: []string{"anch/" + victim.TaskID}}
	env, err := events.NewEnvelope(time.Now(), events.PrunedType, events.RetentionAggregate, "trellis-prune", events.PrunedSchema, forged)
	if err != nil {
		t.Fatal(err)
	}
	env.Prev = events.Hash(recs[len(recs)-1].Envelope)
	if _, err := b.Store.Append(ctx, events.RetentionSubjectPrefix+events.PrunedType, env,
		events.Expect{Filter: events.RetentionFilter, LastSeq: last}, env.ID); err != nil {
		t.Fatal(err)
	}
	stream, err := b.Store.JetStream().Stream(ctx, events.StreamQueue)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range seqs {
		if err := stream.DeleteMsg(ctx, r[0]); err != nil {
			t.Fatal(err)
		}
	}
	fs = nil
	if _, err = audit.Verify(ctx, b.Store, audit.VerifyOptions{Anchors: []audit.Anchor{*anchor}, AnchorKey: key},
		func(f audit.Finding) error { fs = append(fs, f); return nil }); err != nil {
		t.Fatal(err)
	}
	removed := 0
	for _, f := range fs {
		if f.Kind == audit.FindingRemoved && f.Seq >= seqs[0][0] && f.Seq <= seqs[len(seqs)-1][0] {
			removed++
		}
	}
	if removed == 0 {
		t.Fatalf("a removal excused by a record without the key went unseen: findings %+v", fs)
	}
}
