package retention_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/audit"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/projections"
	"github.com/trellis/trellis/retention"
	"github.com/trellis/trellis/taskqueue"
)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// waitFor polls check until it holds, failing after 60 s.
func waitFor(t *testing.T, what string, check func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !check() {
		if time.Now().After(deadline) {
			t.Fatalf("not within 60s: %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// later is a clock an hour ahead: with OlderThan a minute, every event
// stored so far lies before the cut, without waiting.
func later() time.Time { return time.Now().Add(time.Hour) }

// startQueue starts a log and a queue with its reactor on it (stopped at
// the test's end).
func startQueue(t *testing.T) (*events.Store, *taskqueue.Handler) {
	t.Helper()
	b, q, _ := startQueueJS(t)
	return b.Store, q
}

// startQueueJS is startQueue with the log's bundle and a JetStream
// client on its connection, to read or publish as a plain NATS client.
func startQueueJS(t *testing.T) (*eventstest.Bundle, *taskqueue.Handler, jetstream.JetStream) {
	t.Helper()
	b := eventstest.Start(t)
	q := taskqueue.New(b.Store, taskqueue.Config{})
	r, err := q.StartReactor(context.Background(), taskqueue.ReactorConfig{AckWait: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	js, err := jetstream.New(b.Conn)
	if err != nil {
		t.Fatal(err)
	}
	return b, q, js
}

// verifyLog runs audit verify on the live log and returns its findings.
func verifyLog(t *testing.T, store *events.Store) []audit.Finding {
	t.Helper()
	var fs []audit.Finding
	rep, err := audit.Verify(ctxT(t), store, audit.VerifyOptions{}, func(f audit.Finding) error { fs = append(fs, f); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK != (len(fs) == 0) {
		t.Fatalf("report OK=%v with %d findings", rep.OK, len(fs))
	}
	return fs
}

// verifyArchive runs audit verify --file on an archive.
func verifyArchive(t *testing.T, path string) ([]audit.Finding, *audit.VerifyReport) {
	t.Helper()
	var fs []audit.Finding
	rep, err := audit.VerifyFile(ctxT(t), path, func(f audit.Finding) error { fs = append(fs, f); return nil })
	if err != nil {
		t.Fatal(err)
	}
	return fs, rep
}

// foldBoard folds the queue stream from seq from into b and saves it.
func foldBoard(t *testing.T, store *events.Store, b *projections.Board, from uint64) uint64 {
	t.Helper()
	last := from - 1
	err := store.Scan(ctxT(t), events.StreamQueue, events.ScanRange{From: from}, func(m events.Message) error {
		last = m.Seq
		if m.Bad != nil {
			return nil
		}
		return b.Apply(m.Recorded)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Save(last); err != nil {
		t.Fatal(err)
	}
	return last + 1
}

func boardState(t *testing.T, b *projections.Board) (string, map[string]map[trellis.Status]int) {
	t.Helper()
	tasks := b.Tasks()
	slices.SortFunc(tasks, func(x, y *trellis.Task) int { return strings.Compare(x.TaskID, y.TaskID) })
	data, err := json.Marshal(tasks)
	if err != nil {
		t.Fatal(err)
	}
	return string(data), b.Counts()
}

type fixture struct {
	q        *taskqueue.Handler
	finished map[string]string // id -> kind
	open     map[string]string
}

func (f *fixture) add(t *testing.T, kind string, req trellis.AddTaskRequest) *trellis.Task {
	t.Helper()
	if req.Queue == "" {
		req.Queue = "q-" + kind
	}
	if req.Objective == "" {
		req.Objective = "retention " + kind
	}
	task, err := f.q.Add(ctxT(t), req)
	if err != nil {
		t.Fatalf("add %s: %v", kind, err)
	}
	return task
}

func (f *fixture) claim(t *testing.T, queue, id string) {
	t.Helper()
	var got *trellis.Task
	waitFor(t, "claim "+id, func() bool {
		var err error
		got, err = f.q.Next(ctxT(t), trellis.NextRequest{Queue: queue, Worker: "w1"})
		if err != nil {
			t.Fatal(err)
		}
		return got != nil
	})
	if got.TaskID != id {
		t.Fatalf("claimed %s, want %s", got.TaskID, id)
	}
}

func (f *fixture) done(t *testing.T, queue, id string) {
	t.Helper()
	f.claim(t, queue, id)
	if _, err := f.q.Done(ctxT(t), trellis.DoneRequest{TaskID: id, Worker: "w1", WhatWasDone: "ok"}); err != nil {
		t.Fatal(err)
	}
}

// build fills a log with finished and open tasks of every kind the queue
// has: plain, delayed, dependent, scheduled (by a schedule), claimed.
func build(t *testing.T, q *taskqueue.Handler) *fixture {
	t.Helper()
	ctx := ctxT(t)
	f := &fixture{q: q, finished: map[string]string{}, open: map[string]string{}}
	// Finished: done, failed, dead, cancelled, delayed then done, a
	// prerequisite done whose dependant is queued.
	a := f.add(t, "done", trellis.AddTaskRequest{})
	f.done(t, a.Queue, a.TaskID)
	f.finished[a.TaskID] = "done"
	b := f.add(t, "failed", trellis.AddTaskRequest{})
	f.claim(t, b.Queue, b.TaskID)
	if _, err := q.Fail(ctx, trellis.FailRequest{TaskID: b.TaskID, Worker: "w1", Error: "boom"}); err != nil {
		t.Fatal(err)
	}
	f.finished[b.TaskID] = "failed"
	d := f.add(t, "dead", trellis.AddTaskRequest{MaxAttempts: 1})
	f.claim(t, d.Queue, d.TaskID)
	if got, err := q.Fail(ctx, trellis.FailRequest{TaskID: d.TaskID, Worker: "w1", Error: "boom", Retry: true}); err != nil || got.Status != trellis.StatusDead {
		t.Fatalf("fail with retry on the last attempt: %+v, %v", got, err)
	}
	f.finished[d.TaskID] = "dead"
	c := f.add(t, "cancelled", trellis.AddTaskRequest{})
	if _, err := q.Cancel(ctx, trellis.CancelRequest{TaskID: c.TaskID, Reason: "not needed"}); err != nil {
		t.Fatal(err)
	}
	f.finished[c.TaskID] = "cancelled"
	e := f.add(t, "delayed", trellis.AddTaskRequest{Delay: "1s"})
	f.done(t, e.Queue, e.TaskID) // claimable once its timer fired
	f.finished[e.TaskID] = "delayed"
	pre := f.add(t, "prerequisite", trellis.AddTaskRequest{})
	dep := f.add(t, "dependant", trellis.AddTaskRequest{After: []string{pre.TaskID}})
	f.done(t, pre.Queue, pre.TaskID)
	waitFor(t, "the dependant is queued", func() bool {
		got, err := q.Show(ctx, dep.TaskID)
		return err == nil && got.Status == trellis.StatusQueued
	})
	f.finished[pre.TaskID] = "prerequisite"
	f.open[dep.TaskID] = "dependant (queued)"
	// Open: queued, claimed, scheduled far ahead, waiting on an open task.
	f.open[f.add(t, "queued", trellis.AddTaskRequest{}).TaskID] = "queued"
	cl := f.add(t, "claimed", trellis.AddTaskRequest{})
	f.claim(t, cl.Queue, cl.TaskID)
	f.open[cl.TaskID] = "claimed"
	f.open[f.add(t, "scheduled", trellis.AddTaskRequest{Delay: "240h"}).TaskID] = "scheduled"
	blocker := f.add(t, "blocker", trellis.AddTaskRequest{})
	f.open[blocker.TaskID] = "blocker"
	f.open[f.add(t, "waiting", trellis.AddTaskRequest{After: []string{blocker.TaskID}}).TaskID] = "waiting"
	return f
}

// TestPruneFinishedTasks: a prune removes exactly the finished tasks,
// archives them in a file audit verify --file finds OK (and finds an
// edit in), leaves audit verify on the live log OK (a task removed by hand
// afterwards is still a finding), keeps open tasks working, and a board
// that saw everything equals one replayed from the pruned log.
func TestPruneFinishedTasks(t *testing.T) {
	t.Parallel()
	store, q := startQueue(t)
	ctx := ctxT(t)
	f := build(t, q)
	if fs := verifyLog(t, store); len(fs) > 0 {
		t.Fatalf("verify before the prune: %v", fs)
	}
	live := projections.NewBoard(t.TempDir())
	if _, err := live.Load(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = live.Close() })
	next := foldBoard(t, store, live, 1) // the board saw everything before the prune

	dir := filepath.Join(t.TempDir(), "archive")
	res, err := retention.Prune(ctx, store, retention.Options{OlderThan: time.Minute, Archive: dir, Now: later, BatchTasks: 4})
	if err != nil {
		t.Fatal(err)
	}
	if res.Tasks != len(f.finished) {
		t.Fatalf("pruned %d tasks, want the %d finished ones; kept %v", res.Tasks, len(f.finished), res.Kept)
	}
	if len(res.Archives) != 2 {
		t.Fatalf("archives = %d, want 2 (batches of 4)", len(res.Archives))
	}
	// Another process (no cache) finds none of them; this one, which
	// cached them, is refused a command on one and then finds it gone.
	other := taskqueue.New(store, taskqueue.Config{})
	for id, kind := range f.finished {
		if _, err := other.Show(ctx, id); trellis.ErrorCode(err) != trellis.CodeNotFound {
			t.Errorf("%s task %s after the prune: %v; want not_found", kind, id, err)
		}
		if kind == "dead" {
			if _, err := q.Retry(ctx, id, "op"); trellis.ErrorCode(err) != trellis.CodeNotFound {
				t.Errorf("retry of the pruned dead task %s: %v; want not_found", id, err)
			}
		}
	}
	for id, kind := range f.open {
		if _, err := q.Show(ctx, id); err != nil {
			t.Errorf("open %s task %s after the prune: %v", kind, id, err)
		}
	}
	if fs := verifyLog(t, store); len(fs) > 0 {
		t.Fatalf("verify after the prune: %v", fs)
	}
	archived := map[string]bool{}
	for _, ar := range res.Archives {
		fs, rep := verifyArchive(t, ar.File)
		if len(fs) > 0 {
			t.Fatalf("verify --file %s: %v", ar.File, fs)
		}
		if rep.Digest != ar.Digest {
			t.Fatalf("archive digest %s, prune reported %s", rep.Digest, ar.Digest)
		}
		data, err := os.ReadFile(ar.File)
		if err != nil {
			t.Fatal(err)
		}
		for id := range f.finished {
			if strings.Contains(string(data), `"aggregate_id":"`+id+`"`) {
				archived[id] = true
			}
		}
	}
	if len(archived) != len(f.finished) {
		t.Fatalf("archives hold %d of the %d pruned tasks", len(archived), len(f.finished))
	}

	// Replay == live: the board that saw the tasks, caught up on the
	// pruned log (the record: the tombstones are purged), equals a board
	// replayed from the pruned log.
	foldBoard(t, store, live, next)
	replay := projections.NewBoard(t.TempDir())
	if _, err := replay.Load(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = replay.Close() })
	foldBoard(t, store, replay, 1)
	lt, lc := boardState(t, live)
	rt, rc := boardState(t, replay)
	if lt != rt || !reflect.DeepEqual(lc, rc) {
		t.Fatalf("live board != replayed board:\nlive   %v %s\nreplay %v %s", lc, lt, rc, rt)
	}
	if n := len(live.Tasks()); n != len(f.open) {
		t.Fatalf("board holds %d tasks, want the %d open ones", n, len(f.open))
	}

	// Open tasks still claim and finish: the waiting one once its blocker
	// is done.
	for id, kind := range f.open {
		if kind == "blocker" {
			task, _ := q.Show(ctx, id)
			f.done(t, task.Queue, id)
		}
	}
	for id, kind := range f.open {
		if kind == "waiting" || kind == "dependant (queued)" {
			task, _ := q.Show(ctx, id)
			f.done(t, task.Queue, id)
		}
	}
	if fs := verifyLog(t, store); len(fs) > 0 {
		t.Fatalf("verify after the open tasks finished: %v", fs)
	}

	// A second prune prunes those (their neighbours' holes are pruned
	// sequences) and verify stays OK.
	res2, err := retention.Prune(ctx, store, retention.Options{OlderThan: time.Minute, Archive: dir, Now: later})
	if err != nil {
		t.Fatal(err)
	}
	if res2.Tasks != 3 {
		t.Fatalf("second prune: %d tasks, want 3 (blocker, waiting, dependant); kept %v", res2.Tasks, res2.Kept)
	}
	if fs := verifyLog(t, store); len(fs) > 0 {
		t.Fatalf("verify after the second prune: %v", fs)
	}
	for _, ar := range res2.Archives {
		if fs, _ := verifyArchive(t, ar.File); len(fs) > 0 {
			t.Fatalf("verify --file %s: %v", ar.File, fs)
		}
	}

	// Tampering with an archive is found.
	path := res.Archives[0].File
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tampered := strings.Replace(string(data), "retention done", "retention DONE", 1)
	if tampered == string(data) {
		t.Fatal("the first archive does not hold the done task's objective")
	}
	if err := os.WriteFile(path, []byte(tampered), 0o600); err != nil {
		t.Fatal(err)
	}
	if fs, _ := verifyArchive(t, path); len(fs) == 0 {
		t.Fatal("verify --file found nothing in an edited archive")
	}

	// A task removed by hand, without a prune record, is still a finding.
	var claimedID, claimedQueue string
	for id, kind := range f.open {
		if kind == "claimed" {
			claimedID, claimedQueue = id, "q-claimed"
		}
	}
	stream, err := store.JetStream().Stream(ctx, events.StreamQueue)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Purge(ctx, jetstream.WithPurgeSubject(taskqueue.FilterIn(claimedQueue, claimedID))); err != nil {
		t.Fatal(err)
	}
	fs := verifyLog(t, store)
	if len(fs) == 0 {
		t.Fatal("verify found nothing after a task was removed by hand")
	}
	for _, f := range fs {
		if f.Kind != audit.FindingRemoved {
			t.Fatalf("finding %v; want removed", f)
		}
	}
}
