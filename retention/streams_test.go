package retention_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/trellis/trellis/audit"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/retention"
	"github.com/trellis/trellis/workflow"
)

// appendRun appends a chain of n events of a workflow run (started, then
// step_completed) and returns their sequences.
func appendRun(t *testing.T, store *events.Store, n int) (string, []uint64) {
	t.Helper()
	ctx := ctxT(t)
	id := events.NewID(time.Now())
	var seqs []uint64
	var last uint64
	prev := ""
	for i := 0; i < n; i++ {
		typ, body := "step_completed", map[string]any{"pos": i - 1, "name": "s"}
		if i == 0 {
			typ, body = "started", map[string]any{"workflow": "w", "version": 1, "queue": "wq", "input": map[string]any{}}
		}
		env, err := events.NewEnvelope(time.Now(), typ, id, "test", 1, body)
		if err != nil {
			t.Fatal(err)
		}
		env.Prev = prev
		filter := "trellis.workflows.run." + id + ".>"
		ack, err := store.Append(ctx, "trellis.workflows.run."+id+"."+typ, env, events.Expect{Filter: filter, LastSeq: last}, env.ID)
		if err != nil {
			t.Fatal(err)
		}
		last, prev = ack.Seq, events.Hash(env)
		seqs = append(seqs, ack.Seq)
	}
	return id, seqs
}

// appendRecord appends a prune record of stream (signed with key when
// not empty) naming removed.
func appendRecord(t *testing.T, store *events.Store, stream string, removed [][2]uint64, aggregates []string, key []byte) {
	t.Helper()
	ctx := ctxT(t)
	recs, last, err := store.Load(ctx, events.StreamQueue, events.RetentionFilter)
	if err != nil && !errors.Is(err, events.ErrNotFound) {
		t.Fatal(err)
	}
	p := events.PrunedPayload{Stream: stream, Cut: time.Now().UTC().Format(time.RFC3339Nano), Archive: "prune-x.jsonl",
		Digest: "00", Events: len(removed), Removed: removed, Aggregates: aggregates}.Sign(key)
	env, err := events.NewEnvelope(time.Now(), events.PrunedType, events.RetentionAggregate, "trellis-prune", events.PrunedSchema, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) > 0 {
		env.Prev = events.Hash(recs[len(recs)-1].Envelope)
	}
	if _, err := store.Append(ctx, events.RetentionSubjectPrefix+events.PrunedType, env,
		events.Expect{Filter: events.RetentionFilter, LastSeq: last}, env.ID); err != nil {
		t.Fatal(err)
	}
}

// removedOn counts the removed findings on stream within seqs.
func removedOn(fs []audit.Finding, stream string, seqs []uint64) int {
	n := 0
	for _, f := range fs {
		if f.Kind == audit.FindingRemoved && f.Stream == stream && f.Seq >= seqs[0] && f.Seq <= seqs[len(seqs)-1] {
			n++
		}
	}
	return n
}

