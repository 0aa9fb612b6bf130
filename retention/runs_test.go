package retention_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/agentmemory"
	"github.com/trellis/trellis/audit"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/retention"
	"github.com/trellis/trellis/taskqueue"
	"github.com/trellis/trellis/workflow"
)

// runsFixture is an engine serving the "ret" workflow: a step, then a
// wait for the signal "go", then the run completes.
type runsFixture struct {
	store *events.Store
	e     *workflow.Engine
}

func startRuns(t *testing.T) *runsFixture {
	t.Helper()
	store := eventstest.Start(t).Store
	e := workflow.New(store, workflow.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), PollInterval: 200 * time.Millisecond})
	r, err := e.Queue().StartReactor(ctxT(t), taskqueue.ReactorConfig{AckWait: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	err = workflow.Register(e, "ret", 1, func(c *workflow.Context, in struct{}) (string, error) {
		if _, err := workflow.Step(c, "a", func(context.Context) (string, error) { return "a-ok", nil }); err != nil {
			return "", err
		}
		if _, err := workflow.Wait(c, "go", 0); err != nil {
			return "", err
		}
		return "done", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	ready := make(chan struct{})
	go func() {
		done <- e.Serve(ctx, workflow.ServeConfig{Concurrency: 2, Ready: func() { close(ready) }})
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	select {
	case <-ready:
	case err := <-done:
		done <- err // the cleanup waits for it
		t.Fatalf("serve: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("the pool did not register its workflows within 60s")
	}
	return &runsFixture{store: store, e: e}
}

// start starts a run and waits until it waits for its signal.
func (f *runsFixture) start(t *testing.T) string {
	t.Helper()
	run, err := f.e.Start(ctxT(t), workflow.StartRequest{Workflow: "ret", Input: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	f.wait(t, run.RunID, workflow.StatusWaiting)
	return run.RunID
}

func (f *runsFixture) wait(t *testing.T, id string, want workflow.Status) {
	t.Helper()
	waitFor(t, "run "+id+" "+string(want), func() bool {
		r, err := f.e.Show(context.Background(), id)
		return err == nil && r.Status == want
	})
}

func (f *runsFixture) finish(t *testing.T, id string) {
	t.Helper()
	if _, err := f.e.Signal(ctxT(t), workflow.SignalRequest{RunID: id, Name: "go"}); err != nil {
		t.Fatal(err)
	}
	f.wait(t, id, workflow.StatusCompleted)
}

// countEvents counts the messages stored on a stream.
func countEvents(t *testing.T, store *events.Store, stream string) int {
	t.Helper()
	n := 0
	if err := store.Scan(ctxT(t), stream, events.ScanRange{}, func(events.Message) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestPruneWorkflowRuns: finished workflow runs (completed, cancelled)
// are archived and removed whole; a waiting run keeps its events, resumes
// on its signal and completes. Show answers not found for a pruned run,
// list leaves it out, audit verify is OK on the live log (under the audit
// key) and on the archive, the record names the archive by its digest,
// and an edited archive is found.
func TestPruneWorkflowRuns(t *testing.T) {
	t.Parallel()
	f := startRuns(t)
	ctx := ctxT(t)
	key, err := audit.AnchorKey(t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	done1, done2, open, cancelled := f.start(t), f.start(t), f.start(t), f.start(t)
	f.finish(t, done1)
	f.finish(t, done2)
	if _, err := f.e.Cancel(ctx, workflow.CancelRequest{RunID: cancelled, Reason: "not needed"}); err != nil {
		t.Fatal(err)
	}
	f.wait(t, cancelled, workflow.StatusCancelled)
	before := countEvents(t, f.store, events.StreamWorkflows)

	dir := t.TempDir()
	res, err := retention.Prune(ctx, f.store, retention.Options{OlderThan: time.Minute, Archive: dir, Now: later, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	after := countEvents(t, f.store, events.StreamWorkflows)
	t.Logf("workflow stream: %d events before the prune, %d after (%d runs, %d events pruned; kept %v)", before, after, res.Runs, res.RunEvents, res.RunsKept)
	if res.Runs != 3 || res.RunsKept["open"] != 1 {
		t.Fatalf("pruned %d runs (kept %v); want the 3 finished ones, the waiting one kept", res.Runs, res.RunsKept)
	}
	if after > before-res.RunEvents+1 { // the stream's last message (a tombstone) stays
		t.Fatalf("the workflow stream holds %d events after pruning %d of %d", after, res.RunEvents, before)
	}
	for _, id := range []string{done1, done2, cancelled} {
		if _, err := f.e.Show(ctx, id); trellis.ErrorCode(err) != trellis.CodeNotFound {
			t.Fatalf("show of pruned run %s: %v; want not_found", id, err)
		}
		if _, err := f.e.Signal(ctx, workflow.SignalRequest{RunID: id, Name: "go"}); err == nil {
			t.Fatalf("a signal to pruned run %s was taken", id)
		}
	}
	list, err := f.e.List(ctx, workflow.ListRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Runs) != 1 || list.Runs[0].RunID != open {
		t.Fatalf("list after the prune: %+v; want only the waiting run", list.Runs)
	}
	if len(list.Versions) != 1 || list.Versions[0].Workflow != "ret" {
		t.Fatalf("the registration was pruned: versions %+v", list.Versions)
	}
	verifyKeyed := func() []audit.Finding {
		var out []audit.Finding
		if _, err := audit.Verify(ctx, f.store, audit.VerifyOptions{AnchorKey: key}, func(x audit.Finding) error { out = append(out, x); return nil }); err != nil {
			t.Fatal(err)
		}
		return out
	}
	if fs := verifyKeyed(); len(fs) > 0 {
		t.Fatalf("verify after the prune: %v", fs)
	}
	var archive *retention.ArchiveResult
	for i := range res.Archives {
		if res.Archives[i].Runs > 0 {
			archive = &res.Archives[i]
		}
	}
	if archive == nil || archive.Runs != 3 {
		t.Fatalf("no archive of the runs: %+v", res.Archives)
	}
	if fs, rep := verifyArchive(t, archive.File); len(fs) > 0 || rep.Digest != archive.Digest {
		t.Fatalf("verify --file %s: %v (digest %s, the prune's %s)", archive.File, fs, rep.Digest, archive.Digest)
	}
	recs, _, err := f.store.Load(ctx, events.StreamQueue, events.RetentionFilter)
	if err != nil {
		t.Fatal(err)
	}
	var p events.PrunedPayload
	if err := recs[len(recs)-1].DecodePayload(&p); err != nil {
		t.Fatal(err)
	}
	if p.Stream != events.StreamWorkflows || p.Digest != archive.Digest || len(p.Aggregates) != 3 {
		t.Fatalf("the last record: stream %s digest %s aggregates %v; want the runs' archive %s", p.Stream, p.Digest, p.Aggregates, archive.Digest)
	}

	// The waiting run resumes and completes; a second prune takes it.
	f.finish(t, open)
	if fs := verifyKeyed(); len(fs) > 0 {
		t.Fatalf("verify after the kept run completed: %v", fs)
	}
	res2, err := retention.Prune(ctx, f.store, retention.Options{OlderThan: time.Minute, Archive: dir, Now: later, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	if res2.Runs != 1 {
		t.Fatalf("second prune: %d runs (kept %v), want the one completed since", res2.Runs, res2.RunsKept)
	}
	if fs := verifyKeyed(); len(fs) > 0 {
		t.Fatalf("verify after the second prune: %v", fs)
	}
	// A run started after the prunes works as before.
	later := f.start(t)
	f.finish(t, later)

	// Tampering with the archive is found.
	data, err := os.ReadFile(archive.File)
	if err != nil {
		t.Fatal(err)
	}
	tampered := strings.Replace(string(data), "a-ok", "a-OK", 1)
	if tampered == string(data) {
		t.Fatal("the archive does not hold the runs' step results")
	}
	if err := os.WriteFile(archive.File, []byte(tampered), 0o600); err != nil {
		t.Fatal(err)
	}
	if fs, _ := verifyArchive(t, archive.File); len(fs) == 0 {
		t.Fatal("verify --file found nothing in an edited archive")
	}
}

// TestPruneRunsStopped: a prune stopped after it tombstoned a batch of
// finished runs but before their record leaves every event of them in
// the log (verify OK, show not found); one stopped after the record,
// before the removal, leaves events the record accounts for (verify OK).
// The next prune finishes each, and the open run still completes.
func TestPruneRunsStopped(t *testing.T) {
	t.Parallel()
	f := startRuns(t)
	ctx := ctxT(t)
	done1, done2, open := f.start(t), f.start(t), f.start(t)
	f.finish(t, done1)
	f.finish(t, done2)
	dir := t.TempDir()
	check := func(when string) {
		t.Helper()
		if fs := verifyLog(t, f.store); len(fs) > 0 {
			t.Fatalf("verify %s: %v", when, fs)
		}
		for _, id := range []string{done1, done2} {
			if _, err := f.e.Show(ctx, id); trellis.ErrorCode(err) != trellis.CodeNotFound {
				t.Fatalf("show of run %s %s: %v; want not_found", id, when, err)
			}
		}
		f.wait(t, open, workflow.StatusWaiting)
	}

	stopped, stop := context.WithCancel(ctx)
	_, err := retention.Prune(stopped, f.store, retention.Options{OlderThan: time.Minute, Archive: dir, Now: later, AfterRunTombstones: stop})
	if err == nil {
		t.Fatal("a prune stopped before its runs' record reported success")
	}
	check("after a prune stopped before its record")
	for _, id := range []string{done1, done2} {
		recs, _, err := f.store.Load(ctx, events.StreamWorkflows, workflow.RunFilter(id))
		if err != nil || len(recs) < 3 || recs[0].Type != workflow.Started || recs[len(recs)-1].Type != workflow.Pruned {
			t.Fatalf("run %s after a prune stopped before its record: %d events (%v); want all of them and the tombstone", id, len(recs), err)
		}
	}

	stopped, stop = context.WithCancel(ctx)
	res, err := retention.Prune(stopped, f.store, retention.Options{OlderThan: time.Minute, Archive: dir, Now: later, AfterRecord: stop})
	if err == nil {
		t.Fatalf("a prune stopped after its record reported success: %+v", res)
	}
	check("after a prune stopped after its record")

	res, err = retention.Prune(ctx, f.store, retention.Options{OlderThan: time.Minute, Archive: dir, Now: later})
	if err != nil {
		t.Fatal(err)
	}
	check("after the prune that finished")
	for _, id := range []string{done1, done2} {
		if recs, _, err := f.store.Load(ctx, events.StreamWorkflows, workflow.RunFilter(id)); err == nil && len(recs) > 1 {
			t.Fatalf("run %s still has %d events after the prunes", id, len(recs))
		}
	}
	if res.Runs != 0 || res.Completed == 0 {
		t.Fatalf("the last prune: %d runs, %d sequences of the stopped one removed; want none and some", res.Runs, res.Completed)
	}
	for _, a := range mustGlob(t, filepath.Join(dir, "prune-*.jsonl")) {
		if fs, _ := verifyArchive(t, a); len(fs) > 0 {
			t.Fatalf("verify --file %s: %v", a, fs)
		}
	}
	f.finish(t, open)
}

func mustGlob(t *testing.T, pattern string) []string {
	t.Helper()
	m, err := filepath.Glob(pattern)
	if err != nil || len(m) == 0 {
		t.Fatalf("glob %s: %v %v", pattern, m, err)
	}
	return m
}

// TestPruneKeepsForgedTombstones: a tombstone appended by a client with
// NATS credentials to an open workflow run or an open agent task (a
// prune tombstones only finished ones) does not make the next prune
// remove it: every event stays.
func TestPruneKeepsForgedTombstones(t *testing.T) {
	t.Parallel()
	f := startRuns(t)
	ctx := ctxT(t)
	open := f.start(t)
	forge := func(stream, filter, subject, typ, id string, schema int) int {
		t.Helper()
		recs, last, err := f.store.Load(ctx, stream, filter)
		if err != nil {
			t.Fatal(err)
		}
		env, err := events.NewEnvelope(time.Now(), typ, id, "mallory", schema, map[string]string{"archive": "prune-x.jsonl"})
		if err != nil {
			t.Fatal(err)
		}
		env.Prev = events.Hash(recs[len(recs)-1].Envelope)
		if _, err := f.store.Append(ctx, subject, env, events.Expect{Filter: filter, LastSeq: last}, env.ID); err != nil {
			t.Fatal(err)
		}
		return len(recs) + 1
	}
	runEvents := forge(events.StreamWorkflows, workflow.RunFilter(open), workflow.RunSubject(open, workflow.Pruned), workflow.Pruned, open, 1)
	tasks := agentmemory.NewHandler(f.store, nil)
	if _, err := tasks.TaskCreate(ctx, trellis.AgentTaskCreateRequest{Name: "open-task", Description: "open", Objectives: []string{"Do"}}); err != nil {
		t.Fatal(err)
	}
	taskEvents := forge(events.StreamTasks, events.TaskNameFilter("open-task"), events.TasksSubject("open-task", events.AgentTaskPruned),
		events.AgentTaskPruned, "open-task", events.TasksSchema)
	res, err := retention.Prune(ctx, f.store, retention.Options{OlderThan: time.Minute, Archive: t.TempDir(), Now: later})
	if err != nil {
		t.Fatal(err)
	}
	if res.Runs != 0 || res.AgentTasks != 0 {
		t.Fatalf("a prune removed %d run(s) and %d agent task(s) tombstoned while open (kept %v, %v)", res.Runs, res.AgentTasks, res.RunsKept, res.AgentTasksKept)
	}
	if recs, _, err := f.store.Load(ctx, events.StreamWorkflows, workflow.RunFilter(open)); err != nil || len(recs) != runEvents {
		t.Fatalf("the open run holds %d events (%v) after the prune; want its %d", len(recs), err, runEvents)
	}
	if recs, _, err := f.store.Load(ctx, events.StreamTasks, events.TaskNameFilter("open-task")); err != nil || len(recs) != taskEvents {
		t.Fatalf("the open agent task holds %d events (%v) after the prune; want its %d", len(recs), err, taskEvents)
	}
}

// TestPruneKeepsTasksAnOpenRunAwaits: a run waits for a queue task it
// added; the task finishes while no pool runs, an operator cancels the
// run's pending activations, and a prune comes before the run is woken. The task stays (the run reads its end when it
// resumes), and the run then completes with the task's result; once the
// run is over, the task is pruned like any other.
func TestPruneKeepsTasksAnOpenRunAwaits(t *testing.T) {
	t.Parallel()
	store := eventstest.Start(t).Store
	ctx := ctxT(t)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	serve := func() (*workflow.Engine, func()) {
		e := workflow.New(store, workflow.Config{Logger: logger, PollInterval: 200 * time.Millisecond})
		err := workflow.Register(e, "awaits", 1, func(c *workflow.Context, in struct{}) (string, error) {
			task, err := workflow.Task(c, "external", trellis.AddTaskRequest{Queue: "external", Objective: "done outside"})
			if err != nil {
				return "", err
			}
			return string(task.Status), nil
		})
		if err != nil {
			t.Fatal(err)
		}
		sctx, cancel := context.WithCancel(context.Background())
		done, ready := make(chan error, 1), make(chan struct{})
		go func() { done <- e.Serve(sctx, workflow.ServeConfig{Concurrency: 2, Ready: func() { close(ready) }}) }()
		select {
		case <-ready:
		case err := <-done:
			t.Fatalf("serve: %v", err)
		case <-time.After(60 * time.Second):
			t.Fatal("the pool did not register within 60s")
		}
		return e, func() { cancel(); <-done }
	}
	r, err := taskqueue.New(store, taskqueue.Config{}).StartReactor(ctx, taskqueue.ReactorConfig{AckWait: 2 * time.Second, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	e, stop := serve()
	run, err := e.Start(ctx, workflow.StartRequest{Workflow: "awaits", Input: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	var awaited string
	waitFor(t, "the run waits for its task", func() bool {
		got, err := e.Show(ctx, run.RunID)
		if err != nil || got.Status != workflow.StatusWaiting || len(got.Journal) == 0 || len(got.Journal[0].Tasks) == 0 {
			return false
		}
		awaited = got.Journal[0].Tasks[0]
		return true
	})
	stop() // no pool runs while the task finishes and the prune comes
	q := taskqueue.New(store, taskqueue.Config{})
	waitFor(t, "claim the awaited task", func() bool {
		got, err := q.Next(ctx, trellis.NextRequest{Queue: "external", Worker: "w"})
		return err == nil && got != nil && got.TaskID == awaited
	})
	if _, err := q.Done(ctx, trellis.DoneRequest{TaskID: awaited, Worker: "w", WhatWasDone: "done outside"}); err != nil {
		t.Fatal(err)
	}
	// An operator cancels the run's pending activations (its wake, added
	// --after the task, would keep the task too): only the run's journal
	// still refers to the task.
	err = store.Scan(ctx, events.StreamQueue, events.ScanRange{}, func(m events.Message) error {
		if m.Bad == nil && m.Type == "added" && m.AggregateID != awaited {
			_, _ = q.Cancel(ctx, trellis.CancelRequest{TaskID: m.AggregateID, Reason: "stuck activation"}) // finished ones refuse
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	res, err := retention.Prune(ctx, store, retention.Options{OlderThan: time.Minute, Archive: dir, Now: later})
	if err != nil {
		t.Fatal(err)
	}
	if res.Kept["an open workflow run waits for it"] != 1 {
		t.Fatalf("prune kept %v (pruned %d tasks); want the awaited task kept for its run", res.Kept, res.Tasks)
	}
	if _, err := q.Show(ctx, awaited); err != nil {
		t.Fatalf("the awaited task after the prune: %v", err)
	}
	e, stop = serve()
	defer stop()
	if _, err := e.Retry(ctx, workflow.RetryRequest{RunID: run.RunID}); err != nil { // wakes a waiting run
		t.Fatal(err)
	}
	waitFor(t, "the run completes", func() bool {
		got, err := e.Show(ctx, run.RunID)
		return err == nil && got.Status.Terminal()
	})
	if got, _ := e.Show(ctx, run.RunID); got.Status != workflow.StatusCompleted || string(got.Output) != `"done"` {
		t.Fatalf("the run after the prune: %s %s %s", got.Status, got.Output, got.Error)
	}
	res, err = retention.Prune(ctx, store, retention.Options{OlderThan: time.Minute, Archive: dir, Now: later})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Show(ctx, awaited); trellis.ErrorCode(err) != trellis.CodeNotFound || res.Runs != 1 {
		t.Fatalf("after the run ended: the task %v, %d runs pruned; want both pruned", err, res.Runs)
	}
	if fs := verifyLog(t, store); len(fs) > 0 {
		t.Fatalf("verify: %v", fs)
	}
}
