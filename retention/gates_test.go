package retention_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/audit"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/retention"
	"github.com/trellis/trellis/taskqueue"
)

// gateEvents returns the events the live log holds of gate id.
func gateEvents(t *testing.T, store *events.Store, id string) []events.Recorded {
	t.Helper()
	recs, _, err := store.Load(ctxT(t), events.StreamQueue, "trellis.queue."+id+".>")
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// archivedLast returns the hash of the last event of aggregate filter's
// subjects in an archive ("" when it holds none).
func archivedLast(t *testing.T, path, prefix string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 8<<20)
	last := ""
	for sc.Scan() {
		var l audit.ExportLine
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Event != nil && len(l.Subject) > len(prefix) && l.Subject[:len(prefix)] == prefix {
			last = l.Hash
		}
	}
	return last
}

// TestPruneCutsGateHistory: a queue with a rate and a per-key limit
// records every claim on its gate and its key's gate; each snapshots
// itself. A prune cuts both at their last snapshot: the live log keeps at
// most GateSnapshotEvery+1 events of each (a cold start folds no more),
// the events before go to an archive whose last event of each gate is
// what the snapshot chains to, and the states are the ones a replay of
// the whole history gave. audit verify (with the audit key) is OK on the
// live log and on every archive; the key's held slot still refuses a
// second claim in another process until its task is done; verify with
// another key does not trust the record's continuation.
func TestPruneCutsGateHistory(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	ctx := ctxT(t)
	q := taskqueue.New(b.Store, taskqueue.Config{})
	if _, err := q.SetPerKey(ctx, "gq", "ops", 1); err != nil {
		t.Fatal(err)
	}
	if _, err := q.SetRate(ctx, "gq", "ops", "100000/s", 100000); err != nil {
		t.Fatal(err)
	}
	const n = 150
	var held *trellis.Task
	for i := 0; i < n; i++ {
		if _, err := q.Add(ctx, trellis.AddTaskRequest{Queue: "gq", Objective: "gated", ConcurrencyKey: "repo"}); err != nil {
			t.Fatal(err)
		}
		got, err := q.Next(ctx, trellis.NextRequest{Queue: "gq", Worker: "w"})
		if err != nil || got == nil {
			t.Fatalf("claim %d: %+v, %v", i, got, err)
		}
		held = got
		if i < n-1 {
			if _, err := q.Done(ctx, trellis.DoneRequest{TaskID: got.TaskID, Worker: "w", WhatWasDone: "ok"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	ids := []string{taskqueue.GateID("gq"), taskqueue.KeyGateID("gq", "repo")}
	before := map[string]*taskqueue.Gate{}
	gateEventsBefore := map[string][]events.Recorded{}
	for _, id := range ids {
		recs := gateEvents(t, b.Store, id)
		gateEventsBefore[id] = recs
		if len(recs) < n {
			t.Fatalf("gate %s holds %d events; want the %d claims at least", id, len(recs), n)
		}
		g, err := taskqueue.FoldGate(recs)
		if err != nil {
			t.Fatal(err)
		}
		before[id] = g
	}
	key := []byte("0123456789abcdef0123456789abcdef")
	res, err := retention.Prune(ctx, b.Store, retention.Options{OlderThan: time.Minute, Archive: t.TempDir(), Now: later, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("prune: %d finished tasks, %d gate events cut, %d sequences removed, %d ms", res.Tasks, res.GateEvents, res.Sequences, res.Millis)
	if res.GateEvents < 2*(n-taskqueue.GateSnapshotEvery) {
		t.Fatalf("prune cut %d gate events; want at least %d; kept %v", res.GateEvents, 2*(n-taskqueue.GateSnapshotEvery), res.Kept)
	}
	var fs []audit.Finding
	verifyKeyed := func(k []byte) *audit.VerifyReport {
		fs = nil
		rep, err := audit.Verify(ctx, b.Store, audit.VerifyOptions{AnchorKey: k}, func(f audit.Finding) error { fs = append(fs, f); return nil })
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	rep := verifyKeyed(key)
	if len(fs) > 0 {
		t.Fatalf("verify after the gates were cut: %v", fs)
	}
	for _, s := range rep.Streams {
		if s.Stream == events.StreamQueue && s.Continued != 2 {
			t.Fatalf("verify saw %d gates continued from a snapshot; want 2", s.Continued)
		}
	}
	for _, ar := range res.Archives {
		if fs, _ := verifyArchive(t, ar.File); len(fs) > 0 {
			t.Fatalf("verify --file %s: %v", ar.File, fs)
		}
	}
	for _, id := range ids {
		recs := gateEvents(t, b.Store, id)
		t.Logf("gate %s: %d events before the prune, %d after", id, len(gateEventsBefore[id]), len(recs))
		if len(recs) > taskqueue.GateSnapshotEvery+1 {
			t.Fatalf("gate %s keeps %d events after the prune; want at most %d", id, len(recs), taskqueue.GateSnapshotEvery+1)
		}
		if recs[0].Type != taskqueue.Snapshot {
			t.Fatalf("gate %s: first live event is %s; want its snapshot", id, recs[0].Type)
		}
		g, err := taskqueue.FoldGate(recs)
		if err != nil {
			t.Fatal(err)
		}
		if !taskqueue.SameGate(g, before[id]) {
			t.Fatalf("gate %s after the prune %+v; before %+v", id, g, before[id])
		}
		// The snapshot chains to the archive's last event of the gate.
		found := false
		for _, ar := range res.Archives {
			if h := archivedLast(t, ar.File, "trellis.queue."+id+"."); h != "" && h == recs[0].Prev {
				found = true
			}
		}
		if !found {
			t.Fatalf("gate %s: no archive ends with the event its snapshot chains to (%s)", id, recs[0].Prev)
		}
	}
	// Another process decides on the cut gates.
	other := taskqueue.New(b.Store, taskqueue.Config{})
	y, err := other.Add(ctx, trellis.AddTaskRequest{Queue: "gq", Objective: "after the prune", ConcurrencyKey: "repo"})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := other.Next(ctx, trellis.NextRequest{Queue: "gq", Worker: "w2"}); err != nil || got != nil {
		t.Fatalf("claim while the key's slot is held: %+v, %v; want nothing", got, err)
	}
	if _, err := q.Done(ctx, trellis.DoneRequest{TaskID: held.TaskID, Worker: "w", WhatWasDone: "ok"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the freed slot is taken", func() bool {
		got, err := other.Next(context.Background(), trellis.NextRequest{Queue: "gq", Worker: "w2"})
		if err != nil {
			t.Fatal(err)
		}
		return got != nil && got.TaskID == y.TaskID
	})
	if verifyKeyed(key); len(fs) > 0 {
		t.Fatalf("verify after claims on the cut gates: %v", fs)
	}
	// A record is trusted only under the key it was made with: under
	// another, the cut gates' first events chain to events that are gone.
	verifyKeyed([]byte("another key, another key, 32 byt"))
	removed := 0
	for _, f := range fs {
		if f.Kind == audit.FindingRemoved && f.Subject != "" && taskqueue.IsGateSubject(f.Subject) {
			removed++
		}
	}
	if removed < 2 {
		t.Fatalf("verify under another key: %d removed findings on the gates; want 2: %v", removed, fs)
	}
}

// TestPruneKeepsGateWithForgedSnapshot: a client holding only NATS
// credentials appends a snapshot to a key's gate, chained right but with
// the held slot freed. A prune does not cut the gate there (it is kept
// whole, with the reason) and audit verify reports the snapshot altered.
func TestPruneKeepsGateWithForgedSnapshot(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	ctx := ctxT(t)
	q := taskqueue.New(b.Store, taskqueue.Config{})
	if _, err := q.SetPerKey(ctx, "fq", "ops", 1); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := q.Add(ctx, trellis.AddTaskRequest{Queue: "fq", Objective: "gated", ConcurrencyKey: "k"}); err != nil {
			t.Fatal(err)
		}
		got, err := q.Next(ctx, trellis.NextRequest{Queue: "fq", Worker: "w"})
		if err != nil || got == nil {
			t.Fatalf("claim %d: %+v, %v", i, got, err)
		}
		if i < 2 {
			if _, err := q.Done(ctx, trellis.DoneRequest{TaskID: got.TaskID, Worker: "w", WhatWasDone: "ok"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	id := taskqueue.KeyGateID("fq", "k")
	recs := gateEvents(t, b.Store, id)
	head := events.Hash(recs[len(recs)-1].Envelope)
	g, err := taskqueue.FoldGate(recs)
	if err != nil {
		t.Fatal(err)
	}
	g.Holders = nil
	env, err := events.NewEnvelope(time.Now(), taskqueue.Snapshot, id, "trellis", taskqueue.Schema,
		taskqueue.SnapshotPayload{Replaces: head, ReplacesSeq: recs[len(recs)-1].Seq, Gate: g})
	if err != nil {
		t.Fatal(err)
	}
	env.Prev = head
	forged, err := b.Store.Append(ctx, "trellis.queue."+id+"."+taskqueue.Snapshot, env,
		events.Expect{Filter: "trellis.queue." + id + ".>", LastSeq: recs[len(recs)-1].Seq}, "")
	if err != nil {
		t.Fatal(err)
	}
	res, err := retention.Prune(ctx, b.Store, retention.Options{OlderThan: time.Minute, Archive: t.TempDir(), Now: later})
	if err != nil {
		t.Fatal(err)
	}
	if res.GateEvents != 0 || res.GatesKept["a snapshot of it does not match the events it replaces"] != 1 {
		t.Fatalf("prune cut %d gate events, kept gates %v; want the gate kept whole for its forged snapshot", res.GateEvents, res.GatesKept)
	}
	if n := len(gateEvents(t, b.Store, id)); n != len(recs)+1 {
		t.Fatalf("the gate holds %d events after the prune; want all %d", n, len(recs)+1)
	}
	fs := verifyLog(t, b.Store)
	if len(fs) != 1 || fs[0].Kind != audit.FindingAltered || fs[0].Seq != forged.Seq {
		t.Fatalf("verify: %v; want the forged snapshot #%d altered", fs, forged.Seq)
	}
}

// TestPruneGateStoppedAfterRecord: a prune stopped after it recorded a
// gate's cut, while it removed the cut events (some removed, its context
// cancelled there, as a kill would stop it), leaves the log
// verifiable and the gate's state as it was, and loads of the gate see
// that state; the next prune finishes the removal.
func TestPruneGateStoppedAfterRecord(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	ctx := ctxT(t)
	q := taskqueue.New(b.Store, taskqueue.Config{})
	if _, err := q.SetRate(ctx, "sq", "ops", "100000/s", 100000); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < taskqueue.GateSnapshotEvery+10; i++ {
		if _, err := q.Add(ctx, trellis.AddTaskRequest{Queue: "sq", Objective: "gated"}); err != nil {
			t.Fatal(err)
		}
		if got, err := q.Next(ctx, trellis.NextRequest{Queue: "sq", Worker: "w"}); err != nil || got == nil {
			t.Fatalf("claim %d: %+v, %v", i, got, err)
		}
	}
	id := taskqueue.GateID("sq")
	before, err := taskqueue.FoldGate(gateEvents(t, b.Store, id))
	if err != nil {
		t.Fatal(err)
	}
	stopped, stop := context.WithCancel(ctx)
	partly := func() {
		// Stopped in the middle of the removal: the gate's first 10
		// events (of the 64 before its snapshot) are gone already.
		stream, err := b.Store.JetStream().Stream(ctx, events.StreamQueue)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range gateEvents(t, b.Store, id)[:10] {
			if err := stream.DeleteMsg(ctx, r.Seq); err != nil {
				t.Fatal(err)
			}
		}
		stop()
	}
	_, err = retention.Prune(stopped, b.Store, retention.Options{OlderThan: time.Minute, Archive: t.TempDir(), Now: later, AfterGateRecord: partly})
	if err == nil {
		t.Fatal("a prune stopped after its gate record reported success")
	}
	check := func(when string) []events.Recorded {
		t.Helper()
		if fs := verifyLog(t, b.Store); len(fs) > 0 {
			t.Fatalf("verify %s: %v", when, fs)
		}
		recs := gateEvents(t, b.Store, id)
		g, err := taskqueue.FoldGate(recs)
		if err != nil {
			t.Fatal(err)
		}
		if !taskqueue.SameGate(g, before) {
			t.Fatalf("gate %s: %+v; before %+v", when, g, before)
		}
		return recs
	}
	check("after the stopped prune")
	res, err := retention.Prune(ctx, b.Store, retention.Options{OlderThan: time.Minute, Archive: t.TempDir(), Now: later})
	if err != nil {
		t.Fatal(err)
	}
	if res.Completed == 0 {
		t.Fatalf("the next prune finished nothing of the stopped one: %+v", res)
	}
	if recs := check("after the next prune"); len(recs) != 11 || recs[0].Type != taskqueue.Snapshot {
		t.Fatalf("the gate keeps %d events; want its snapshot and the 10 after it", len(recs))
	}
}

// TestPruneCancelledKeepsGateArchive: a gate batch whose record append is
// in doubt (the prune is cancelled once its archive is durable) keeps its
// archive, as a task batch does: the record may be stored and name it,
// and the next prune would then remove the events only it holds.
func TestPruneCancelledKeepsGateArchive(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	ctx := ctxT(t)
	q := taskqueue.New(b.Store, taskqueue.Config{})
	if _, err := q.SetRate(ctx, "cq", "ops", "100000/s", 100000); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < taskqueue.GateSnapshotEvery+10; i++ {
		if _, err := q.Add(ctx, trellis.AddTaskRequest{Queue: "cq", Objective: "gated"}); err != nil {
			t.Fatal(err)
		}
		if got, err := q.Next(ctx, trellis.NextRequest{Queue: "cq", Worker: "w"}); err != nil || got == nil {
			t.Fatalf("claim %d: %+v, %v", i, got, err)
		}
	}
	stopped, stop := context.WithCancel(ctx)
	var written string
	_, err := retention.Prune(stopped, b.Store, retention.Options{OlderThan: time.Minute, Archive: t.TempDir(), Now: later,
		AfterArchive: func(path string) { written = path; stop() }})
	if err == nil || written == "" {
		t.Fatalf("a prune cancelled after its gate archive: %v (archive %q)", err, written)
	}
	if _, err := os.Stat(written); err != nil {
		t.Fatalf("the archive of a gate batch in doubt was removed: %v", err)
	}
	if _, err := retention.Prune(ctx, b.Store, retention.Options{OlderThan: time.Minute, Archive: t.TempDir(), Now: later}); err != nil {
		t.Fatal(err)
	}
	if fs := verifyLog(t, b.Store); len(fs) > 0 {
		t.Fatalf("verify: %v", fs)
	}
}