// TestVerifyTrustsPruneRecordsOfOtherStreams: sequences deleted from the
// workflow stream are a removal unless a prune record trusted under the
// audit key (on the queue stream's retention log) names them: with such a
// record verify is OK; a record without the key's MAC (a client holding
// NATS credentials only) excuses nothing.
func TestVerifyTrustsPruneRecordsOfOtherStreams(t *testing.T) {
	t.Parallel()
	store := eventstest.Start(t).Store
	ctx := ctxT(t)
	key, err := audit.AnchorKey(t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = appendRun(t, store, 3)
	pruned, ps := appendRun(t, store, 3)
	forged, fs := appendRun(t, store, 3)
	_, _ = appendRun(t, store, 2) // the stream's last events stay
	verifyKeyed := func() []audit.Finding {
		var out []audit.Finding
		if _, err := audit.Verify(ctx, store, audit.VerifyOptions{AnchorKey: key}, func(f audit.Finding) error { out = append(out, f); return nil }); err != nil {
			t.Fatal(err)
		}
		return out
	}
	if got := verifyKeyed(); len(got) != 0 {
		t.Fatalf("verify before any removal: %+v", got)
	}
	stream, err := store.JetStream().Stream(ctx, events.StreamWorkflows)
	if err != nil {
		t.Fatal(err)
	}
	remove := func(seqs []uint64) {
		for _, s := range seqs {
			if err := stream.DeleteMsg(context.Background(), s); err != nil {
				t.Fatal(err)
			}
		}
	}
	remove(ps)
	if got := verifyKeyed(); removedOn(got, events.StreamWorkflows, ps) == 0 {
		t.Fatalf("a removal from the workflow stream without a record went unseen: %+v", got)
	}
	appendRecord(t, store, events.StreamWorkflows, [][2]uint64{{ps[0], ps[len(ps)-1]}}, []string{pruned}, key)
	if got := verifyKeyed(); len(got) != 0 {
		t.Fatalf("verify with a trusted record naming the removed sequences: %+v", got)
	}
	appendRecord(t, store, events.StreamWorkflows, [][2]uint64{{fs[0], fs[len(fs)-1]}}, []string{forged}, nil)
	remove(fs)
	if got := verifyKeyed(); removedOn(got, events.StreamWorkflows, fs) == 0 {
		t.Fatalf("a removal excused by a record without the key went unseen: %+v", got)
	}
	// The first record still excuses its own sequences.
	if got := verifyKeyed(); removedOn(got, events.StreamWorkflows, ps) != 0 {
		t.Fatalf("the trusted record's sequences reported removed: %+v", got)
	}
}

// runLog appends chained events of workflow runs directly (as the engine
// would), one run at a time.
type runLog struct {
	t     *testing.T
	store *events.Store
	last  map[string]uint64
	prev  map[string]string
}

func (l *runLog) add(id, typ string, payload any) {
	l.t.Helper()
	env, err := events.NewEnvelope(time.Now(), typ, id, "test", 1, payload)
	if err != nil {
		l.t.Fatal(err)
	}
	env.Prev = l.prev[id]
	ack, err := l.store.Append(ctxT(l.t), workflow.RunSubject(id, typ), env, events.Expect{Filter: workflow.RunFilter(id), LastSeq: l.last[id]}, env.ID)
	if err != nil {
		l.t.Fatal(err)
	}
	l.last[id], l.prev[id] = ack.Seq, events.Hash(env)
}

// TestPruneKeepsRunsOfOpenFamilies: a finished child run whose parent is
// still open, and a finished parent whose child is still open, stay
// whole; once both ends are in, a prune removes them.
func TestPruneKeepsRunsOfOpenFamilies(t *testing.T) {
	t.Parallel()
	store := eventstest.Start(t).Store
	ctx := ctxT(t)
	l := &runLog{t: t, store: store, last: map[string]uint64{}, prev: map[string]string{}}
	start := func(parent string) string {
		id := events.NewID(time.Now())
		l.add(id, workflow.Started, workflow.StartedPayload{Workflow: "w", Version: 1, Queue: "wq", Input: json.RawMessage(`{}`), Parent: parent})
		return id
	}
	end := func(id string) { l.add(id, workflow.Completed, workflow.EndPayload{Output: json.RawMessage(`"ok"`)}) }
	// An open parent with a finished child.
	parent1 := start("")
	child1 := start(parent1)
	l.add(parent1, workflow.ChildStarted, workflow.EntryPayload{Pos: 0, Name: "kid", Children: []string{child1}})
	end(child1)
	// A finished parent (cancelled) with an open child.
	parent2 := start("")
	child2 := start(parent2)
	l.add(parent2, workflow.ChildStarted, workflow.EntryPayload{Pos: 0, Name: "kid", Children: []string{child2}})
	l.add(parent2, workflow.Cancelled, workflow.EndPayload{Reason: "stop"})
	last := start("") // the stream's last events stay
	end(last)
	dir := t.TempDir()
	res, err := retention.Prune(ctx, store, retention.Options{OlderThan: time.Minute, Archive: dir, Now: later})
	if err != nil {
		t.Fatal(err)
	}
	if res.Runs != 1 || res.RunsKept["its parent run is open"] != 1 || res.RunsKept["a child run of it is open"] != 1 || res.RunsKept["open"] != 2 {
		t.Fatalf("pruned %d runs, kept %v; want the unrelated one pruned, child1 and parent2 kept for their family, parent1 and child2 open", res.Runs, res.RunsKept)
	}
	l.add(parent1, workflow.ChildEnded, workflow.EntryPayload{Pos: 0, Name: "kid", Children: []string{child1}})
	end(parent1)
	end(child2)
	res, err = retention.Prune(ctx, store, retention.Options{OlderThan: time.Minute, Archive: dir, Now: later})
	if err != nil {
		t.Fatal(err)
	}
	if res.Runs != 4 {
		t.Fatalf("second prune: %d runs (kept %v); want both families", res.Runs, res.RunsKept)
	}
	if fs := verifyLog(t, store); len(fs) > 0 {
		t.Fatalf("verify: %v", fs)
	}
}

// appendVine appends n chained events of one VINE graph and returns
// their sequences.
func appendVine(t *testing.T, store *events.Store, n int) []uint64 {
	t.Helper()
	id := events.NewID(time.Now())
	var seqs []uint64
	var last uint64
	prev := ""
	for i := 0; i < n; i++ {
		env, err := events.NewEnvelope(time.Now(), "node_added", id, "test", 1, map[string]any{"node": i})
		if err != nil {
			t.Fatal(err)
		}
		env.Prev = prev
		ack, err := store.Append(ctxT(t), "trellis.vine."+id+".node_added", env, events.Expect{Filter: "trellis.vine." + id + ".>", LastSeq: last}, env.ID)
		if err != nil {
			t.Fatal(err)
		}
		last, prev = ack.Seq, events.Hash(env)
		seqs = append(seqs, ack.Seq)
	}
	return seqs
}

// TestVerifyDistrustsPruneRecordsOfUnprunedStreams: prunes remove events
// from the queue, workflow and agent task streams only. A deletion from
// the VINE stream stays a removal for verify, with or without the key,
// even when a prune record (signed under the key, or not) names it.
func TestVerifyDistrustsPruneRecordsOfUnprunedStreams(t *testing.T) {
	t.Parallel()
	store := eventstest.Start(t).Store
	ctx := ctxT(t)
	key, err := audit.AnchorKey(t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	seqs := appendVine(t, store, 3)
	_ = appendVine(t, store, 1) // the stream's last event stays
	stream, err := store.JetStream().Stream(ctx, events.StreamVine)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range seqs {
		if err := stream.DeleteMsg(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	appendRecord(t, store, events.StreamVine, [][2]uint64{{seqs[0], seqs[len(seqs)-1]}}, []string{"graph"}, key)
	appendRecord(t, store, events.StreamVine, [][2]uint64{{seqs[0], seqs[len(seqs)-1]}}, []string{"graph"}, nil)
	for _, k := range [][]byte{key, nil} {
		var fs []audit.Finding
		if _, err := audit.Verify(ctx, store, audit.VerifyOptions{AnchorKey: k}, func(f audit.Finding) error { fs = append(fs, f); return nil }); err != nil {
			t.Fatal(err)
		}
		if removedOn(fs, events.StreamVine, seqs) == 0 {
			t.Fatalf("verify (key %t): a removal from the VINE stream excused by a prune record naming it: %+v", k != nil, fs)
		}
	}
}
