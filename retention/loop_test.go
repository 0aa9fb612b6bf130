package retention_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/retention"
	"github.com/trellis/trellis/taskqueue"
)

// cancelled adds n tasks to queue and cancels them.
func cancelled(t *testing.T, q *taskqueue.Handler, queue string, n int) []string {
	t.Helper()
	var ids []string
	for i := 0; i < n; i++ {
		task, err := q.Add(ctxT(t), trellis.AddTaskRequest{Queue: queue, Objective: fmt.Sprintf("finished %d", i)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := q.Cancel(ctxT(t), trellis.CancelRequest{TaskID: task.TaskID, Reason: "done with it"}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, task.TaskID)
	}
	return ids
}

// TestPruneCancelledKeepsArchive: a prune stopped once its archive is
// durable (a server stopping its retention loop) fails its append with
// the context's error, which does not say whether the batch was stored:
// the archive, which a stored record would name, stays. The next prune
// prunes every task (the first archive is named by no record and prunes
// nothing), and verify is OK.
func TestPruneCancelledKeepsArchive(t *testing.T) {
	t.Parallel()
	store := eventstest.Start(t).Store
	q := taskqueue.New(store, taskqueue.Config{})
	ids := cancelled(t, q, "stopped", 5)
	dir := filepath.Join(t.TempDir(), "archive")
	ctx, cancel := context.WithCancel(ctxT(t))
	var written string
	_, err := retention.Prune(ctx, store, retention.Options{OlderThan: time.Minute, Archive: dir, Now: later,
		AfterArchive: func(path string) { written = path; cancel() }})
	if err == nil || written == "" {
		t.Fatalf("a prune cancelled after its archive: %v (archive %q)", err, written)
	}
	if _, err := os.Stat(written); err != nil {
		t.Fatalf("the archive of a batch in doubt was removed: %v", err)
	}
	recs, _, err := store.Load(ctxT(t), events.StreamQueue, events.RetentionFilter)
	if err != nil && !errors.Is(err, events.ErrNotFound) {
		t.Fatal(err)
	}
	if len(recs) != 0 {
		t.Fatalf("%d records after a cancelled append", len(recs))
	}
	res, err := retention.Prune(ctxT(t), store, retention.Options{OlderThan: time.Minute, Archive: dir, Now: later})
	if err != nil || res.Tasks != len(ids) {
		t.Fatalf("the next prune: %+v %v", res, err)
	}
	if fs := verifyLog(t, store); len(fs) > 0 {
		t.Fatalf("verify: %v", fs)
	}
}

// TestLoopPrunesAndBadConfig: a loop prunes at start and counts what it
// removed; a retention that is not positive, an interval out of bounds
// and an archive that is a file are refused by name before it starts.
func TestLoopPrunesAndBadConfig(t *testing.T) {
	t.Parallel()
	store := eventstest.Start(t).Store
	q := taskqueue.New(store, taskqueue.Config{})
	dir := t.TempDir()
	file := filepath.Join(dir, "a-file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(dir, "archive")
	for _, c := range []struct {
		cfg  retention.LoopConfig
		want string
	}{
		{retention.LoopConfig{Options: retention.Options{Archive: archive}}, "retention"},
		{retention.LoopConfig{Options: retention.Options{OlderThan: -time.Hour, Archive: archive}}, "retention"},
		{retention.LoopConfig{Options: retention.Options{OlderThan: time.Hour, Archive: archive}, Every: time.Millisecond}, "prune_every"},
		{retention.LoopConfig{Options: retention.Options{OlderThan: time.Hour, Archive: archive}, Every: 48 * time.Hour}, "prune_every"},
		{retention.LoopConfig{Options: retention.Options{OlderThan: time.Hour, Archive: archive, RemoveRate: -1}}, "remove_rate"},
		{retention.LoopConfig{Options: retention.Options{OlderThan: time.Hour, Archive: archive, RemoveRate: retention.MaxRemoveRate + 1}}, "remove_rate"},
		{retention.LoopConfig{Options: retention.Options{OlderThan: time.Hour}}, "archive"},
		{retention.LoopConfig{Options: retention.Options{OlderThan: time.Hour, Archive: file}}, "is a file"},
	} {
		l, err := retention.StartLoop(store, c.cfg)
		if err == nil {
			l.Close()
		}
		if trellis.ErrorCode(err) != trellis.CodeInvalid || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v; want invalid naming %q", c.cfg, err, c.want)
		}
	}
	if got := retention.DefaultEvery(720 * time.Hour); got != time.Hour {
		t.Errorf("DefaultEvery(720h) = %s", got)
	}
	if got := retention.DefaultEvery(time.Millisecond); got != time.Minute {
		t.Errorf("DefaultEvery(1ms) = %s", got)
	}

	ids := cancelled(t, q, "looped", 7)
	l, err := retention.StartLoop(store, retention.LoopConfig{Options: retention.Options{OlderThan: time.Minute, Archive: archive, Now: later}, Every: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	waitFor(t, "the loop's first prune", func() bool { return l.Status().Runs >= 1 })
	if st := l.Status(); st.Tasks != len(ids) || st.Failed != 0 || st.LastOK.IsZero() {
		t.Fatalf("loop status %+v; want %d tasks pruned", st, len(ids))
	}
	if fs := verifyLog(t, store); len(fs) > 0 {
		t.Fatalf("verify: %v", fs)
	}
}

// TestShowOfCachedTaskAfterPrune: a process that showed (and so cached)
// finished tasks before a prune answers not_found for them afterwards,
// as a process that never saw them does (before, it answered the cached
// task: its catch-up found no newer event and could not tell the old ones
// were gone).
func TestShowOfCachedTaskAfterPrune(t *testing.T) {
	t.Parallel()
	store := eventstest.Start(t).Store
	q := taskqueue.New(store, taskqueue.Config{})
	ids := cancelled(t, q, "shown", 3)
	for _, id := range ids {
		if _, err := q.Show(ctxT(t), id); err != nil {
			t.Fatal(err)
		}
	}
	res, err := retention.Prune(ctxT(t), store, retention.Options{OlderThan: time.Minute, Archive: t.TempDir(), Now: later})
	if err != nil || res.Tasks != len(ids) {
		t.Fatalf("prune: %+v %v", res, err)
	}
	for _, id := range ids {
		if task, err := q.Show(ctxT(t), id); trellis.ErrorCode(err) != trellis.CodeNotFound {
			t.Errorf("show of the pruned task %s: %+v %v; want not_found", id, task, err)
		}
	}
}

// TestVerifyDuringUnfinishedPrune: a prune whose record is appended and
// whose removal stopped after the tasks' events but before their
// tombstones (as its finish removes them: events first) leaves tombstones
// chaining to events that are gone; audit verify, run then (by an
// operator while a server's retention prunes), counts them as pruned, not
// removed. The next prune finishes the removal; verify stays OK.
func TestVerifyDuringUnfinishedPrune(t *testing.T) {
	t.Parallel()
	store := eventstest.Start(t).Store
	q := taskqueue.New(store, taskqueue.Config{})
	ids := cancelled(t, q, "unfinished", 4)
	// Another task after them, so that the pruned events are not the
	// stream's whole head.
	if _, err := q.Add(ctxT(t), trellis.AddTaskRequest{Queue: "unfinished", Objective: "stays open"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctxT(t))
	_, err := retention.Prune(ctx, store, retention.Options{OlderThan: time.Minute, Archive: t.TempDir(), Now: later, AfterRecord: cancel})
	if err == nil {
		t.Fatal("a prune stopped after its record reported no error")
	}
	recs, _, err := store.Load(ctxT(t), events.StreamQueue, events.RetentionFilter)
	if err != nil || len(recs) != 1 {
		t.Fatalf("records: %d %v", len(recs), err)
	}
	var p events.PrunedPayload
	if err := recs[0].DecodePayload(&p); err != nil {
		t.Fatal(err)
	}
	stream, err := store.JetStream().Stream(ctxT(t), events.StreamQueue)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range p.Removed {
		for s := r[0]; s <= r[1]; s++ {
			if err := stream.DeleteMsg(ctxT(t), s); err != nil {
				t.Fatal(err)
			}
		}
	}
	if fs := verifyLog(t, store); len(fs) > 0 {
		t.Fatalf("verify while the tombstones of a recorded prune remain: %v", fs)
	}
	res, err := retention.Prune(ctxT(t), store, retention.Options{OlderThan: time.Minute, Archive: t.TempDir(), Now: later})
	// The last tombstone ends the stream and stays (see
	// TestPruneKeepsTheStreamsLastMessage).
	if err != nil || res.Completed != len(ids)-1 {
		t.Fatalf("the next prune: %+v %v; want it to remove %d of the %d tombstones", res, err, len(ids)-1, len(ids))
	}
	if fs := verifyLog(t, store); len(fs) > 0 {
		t.Fatalf("verify after the next prune: %v", fs)
	}
}

// TestPruneKeepsTheStreamsLastMessage: a prune whose tombstones end the
// stream leaves the last one: projections catch up to the stream's last
// sequence, and a deleted last sequence is never delivered to a
// projection that had not read it (a server started on the pruned log
// waited for it until its timeouts: found by BenchmarkColdStart).
func TestPruneKeepsTheStreamsLastMessage(t *testing.T) {
	t.Parallel()
	store := eventstest.Start(t).Store
	q := taskqueue.New(store, taskqueue.Config{})
	cancelled(t, q, "tail", 3)
	if _, err := retention.Prune(ctxT(t), store, retention.Options{OlderThan: time.Minute, Archive: t.TempDir(), Now: later}); err != nil {
		t.Fatal(err)
	}
	info, err := store.StreamInfo(ctxT(t), events.StreamQueue)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Get(ctxT(t), events.StreamQueue, info.State.LastSeq); err != nil {
		t.Fatalf("the stream's last sequence #%d after a prune: %v", info.State.LastSeq, err)
	}
	if fs := verifyLog(t, store); len(fs) > 0 {
		t.Fatalf("verify: %v", fs)
	}
}
