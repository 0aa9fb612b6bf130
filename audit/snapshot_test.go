package audit_test

import (
	"context"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/audit"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/taskqueue"
)

// gatedClaims adds n tasks with concurrency key key to queue "s" (a
// per-key limit of 1) and claims each; every claim but the last is done.
func gatedClaims(t *testing.T, q *taskqueue.Handler, key string, n int) {
	t.Helper()
	ctx := context.Background()
	for i := 0; i < n; i++ {
		if _, err := q.Add(ctx, trellis.AddTaskRequest{Queue: "s", Objective: key, ConcurrencyKey: key}); err != nil {
			t.Fatal(err)
		}
		got, err := q.Next(ctx, trellis.NextRequest{Queue: "s", Worker: "w"})
		if err != nil || got == nil {
			t.Fatalf("claim %s %d: %+v, %v", key, i, got, err)
		}
		if i < n-1 {
			if _, err := q.Done(ctx, trellis.DoneRequest{TaskID: got.TaskID, Worker: "w", WhatWasDone: "ok"}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// queueOnBundle starts a server and a queue handler on it.
func queueOnBundle(t *testing.T) (*eventstest.Bundle, context.Context, *taskqueue.Handler) {
	t.Helper()
	b := eventstest.Start(t)
	return b, context.Background(), taskqueue.New(b.Store, taskqueue.Config{})
}

// forgeSnapshot appends a snapshot of aggregate id (its events match
// filter; the snapshot goes to subject) as a client holding only NATS
// credentials could: chained to the aggregate's last event, checked
// against its last sequence, under its own event id, with the state
// forge puts into the payload from the aggregate's events. It returns the
// snapshot's sequence.
func forgeSnapshot(t *testing.T, b *eventstest.Bundle, id, filter, subject string, forge func([]events.Recorded, *taskqueue.SnapshotPayload)) uint64 {
	t.Helper()
	ctx := context.Background()
	recs, last, err := b.Store.Load(ctx, events.StreamQueue, filter)
	if err != nil || len(recs) == 0 {
		t.Fatalf("load %s: %d events, %v", id, len(recs), err)
	}
	head := events.Hash(recs[len(recs)-1].Envelope)
	p := taskqueue.SnapshotPayload{Replaces: head, ReplacesSeq: last}
	forge(recs, &p)
	env, err := events.NewEnvelope(time.Now(), taskqueue.Snapshot, id, "trellis", taskqueue.Schema, p)
	if err != nil {
		t.Fatal(err)
	}
	env.Prev = head
	ack, err := b.Store.Append(ctx, subject, env, events.Expect{Filter: filter, LastSeq: last}, "")
	if err != nil {
		t.Fatal(err)
	}
	return ack.Seq
}

// forgeGateSnapshot forges a snapshot of gate id (see forgeSnapshot): the
// state its events fold to, changed by mutate.
func forgeGateSnapshot(t *testing.T, b *eventstest.Bundle, id string, mutate func(*taskqueue.SnapshotPayload)) uint64 {
	t.Helper()
	return forgeSnapshot(t, b, id, "trellis.queue."+id+".>", "trellis.queue."+id+"."+taskqueue.Snapshot, func(recs []events.Recorded, p *taskqueue.SnapshotPayload) {
		g, err := taskqueue.FoldGate(recs)
		if err != nil {
			t.Fatal(err)
		}
		p.Gate = g
		mutate(p)
	})
}

// verifiedSnapshots verifies the log, which must have no findings (what
// names the snapshots in the failure), and returns how many snapshots of
// the queue stream it checked.
func verifiedSnapshots(t *testing.T, store *events.Store, what string) uint64 {
	t.Helper()
	fs, rep := verify(t, store, audit.VerifyOptions{})
	if len(fs) > 0 {
		t.Fatalf("verify with %s: %v", what, fs)
	}
	return streamReport(rep, events.StreamQueue).Snapshots
}

// wantAlteredOnly verifies the log and wants one finding: an altered
// event at seq (a forged snapshot).
func wantAlteredOnly(t *testing.T, store *events.Store, seq uint64) {
	t.Helper()
	fs, _ := verify(t, store, audit.VerifyOptions{})
	if !hasFinding(fs, audit.FindingAltered, events.StreamQueue, seq, "") || len(fs) != 1 {
		t.Fatalf("findings %v; want one altered finding at the forged snapshot #%d", fs, seq)
	}
}

// TestVerifyChecksGateSnapshots: the snapshots the claim path appends to a
// gate verify OK (each checked against the fold of the events it
// replaces); a snapshot appended with NATS credentials alone, chained
// right and under its own event id like any Trellis append, but carrying a
// forged state (the key's held slot freed) or naming another event as the
// one it replaces, is an altered finding at its sequence.
func TestVerifyChecksGateSnapshots(t *testing.T) {
	t.Parallel()
	b, ctx, q := queueOnBundle(t)
	if _, err := q.SetPerKey(ctx, "s", "ops", 1); err != nil {
		t.Fatal(err)
	}
	gatedClaims(t, q, "a", taskqueue.GateSnapshotEvery+2)
	gatedClaims(t, q, "b", 2)
	if n := verifiedSnapshots(t, b.Store, "the claim path's snapshots"); n != 1 {
		t.Fatalf("verify checked %d snapshots; want the 1 the claims made", n)
	}
	freed := forgeGateSnapshot(t, b, taskqueue.KeyGateID("s", "a"), func(p *taskqueue.SnapshotPayload) { p.Gate.Holders = nil })
	misnamed := forgeGateSnapshot(t, b, taskqueue.KeyGateID("s", "b"), func(p *taskqueue.SnapshotPayload) {
		p.Replaces = "sha256-0000000000000000000000000000000000000000000000000000000000000000"
	})
	fs, _ := verify(t, b.Store, audit.VerifyOptions{})
	if !hasFinding(fs, audit.FindingAltered, events.StreamQueue, freed, "") {
		t.Fatalf("no altered finding at the forged state #%d: %v", freed, fs)
	}
	if !hasFinding(fs, audit.FindingAltered, events.StreamQueue, misnamed, "") {
		t.Fatalf("no altered finding at the snapshot naming another event #%d: %v", misnamed, fs)
	}
	if len(fs) != 2 {
		t.Fatalf("findings %v; want the two forged snapshots only", fs)
	}
}

// TestVerifyChecksScheduleSnapshots: the snapshots a schedule appends as
// its ticks are taken up verify OK (each checked against the fold of the
// events it replaces, ticks included); a snapshot appended with NATS
// credentials alone, chained right, but carrying a forged state (ticks
// never fired) is an altered finding at its sequence.
func TestVerifyChecksScheduleSnapshots(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	q := taskqueue.New(b.Store, taskqueue.Config{ScheduleSnapshotEvery: 2})
	r, err := q.StartReactor(ctx, taskqueue.ReactorConfig{AckWait: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	if _, err := q.AddSchedule(ctx, trellis.ScheduleRequest{Name: "beat", Every: "1s", AddTaskRequest: trellis.AddTaskRequest{Queue: "c", Objective: "x"}}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for s, err := q.Schedule(ctx, "beat"); err != nil || s.Fired < 4; s, err = q.Schedule(ctx, "beat") {
		if time.Now().After(deadline) {
			t.Fatalf("the schedule did not fire 4 ticks: %+v, %v", s, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := q.RemoveSchedule(ctx, trellis.RemoveScheduleRequest{Name: "beat"}); err != nil {
		t.Fatal(err)
	}
	// The timer armed before the removal fires once more; then the
	// schedule is still.
	filter := taskqueue.ScheduleFilter("beat")
	for {
		recs, _, err := b.Store.Load(ctx, events.StreamQueue, filter)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(recs); n > 1 && recs[n-1].Type == taskqueue.Tick && recs[n-2].Type == taskqueue.ScheduleRemoved {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the pending tick after the removal did not come")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n := verifiedSnapshots(t, b.Store, "the schedule's snapshots"); n < 1 {
		t.Fatalf("verify checked %d snapshots; want the schedule's", n)
	}
	forged := forgeSnapshot(t, b, "beat", filter, "trellis.queue.c._schedule.beat."+taskqueue.Snapshot, func(recs []events.Recorded, p *taskqueue.SnapshotPayload) {
		s, err := taskqueue.FoldSchedule(recs)
		if err != nil {
			t.Fatal(err)
		}
		s.Fired = 1000
		p.Schedule = s
	})
	wantAlteredOnly(t, b.Store, forged)
}

// TestVerifyChecksControlSnapshots: the snapshots a queue's controls
// append every ControlSnapshotEvery changes verify OK; a snapshot
// appended with NATS credentials alone, chained right, carrying the
// queue resumed while its events leave it paused, is an altered finding.
func TestVerifyChecksControlSnapshots(t *testing.T) {
	t.Parallel()
	b, ctx, q := queueOnBundle(t)
	for i := 0; i < taskqueue.ControlSnapshotEvery+1; i++ { // ends paused
		var err error
		if i%2 == 0 {
			_, err = q.Pause(ctx, "k", "ops", "x")
		} else {
			_, err = q.Resume(ctx, "k", "ops")
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := verifiedSnapshots(t, b.Store, "the controls' snapshot"); n != 1 {
		t.Fatalf("verify checked %d snapshots; want the controls' 1", n)
	}
	forged := forgeSnapshot(t, b, "k", taskqueue.ControlFilter("k"), taskqueue.ControlSubject("k", taskqueue.Snapshot), func(recs []events.Recorded, p *taskqueue.SnapshotPayload) {
		c, err := taskqueue.FoldControls(recs)
		if err != nil || !c.Paused {
			t.Fatalf("controls %+v, %v; want paused", c, err)
		}
		c.Paused = false
		p.Controls = c
	})
	wantAlteredOnly(t, b.Store, forged)
}

// TestVerifyChecksUniqueSnapshots: the snapshot a unique key appends after
// UniqueSnapshotEvery adds verifies OK; one appended with NATS credentials
// alone, chained right, naming another holder (so a second task could take
// the key) is an altered finding.
func TestVerifyChecksUniqueSnapshots(t *testing.T) {
	t.Parallel()
	b, ctx, q := queueOnBundle(t)
	for i := 0; i < taskqueue.UniqueSnapshotEvery; i++ {
		task, err := q.Add(ctx, trellis.AddTaskRequest{Queue: "u", Objective: "x", UniqueKey: "k"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := q.Cancel(ctx, trellis.CancelRequest{TaskID: task.TaskID}); err != nil {
			t.Fatal(err)
		}
	}
	if n := verifiedSnapshots(t, b.Store, "the key's snapshot"); n != 1 {
		t.Fatalf("verify checked %d snapshots; want the key's 1", n)
	}
	id := taskqueue.UniqueID("u", "k")
	forged := forgeSnapshot(t, b, id, "trellis.queue."+id+".>", "trellis.queue."+id+"."+taskqueue.Snapshot, func(_ []events.Recorded, p *taskqueue.SnapshotPayload) {
		p.Unique = &taskqueue.UniqueHold{TaskID: "01ARZ3NDEKTSV4RRFFQ69G5FAV"}
	})
	wantAlteredOnly(t, b.Store, forged)
}
