package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/audit"
	"github.com/trellis/trellis/auth"
	"github.com/trellis/trellis/codememory"
	"github.com/trellis/trellis/embedding"
	"github.com/trellis/trellis/embedding/embeddingtest"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/handlers"
	"github.com/trellis/trellis/server"
)

// everyFeature is a server whose log holds an event of every kind Trellis
// writes.
type everyFeature struct {
	srv     *server.Server
	data    string
	delayed string // the delayed task (its due event was published by its timer)
	prio    string // the task of priority 1 (its dispatches carry .p1)
	pre     string // a prerequisite (its completion carries .d)
}

// claimOf polls until worker w claims a task of queue q (a delayed or
// gated task is claimable once its time comes; fails after a minute).
func claimOf(t *testing.T, svc *handlers.Service, q, w string) *trellis.Task {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		task, err := svc.Next(context.Background(), trellis.NextRequest{Queue: q, Worker: w})
		if err == nil && task != nil {
			return task
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing to claim in %s within a minute: %v", q, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// useEveryFeature starts a server and uses every feature of every domain:
// queue priorities, delays (a timer fired, one waiting), dependencies,
// a periodic schedule that fired, unique and idempotency keys, rate and
// per-key gates, pause/resume/limit/lease, retry and cancel; tokens; VINE
// graphs; agent memory; code ingest with a payload in the blob bucket and
// embeddings.
func useEveryFeature(t *testing.T) *everyFeature {
	t.Helper()
	ctx := context.Background()
	data := t.TempDir()
	ws := t.TempDir()
	model := embeddingtest.Start(t, embeddingtest.Options{Dims: 16})
	emb, err := embedding.NewOpenAI(embedding.OpenAIConfig{URL: model.URL, Model: "toy", Retries: -1})
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	srv, err := server.Start(sctx, server.Config{DataDir: data, NATSAddr: "127.0.0.1:0", ServeAPI: true, WriteInfo: true, SyncInterval: time.Second,
		Workspaces: []string{ws}, Code: codememory.Config{Embedder: emb}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	svc := srv.Service()
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	add := func(req trellis.AddTaskRequest) *trellis.Task {
		t.Helper()
		task, err := svc.Add(ctx, req)
		must("add "+req.Objective, err)
		return task
	}
	done := func(task *trellis.Task, w string) {
		t.Helper()
		_, err := svc.Done(ctx, trellis.DoneRequest{TaskID: task.TaskID, Worker: w, WhatWasDone: "done"})
		must("done", err)
	}
	f := &everyFeature{srv: srv, data: data}

	// Queue: plain, priority, delay (fired), dependencies.
	add(trellis.AddTaskRequest{Queue: "jobs", Objective: "plain"})
	done(claimOf(t, svc, "jobs", "jw"), "jw")
	p := add(trellis.AddTaskRequest{Queue: "prio", Objective: "urgent", Priority: 1})
	f.prio = p.TaskID
	done(claimOf(t, svc, "prio", "pw"), "pw")
	d := add(trellis.AddTaskRequest{Queue: "later", Objective: "delayed", Delay: "1s", MaxAttempts: 2})
	f.delayed = d.TaskID
	c := claimOf(t, svc, "later", "lw")
	_, err = svc.Fail(ctx, trellis.FailRequest{TaskID: c.TaskID, Worker: "lw", Error: "first try", Retry: true})
	must("fail", err)
	done(claimOf(t, svc, "later", "lw"), "lw")
	pre := add(trellis.AddTaskRequest{Queue: "deps", Objective: "first"})
	f.pre = pre.TaskID
	pre2 := add(trellis.AddTaskRequest{Queue: "deps", Objective: "first too"})
	add(trellis.AddTaskRequest{Queue: "deps", Objective: "second", After: []string{pre.TaskID, pre2.TaskID}, UniqueKey: "only-one"})
	add(trellis.AddTaskRequest{Queue: "deps", Objective: "second again", UniqueKey: "only-one"}) // held: a duplicate
	for range 3 {
		done(claimOf(t, svc, "deps", "dw"), "dw")
	}
	// An idempotent delayed add: its timer is still waiting; cancelled.
	w := add(trellis.AddTaskRequest{Queue: "jobs", Objective: "next year", Delay: "8760h", IdempotencyKey: "yearly"})
	add(trellis.AddTaskRequest{Queue: "jobs", Objective: "next year", Delay: "8760h", IdempotencyKey: "yearly"})
	_, err = svc.Cancel(ctx, trellis.CancelRequest{TaskID: w.TaskID, Reason: "not needed"})
	must("cancel", err)
	// A terminal failure retried.
	r := add(trellis.AddTaskRequest{Queue: "jobs", Objective: "flaky", MaxAttempts: 1})
	claimOf(t, svc, "jobs", "rw")
	_, err = svc.Fail(ctx, trellis.FailRequest{TaskID: r.TaskID, Worker: "rw", Error: "broken"})
	must("fail terminally", err)
	_, err = svc.Retry(ctx, trellis.RetryRequest{TaskID: r.TaskID})
	must("retry", err)
	done(claimOf(t, svc, "jobs", "rw"), "rw")
	// Controls and gates.
	for _, req := range []trellis.ControlRequest{
		{Queue: "jobs", Action: "pause", Reason: "audit"}, {Queue: "jobs", Action: "resume"},
		{Queue: "jobs", Action: "limit", MaxInFlight: 5}, {Queue: "jobs", Action: "lease", LeaseSeconds: 60},
		{Queue: "gated", Action: "rate", Rate: "50/s"}, {Queue: "keyed", Action: "per_key", PerKey: 1},
	} {
		_, err := svc.Control(ctx, req)
		must("control "+req.Action, err)
	}
	add(trellis.AddTaskRequest{Queue: "gated", Objective: "rated"})
	done(claimOf(t, svc, "gated", "gw"), "gw")
	add(trellis.AddTaskRequest{Queue: "keyed", Objective: "keyed", ConcurrencyKey: "tenant-1"})
	done(claimOf(t, svc, "keyed", "kw"), "kw")
	// A schedule that fires, then is removed.
	_, err = svc.AddSchedule(ctx, trellis.ScheduleRequest{Name: "nightly", Every: "1s", AddTaskRequest: trellis.AddTaskRequest{Queue: "sched", Objective: "tick"}})
	must("add schedule", err)
	done(claimOf(t, svc, "sched", "sw"), "sw")
	_, err = svc.RemoveSchedule(ctx, trellis.RemoveScheduleRequest{Name: "nightly"})
	must("remove schedule", err)

	// Tokens.
	tokens := auth.NewService(srv.Store(), nil)
	must("tokens", tokens.Start(ctx))
	defer tokens.Stop()
	_, err = tokens.Create(ctx, auth.CreateRequest{Name: "ci", Role: "worker"})
	must("create token", err)
	_, err = tokens.Revoke(ctx, auth.RevokeRequest{Name: "ci", Reason: "rotated"})
	must("revoke token", err)

	// VINE.
	vinePath := filepath.Join(ws, "plan.vine")
	must("write vine", os.WriteFile(vinePath, []byte("vine 1.2.0\n---\n[root] Root (notstarted)\n-> a\n---\n[a] Task A (notstarted)\nDo A.\n"), 0o644))
	_, err = svc.VineImport(ctx, trellis.VineFileRequest{File: vinePath})
	must("vine import", err)
	_, err = svc.VineClaim(ctx, trellis.VineClaimRequest{File: vinePath, Agent: "va"})
	must("vine claim", err)

	// Agent memory.
	_, err = svc.TaskCreate(ctx, trellis.AgentTaskCreateRequest{Name: "fix-auth", Objectives: []string{"Fix it"}})
	must("task create", err)
	_, err = svc.TaskJoin(ctx, trellis.AgentTaskJoinRequest{Task: "fix-auth", Agent: "agent_1", Role: "implementer"})
	must("task join", err)
	for i, text := range []string{"The token check skips expiry", "Expiry is checked in middleware now"} {
		_, err = svc.Observe(ctx, trellis.ObserveRequest{Task: "fix-auth", Agent: "agent_1", Session: "s1", Type: []string{"insight", "decision"}[i], Text: text})
		must("observe", err)
	}
	_, err = svc.Consolidate(ctx, trellis.ConsolidateRequest{Level: "session", Session: "s1"})
	must("consolidate", err)
	_, err = svc.TaskCompleteAgent(ctx, trellis.AgentCompleteRequest{Task: "fix-auth", Agent: "agent_1"})
	must("complete agent", err)
	_, err = svc.TaskComplete(ctx, trellis.AgentTaskCompleteRequest{Task: "fix-auth", Merge: true, Force: true})
	must("complete task", err)

	// Code memory: a file too large for one message (its payload in the
	// blob bucket), embeddings.
	root := t.TempDir()
	var big strings.Builder
	for i := 0; i < 2500; i++ {
		fmt.Fprintf(&big, "def handler_%04d(request):\n    \"\"\"Handle request number %d of the big module.\"\"\"\n    value = request.get(%q)\n    return value * %d + len(request)\n\n\n", i, i, fmt.Sprint("key", i), i)
	}
	must("write big.py", os.WriteFile(filepath.Join(root, "big.py"), []byte(big.String()), 0o644))
	must("write small.go", os.WriteFile(filepath.Join(root, "small.go"), []byte("package small\n\n// Add adds.\nfunc Add(a, b int) int { return a + b }\n"), 0o644))
	_, err = codememory.Ingest(ctx, srv.Store(), codememory.IngestConfig{Root: root, Repo: "demo"})
	must("ingest", err)
	_, err = svc.EmbedPending(ctx)
	must("embed", err)
	// A second round, by an authenticated caller: chained to the first.
	must("write more.go", os.WriteFile(filepath.Join(root, "more.go"), []byte("package small\n\n// Sub subtracts.\nfunc Sub(a, b int) int { return a - b }\n"), 0o644))
	_, err = codememory.Ingest(ctx, srv.Store(), codememory.IngestConfig{Root: root, Repo: "demo"})
	must("ingest again", err)
	_, err = svc.EmbedPending(events.WithActor(ctx, "alice"))
	must("embed again", err)
	return f
}

// TestAuditVerifyEveryFeature: a log that used every feature of every
// domain, untouched, verifies OK (exit 0), live and as an export; then
// events are altered, removed, reordered and inserted with a raw
// JetStream client, and verify finds each (exit 9).
func TestAuditVerifyEveryFeature(t *testing.T) {
	t.Parallel()
	f := useEveryFeature(t)
	ctx := context.Background()
	d := "--data=" + f.data
	code, out, errs := cli(t, "audit", "verify", d)
	if code != 0 {
		t.Fatalf("verify of an untouched log that used every feature: exit %d\n%s%s", code, out, errs)
	}
	// Every kind of event is in the log.
	counts := map[string]bool{}
	for _, s := range events.Streams() {
		err := f.srv.Store().Scan(ctx, s.Name, events.ScanRange{}, func(m events.Message) error {
			counts[m.Type] = true
			if m.Scheduler != "" {
				counts["(timer fired)"] = true
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, typ := range []string{"added", "due", "linked", "prerequisite_done", "ready", "held", "admitted", "rate_set", "per_key_set",
		"paused", "created", "tick", "fired", "cancelled", "requeued", "attempt_failed", "chunks_embedded", "file_indexed", "(timer fired)"} {
		if !counts[typ] {
			t.Errorf("the log holds no %s event: the test does not use that feature", typ)
		}
	}
	// Embeddings go through the command runner: chained, with the actor
	// who caused them.
	emb, _, err := f.srv.Store().Load(ctx, events.StreamChunks, "trellis.chunks.demo.*.chunks_embedded")
	if err != nil || len(emb) < 2 || emb[0].Prev != "" || emb[0].Actor != "embedder" || emb[len(emb)-1].Actor != "alice" {
		t.Fatalf("chunks_embedded events: %d, %v", len(emb), err)
	}
	for i := 1; i < len(emb); i++ {
		if emb[i].Prev != events.Hash(emb[i-1].Envelope) {
			t.Fatalf("chunks_embedded #%d is not chained to #%d", emb[i].Seq, emb[i-1].Seq)
		}
	}
	exp := filepath.Join(t.TempDir(), "all.jsonl")
	cliOK(t, "audit", "export", d, "--out", exp)
	if code, out, errs := cli(t, "audit", "verify", "--file", exp); code != 0 {
		t.Fatalf("verify --file of an export of an untouched log: exit %d\n%s%s", code, out, errs)
	}
	tamperEveryWay(t, f)
}

// findings runs verify and returns its findings.
func findings(t *testing.T, store *events.Store) []audit.Finding {
	t.Helper()
	var fs []audit.Finding
	if _, err := audit.Verify(context.Background(), store, audit.VerifyOptions{}, func(fd audit.Finding) error {
		fs = append(fs, fd)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return fs
}

// requireFinding fails unless fs holds a finding of kind at stream #seq.
func requireFinding(t *testing.T, what string, fs []audit.Finding, kind, stream string, seq uint64) {
	t.Helper()
	for _, fd := range fs {
		if fd.Kind == kind && fd.Stream == stream && fd.Seq <= seq && (seq <= fd.ToSeq || seq == fd.Seq) {
			return
		}
	}
	t.Errorf("%s: no %s finding at %s #%d among %d findings:\n%v", what, kind, stream, seq, len(fs), fs)
}

// tamperEveryWay alters, removes, reorders and inserts events of the
// features' own subjects with a raw JetStream client holding the
// servers' credentials, and requires verify to find each.
func tamperEveryWay(t *testing.T, f *everyFeature) {
	t.Helper()
	ctx := context.Background()
	store := f.srv.Store()
	js := store.JetStream()
	load := func(stream, filter string) []events.Recorded {
		t.Helper()
		recs, _, err := store.Load(ctx, stream, filter)
		if err != nil || len(recs) == 0 {
			t.Fatalf("load %s: %d, %v", filter, len(recs), err)
		}
		return recs
	}
	Q := events.StreamQueue
	stream, err := js.Stream(ctx, Q)
	if err != nil {
		t.Fatal(err)
	}
	publish := func(subject string, env events.Envelope, msgID string) uint64 {
		t.Helper()
		data, _ := json.Marshal(env)
		msg := &nats.Msg{Subject: subject, Data: data, Header: nats.Header{}}
		if msgID != "" {
			msg.Header.Set(nats.MsgIdHdr, msgID)
		}
		ack, err := js.PublishMsg(ctx, msg)
		if err != nil {
			t.Fatal(err)
		}
		return ack.Sequence
	}

	// Alter: the priority task's completion, republished changed under
	// its own message id after the original is deleted.
	prio := load(Q, "trellis.queue.prio."+f.prio+".>")
	last := prio[len(prio)-1]
	changed := last.Envelope
	changed.Payload = json.RawMessage(`{"worker":"pw","what_was_done":"something else"}`)
	if err := stream.DeleteMsg(ctx, last.Seq); err != nil {
		t.Fatal(err)
	}
	copySeq := publish(last.Subject, changed, changed.ID)
	fs := findings(t, store)
	requireFinding(t, "altered completion", fs, audit.FindingRemoved, Q, last.Seq)

	// Remove: the delayed task's due event (published by its timer).
	delayed := load(Q, "trellis.queue.later."+f.delayed+".>")
	var due events.Recorded
	for _, r := range delayed {
		if r.Type == "due" {
			due = r
		}
	}
	if err := stream.DeleteMsg(ctx, due.Seq); err != nil {
		t.Fatal(err)
	}
	fs = findings(t, store)
	requireFinding(t, "removed due", fs, audit.FindingRemoved, Q, due.Seq)

	// Insert: a forged cancel of the prerequisite, chained correctly to
	// its last event, under any message id, back-dated, with a nonsense
	// ULID.
	pre := load(Q, "trellis.queue.deps."+f.pre+".>")
	head := pre[len(pre)-1]
	forged := events.Envelope{ID: "01ZZZZZZZZZZZZZZZZZZZZZZZZ", Type: "cancelled", AggregateID: f.pre, Time: head.Time.Add(-time.Hour),
		Actor: "operator", Schema: 1, Prev: events.Hash(head.Envelope), Payload: json.RawMessage(`{"reason":"forged"}`)}
	forgedSeq := publish("trellis.queue.deps."+f.pre+".cancelled", forged, "anything")
	fs = findings(t, store)
	requireFinding(t, "forged id", fs, audit.FindingForeign, Q, forgedSeq)
	forged.ID = events.NewID(time.Now())
	forgedSeq = publish("trellis.queue.deps."+f.pre+".cancelled", forged, forged.ID)
	fs = findings(t, store)
	requireFinding(t, "back-dated event", fs, audit.FindingMisdated, Q, forgedSeq)

	// Insert: a due event dressed as a timer's (the server lets a client
	// name a scheduler when it purges one).
	fake := due.Envelope
	fake.ID = events.NewID(time.Now())
	fake.Time = time.Now().UTC()
	data, _ := json.Marshal(fake)
	ack, err := js.PublishMsg(ctx, &nats.Msg{Subject: due.Subject, Data: data, Header: nats.Header{
		"Nats-Scheduler": []string{"trellis.queue.later._timer.task." + f.delayed}, "Nats-Schedule-Next": []string{"purge"}}})
	if err != nil {
		t.Fatal(err)
	}
	fs = findings(t, store)
	requireFinding(t, "forged timer event", fs, audit.FindingForeign, Q, ack.Sequence)

	// Reorder: the memory task's first two events swapped (both deleted,
	// republished in the other order with their ids).
	M := events.StreamTasks
	mem := load(M, events.TaskNameFilter("fix-auth"))
	tstream, err := js.Stream(ctx, M)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range mem[1:3] {
		if err := tstream.DeleteMsg(ctx, r.Seq); err != nil {
			t.Fatal(err)
		}
	}
	// (Under new message ids: the stream's duplicate window still holds
	// the originals'.)
	second := publish(mem[2].Subject, mem[2].Envelope, "x"+mem[2].ID)
	publish(mem[1].Subject, mem[1].Envelope, "x"+mem[1].ID)
	fs = findings(t, store)
	requireFinding(t, "reordered", fs, audit.FindingReordered, M, second)
	_ = copySeq

	code, _, errs := cli(t, "audit", "verify", "--data="+f.data)
	if code != 9 || !strings.Contains(errs, "tampered") {
		t.Fatalf("verify of the tampered log: exit %d %s", code, errs)
	}
}
