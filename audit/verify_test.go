package audit_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/audit"
	"github.com/trellis/trellis/codememory"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/internal/servicetest"
	"github.com/trellis/trellis/taskqueue"
)

// verify runs Verify over the whole log and returns its findings.
func verify(t *testing.T, store *events.Store, opts audit.VerifyOptions) ([]audit.Finding, *audit.VerifyReport) {
	t.Helper()
	var fs []audit.Finding
	rep, err := audit.Verify(context.Background(), store, opts, func(f audit.Finding) error {
		fs = append(fs, f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return fs, rep
}

// hasFinding reports whether fs holds a finding of kind at (stream, seq)
// naming aggregate (when not empty).
func hasFinding(fs []audit.Finding, kind, stream string, seq uint64, aggregate string) bool {
	for _, f := range fs {
		if f.Kind == kind && f.Stream == stream && f.Seq == seq && (aggregate == "" || f.Aggregate == aggregate) {
			return true
		}
	}
	return false
}

func streamReport(rep *audit.VerifyReport, name string) audit.StreamVerification {
	for _, s := range rep.Streams {
		if s.Stream == name {
			return s
		}
	}
	return audit.StreamVerification{}
}

// rawPublish stores data on subject directly, as someone with publish
// rights on the stream could, bypassing Trellis.
func rawPublish(t *testing.T, b *eventstest.Bundle, subject string, data []byte) uint64 {
	t.Helper()
	ack, err := b.Store.JetStream().Publish(context.Background(), subject, data)
	if err != nil {
		t.Fatal(err)
	}
	return ack.Sequence
}

func envelopeJSON(t *testing.T, e events.Envelope) []byte {
	t.Helper()
	data, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestVerifyFindsTampering: a clean log verifies; then messages are
// deleted, securely deleted, edited (deleted and republished changed) and
// reordered directly on the stream, and verify reports each with its
// position (stream, sequence, aggregate) while events from before the
// chain existed are reported unchained, not tampered.
func TestVerifyFindsTampering(t *testing.T) {
	t.Parallel()
	svc, b := servicetest.Start(t)
	ctx := context.Background()
	deleted := servicetest.RunTask(t, svc, "jobs", "w1")   // its claim is deleted
	lastGone := servicetest.RunTask(t, svc, "jobs", "w2")  // its last event is securely deleted
	edited := servicetest.RunTask(t, svc, "jobs", "w3")    // its claim is edited
	reordered := servicetest.RunTask(t, svc, "jobs", "w4") // its claim and completion swap
	servicetest.RunTask(t, svc, "other", "w5")             // untouched, after all of them

	// Events from before the chain existed: a task whose events carry no
	// prev, as earlier versions appended them.
	legacy := events.NewID(time.Now())
	for _, typ := range []string{taskqueue.Added, taskqueue.Claimed} {
		var payload any = map[string]any{"queue": "jobs", "objective": "old", "budget": map[string]int{"max_tool_calls": 1, "max_steps": 1}}
		if typ == taskqueue.Claimed {
			payload = map[string]any{"worker": "old-worker", "attempt": 1}
		}
		e, err := events.NewEnvelope(time.Now(), typ, legacy, "old-worker", 1, payload)
		if err != nil {
			t.Fatal(err)
		}
		// Earlier versions sent the event id as Nats-Msg-Id too.
		if _, err := b.Store.JetStream().Publish(ctx, taskqueue.Subject("jobs", legacy, typ), envelopeJSON(t, e), jetstream.WithMsgID(e.ID)); err != nil {
			t.Fatal(err)
		}
	}

	fs, rep := verify(t, b.Store, audit.VerifyOptions{})
	q := streamReport(rep, events.StreamQueue)
	if !rep.OK || len(fs) != 0 {
		t.Fatalf("clean log: %v", fs)
	}
	if q.Chained != 10 || q.Unchained != 1 || q.UnchainedAggregates != 1 || q.Aggregates != 6 {
		t.Fatalf("clean log stats: %+v", q.ChainStats)
	}

	st, err := b.Store.JetStream().Stream(ctx, events.StreamQueue)
	if err != nil {
		t.Fatal(err)
	}
	// 1. Removed: the claim of the first task.
	if err := st.DeleteMsg(ctx, deleted[1].Seq); err != nil {
		t.Fatal(err)
	}
	// 2. Removed: the last event of the second task, which no link names.
	if err := st.SecureDeleteMsg(ctx, lastGone[2].Seq); err != nil {
		t.Fatal(err)
	}
	// 3. Altered: the third task's claim, republished with another worker.
	changed := edited[1].Envelope
	changed.Payload = json.RawMessage(`{"worker":"mallory","attempt":1}`)
	changed.Actor = "mallory"
	if err := st.DeleteMsg(ctx, edited[1].Seq); err != nil {
		t.Fatal(err)
	}
	copySeq := rawPublish(t, b, edited[1].Subject, envelopeJSON(t, changed))
	// 4. Reordered: the fourth task's completion stored before its claim.
	for _, r := range reordered[1:] {
		if err := st.DeleteMsg(ctx, r.Seq); err != nil {
			t.Fatal(err)
		}
	}
	movedDone := rawPublish(t, b, reordered[2].Subject, envelopeJSON(t, reordered[2].Envelope))
	movedClaim := rawPublish(t, b, reordered[1].Subject, envelopeJSON(t, reordered[1].Envelope))

	fs, rep = verify(t, b.Store, audit.VerifyOptions{})
	if rep.OK {
		t.Fatal("tampered log verified OK")
	}
	Q := events.StreamQueue
	want := []struct {
		kind      string
		seq       uint64
		aggregate string
		why       string
	}{
		{audit.FindingRemoved, deleted[1].Seq, "", "the deleted claim shows as a gap"},
		{audit.FindingRemoved, deleted[2].Seq, deleted[0].AggregateID, "the completion chains to the deleted claim"},
		{audit.FindingRemoved, lastGone[2].Seq, "", "the securely deleted last event shows as a gap"},
		{audit.FindingRemoved, edited[1].Seq, "", "the edited claim's old place shows as a gap"},
		{audit.FindingRemoved, edited[2].Seq, edited[0].AggregateID, "the completion chains to the original claim"},
		{audit.FindingAltered, copySeq, edited[0].AggregateID, "the changed copy"},
		{audit.FindingForeign, copySeq, edited[0].AggregateID, "the changed copy was published without a message id"},
		{audit.FindingRemoved, reordered[1].Seq, "", "the moved events' old places"},
		{audit.FindingReordered, movedDone, reordered[0].AggregateID, "the completion now stands before the claim it chains to"},
		{audit.FindingReordered, movedClaim, reordered[0].AggregateID, "the claim now stands after the completion"},
	}
	for _, w := range want {
		if !hasFinding(fs, w.kind, Q, w.seq, w.aggregate) {
			t.Errorf("no %s finding at %s #%d %s (%s)", w.kind, Q, w.seq, w.aggregate, w.why)
		}
	}
	for _, f := range fs {
		if f.Aggregate == legacy {
			t.Errorf("the unchained legacy task was reported: %v", f)
		}
		if f.Stream != Q {
			t.Errorf("finding on an untouched stream: %v", f)
		}
	}
	for _, f := range fs {
		t.Log(f)
	}
	if q := streamReport(rep, Q); q.Deleted == 0 || q.Unchained != 1 {
		t.Errorf("stream report: %+v", q)
	}

	// --since the edit: the edit's copy is still checked against its
	// aggregate's earlier events, read back from the log.
	var since time.Time
	err = b.Store.Scan(ctx, Q, events.ScanRange{From: copySeq, To: copySeq}, func(m events.Message) error {
		since = m.Stored
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	fs, _ = verify(t, b.Store, audit.VerifyOptions{Since: since})
	if !hasFinding(fs, audit.FindingAltered, Q, copySeq, edited[0].AggregateID) || hasFinding(fs, audit.FindingRemoved, Q, deleted[1].Seq, "") {
		t.Errorf("verify --since: %v", fs)
	}
}

// TestVerifyBoundedCacheAndUnchainedIngest: with room for one aggregate
// in memory, verify spills the others to its file and reads them back
// when their next event comes (two tasks whose events interleave), and
// finds the same evidence; code-memory ingest runs on the command runner,
// so a file's second ingest chains to its first.
func TestVerifyBoundedCacheAndChainedIngest(t *testing.T) {
	t.Parallel()
	svc, b := servicetest.Start(t)
	ctx := context.Background()
	var ids []string
	for i := 0; i < 2; i++ {
		task, err := svc.Add(ctx, trellis.AddTaskRequest{Queue: "jobs", Objective: "interleaved"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, task.TaskID)
	}
	for range ids {
		if _, err := svc.Next(ctx, trellis.NextRequest{Queue: "jobs", Worker: "w"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range ids {
		if _, err := svc.Done(ctx, trellis.DoneRequest{TaskID: id, Worker: "w", WhatWasDone: "done"}); err != nil {
			t.Fatal(err)
		}
	}
	root := t.TempDir()
	servicetest.WriteFiles(t, root, map[string]string{"notes.txt": "first version\n"})
	if _, err := codememory.Ingest(ctx, b.Store, codememory.IngestConfig{Root: root, Repo: "r"}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "notes.txt"), []byte("second version, longer\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := codememory.Ingest(ctx, b.Store, codememory.IngestConfig{Root: root, Repo: "r"}); err != nil {
		t.Fatal(err)
	}
	fs, rep := verify(t, b.Store, audit.VerifyOptions{CacheSize: 1})
	if q := streamReport(rep, events.StreamQueue); !rep.OK || q.Chained != 4 || q.Aggregates != 2 {
		t.Fatalf("clean log with a small cache: %+v %v", q.ChainStats, fs)
	}
	c := streamReport(rep, events.StreamChunks)
	if c.Chained == 0 || c.Unchained != 0 {
		t.Fatalf("chunks stream: %+v", c)
	}
	a, err := audit.AggregateEvents(ctx, b.Store, ids[0])
	if err != nil {
		t.Fatal(err)
	}
	st, err := b.Store.JetStream().Stream(ctx, events.StreamQueue)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteMsg(ctx, a[1].Seq); err != nil {
		t.Fatal(err)
	}
	fs, _ = verify(t, b.Store, audit.VerifyOptions{CacheSize: 1})
	if !hasFinding(fs, audit.FindingRemoved, events.StreamQueue, a[2].Seq, ids[0]) {
		t.Fatalf("small cache: %v", fs)
	}
}
