package projections_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/handlers"
	"github.com/trellis/trellis/projections"
	"github.com/trellis/trellis/taskqueue"
)

var errStop = errors.New("stop")

// foldLog folds the queue stream up to sequence upTo (0: all) into task
// packets: the oracle the board is checked against.
func foldLog(t *testing.T, ctx context.Context, b *bundle, upTo uint64) map[string]*trellis.Task {
	t.Helper()
	tasks := map[string]*trellis.Task{}
	err := b.Store.Read(ctx, events.StreamQueue, "", 0, func(rec events.Recorded) error {
		if upTo > 0 && rec.Seq > upTo {
			return errStop
		}
		next, err := taskqueue.Apply(tasks[rec.AggregateID], rec)
		if err != nil {
			return err
		}
		if next != nil {
			tasks[rec.AggregateID] = next
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		t.Fatal(err)
	}
	return tasks
}

func sortedTasks(m map[string]*trellis.Task) []*trellis.Task {
	out := make([]*trellis.Task, 0, len(m))
	for _, t := range m {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].TaskID < out[j].TaskID })
	return out
}

// TestBoardPagesMatchTheLog: a board with part of the log committed to its
// file and the rest only folded (in memory) returns, page by page for every
// filter and page size, exactly the rows of the fold of the log, in id
// order, each once, with next_cursor absent only on the last page; the
// counts equal the log's.
func TestBoardPagesMatchTheLog(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	randomWorkload(t, ctx, b.svc, 11, 400)
	last, err := b.Store.LastSeq(ctx, events.StreamQueue)
	if err != nil {
		t.Fatal(err)
	}
	oracle := sortedTasks(foldLog(t, ctx, b, 0))
	if len(oracle) < 50 {
		t.Fatalf("workload too small: %d tasks", len(oracle))
	}

	board := projections.NewBoard(t.TempDir())
	if _, err := board.Load(); err != nil {
		t.Fatal(err)
	}
	defer board.Close()
	half := last / 2
	err = b.Store.Read(ctx, events.StreamQueue, "", 0, func(rec events.Recorded) error {
		if err := board.Apply(rec); err != nil {
			return err
		}
		if rec.Seq == half {
			return board.Save(half)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	wantCounts := map[string]map[trellis.Status]int{}
	for _, task := range oracle {
		if wantCounts[task.Queue] == nil {
			wantCounts[task.Queue] = map[trellis.Status]int{}
		}
		wantCounts[task.Queue][task.Status]++
	}
	if got := board.Counts(); !reflect.DeepEqual(got, wantCounts) {
		t.Fatalf("counts = %v, log says %v", got, wantCounts)
	}

	since := oracle[len(oracle)/2].UpdatedAt
	filters := []trellis.ListRequest{
		{}, {Queue: "alpha"}, {Status: trellis.StatusQueued}, {Queue: "beta", Status: trellis.StatusDone},
		{Since: since.Format(time.RFC3339Nano)}, {Queue: "gamma", Since: since.Format(time.RFC3339Nano)},
		{Queue: "nosuchqueue"},
	}
	for _, f := range filters {
		var want []trellis.TaskRow
		for _, task := range oracle {
			if (f.Queue == "" || task.Queue == f.Queue) && (f.Status == "" || task.Status == f.Status) &&
				(f.Since == "" || !task.UpdatedAt.Before(since)) {
				want = append(want, projections.Row(task))
			}
		}
		for _, c := range []struct {
			limit  int
			newest bool
		}{{1, false}, {7, false}, {trellis.MaxListLimit, false}, {1, true}, {7, true}, {trellis.MaxListLimit, true}} {
			limit := c.limit
			req := f
			req.Limit, req.Newest = limit, c.newest
			want := want
			if c.newest {
				want = slices.Clone(want)
				slices.Reverse(want)
			}
			var got []trellis.TaskRow
			for page := 0; ; page++ {
				if page > len(oracle)+1 {
					t.Fatalf("%+v: pages never end", req)
				}
				l, err := board.List(req)
				if err != nil {
					t.Fatal(err)
				}
				if len(l.Tasks) > limit {
					t.Fatalf("%+v: page of %d rows", req, len(l.Tasks))
				}
				got = append(got, l.Tasks...)
				if l.NextCursor == "" {
					break
				}
				if len(l.Tasks) != limit {
					t.Fatalf("%+v: a short page (%d rows) with a next cursor", req, len(l.Tasks))
				}
				req.Cursor = l.NextCursor
			}
			if !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
				t.Fatalf("filter %+v limit %d newest %v: %d rows, the log says %d", f, limit, c.newest, len(got), len(want))
			}
		}
	}
}

// TestBoardCursorKeepsItsOrder: a cursor from an oldest-first page is
// refused by a newest-first listing and the other way round, saying why,
// rather than paging on from the wrong end.
func TestBoardCursorKeepsItsOrder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	randomWorkload(t, ctx, b.svc, 5, 20)
	for _, newest := range []bool{false, true} {
		l, err := b.svc.List(ctx, trellis.ListRequest{Limit: 2, Newest: newest})
		if err != nil || l.NextCursor == "" {
			t.Fatalf("newest %v: %v, cursor %q", newest, err, l.NextCursor)
		}
		_, err = b.svc.List(ctx, trellis.ListRequest{Limit: 2, Newest: !newest, Cursor: l.NextCursor})
		if trellis.ErrorCode(err) != trellis.CodeInvalid || !strings.Contains(err.Error(), "other order") {
			t.Fatalf("a newest=%v cursor on a newest=%v listing: %v", newest, !newest, err)
		}
	}
}

// TestBoardCrashMidCommit: commits that fail half-way (a crash in the
// middle of a save) leave the file at the last whole commit: its tasks
// are the fold of exactly the events up to the sequence it records. A
// restart resumes from there and ends equal to a board rebuilt from
// scratch.
func TestBoardCrashMidCommit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	randomWorkload(t, ctx, b.svc, 21, 150)
	if err := b.svc.Close(); err != nil { // a clean stop: all committed
		t.Fatal(err)
	}
	dir := filepath.Join(b.dataDir, "projections")
	crashing := handlers.NewService(b.Store, handlers.ServiceConfig{DataDir: b.dataDir})
	crashing.Board().FailSaveAfter(2) // from now on every commit of more than 2 tasks fails half-way
	if err := crashing.Start(ctx); err != nil {
		t.Fatal(err)
	}
	randomWorkload(t, ctx, crashing, 22, 150)
	if err := crashing.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if err := crashing.Close(); err == nil {
		t.Fatal("the final save should have failed half-way")
	}
	last, err := b.Store.LastSeq(ctx, events.StreamQueue)
	if err != nil {
		t.Fatal(err)
	}

	file := projections.NewBoard(dir)
	seq, err := file.Load()
	if err != nil {
		t.Fatal(err)
	}
	if seq == 0 || seq >= last {
		t.Fatalf("file at #%d of %d: the crash lost nothing, the test proves nothing", seq, last)
	}
	if got, want := file.Tasks(), sortedTasks(foldLog(t, ctx, b, seq)); !reflect.DeepEqual(got, want) {
		t.Fatalf("file at #%d holds %d tasks that are not the fold of the log up to #%d (%d tasks)", seq, len(got), seq, len(want))
	}
	if err := file.Close(); err != nil {
		t.Fatal(err)
	}

	restarted := handlers.NewService(b.Store, handlers.ServiceConfig{DataDir: b.dataDir})
	if err := restarted.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer restarted.Close()
	if err := restarted.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	fresh := handlers.NewService(b.Store, handlers.ServiceConfig{DataDir: t.TempDir()})
	if err := fresh.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if err := fresh.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := restarted.Board().Tasks(), fresh.Board().Tasks(); !reflect.DeepEqual(got, want) {
		t.Fatalf("resumed board (%d tasks) differs from a rebuilt one (%d)", len(got), len(want))
	}
	if got, want := restarted.Board().Counts(), fresh.Board().Counts(); !reflect.DeepEqual(got, want) {
		t.Fatalf("resumed counts %v differ from rebuilt %v", got, want)
	}
}

// TestBoardPageBytesBounded: rows of large objectives end a page before
// its limit (so it fits in one NATS message), with a cursor that goes on.
func TestBoardPageBytesBounded(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const n = 12
	for i := 0; i < n; i++ {
		if _, err := b.svc.Add(ctx, trellis.AddTaskRequest{Objective: strings.Repeat("x", 60<<10)}); err != nil {
			t.Fatal(err)
		}
	}
	req := trellis.ListRequest{Limit: trellis.MaxListLimit}
	total, pages := 0, 0
	for {
		l, err := b.svc.List(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		enc, _ := json.Marshal(l.Tasks)
		if len(enc) > trellis.MaxListBytes {
			t.Fatalf("page of %d bytes", len(enc))
		}
		total += len(l.Tasks)
		pages++
		if l.NextCursor == "" {
			break
		}
		req.Cursor = l.NextCursor
	}
	if total != n || pages < 2 {
		t.Fatalf("%d rows in %d pages; want %d rows in at least 2", total, pages, n)
	}
}

// TestBoardReplayWithoutSyncs: a backlog replayed without per-commit
// syncs marks the file; a crash before the synced end leaves the mark and
// the next Load starts over from an empty board (it never trusts pages
// that may not have reached the disk); a synced end (EndReplay's commit,
// or Close) removes the mark and the state stands.
func TestBoardReplayWithoutSyncs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	randomWorkload(t, ctx, b.svc, 31, 60)
	last, err := b.Store.LastSeq(ctx, events.StreamQueue)
	if err != nil {
		t.Fatal(err)
	}
	want := sortedTasks(foldLog(t, ctx, b, 0))
	replay := func(board *projections.Board) {
		t.Helper()
		if _, err := board.Load(); err != nil {
			t.Fatal(err)
		}
		board.SetReplayMin(1)
		if err := board.BeginReplay(last); err != nil {
			t.Fatal(err)
		}
		if !board.ReplayMarked() {
			t.Fatal("replay without syncs did not mark the file")
		}
		err := b.Store.Read(ctx, events.StreamQueue, "", 0, func(rec events.Recorded) error { return board.Apply(rec) })
		if err != nil {
			t.Fatal(err)
		}
		if err := board.Save(last); err != nil {
			t.Fatal(err)
		}
	}

	dir := t.TempDir()
	crashed := projections.NewBoard(dir)
	replay(crashed)
	if !crashed.ReplayMarked() {
		t.Fatal("an unsynced commit removed the mark")
	}
	if err := crashed.CloseAbruptly(); err != nil {
		t.Fatal(err)
	}
	again := projections.NewBoard(dir)
	if seq, err := again.Load(); err != nil || seq != 0 || len(again.Tasks()) != 0 || again.ReplayMarked() {
		t.Fatalf("after a crash mid-replay: seq %d, %d tasks, marked %v, %v; want an empty board", seq, len(again.Tasks()), again.ReplayMarked(), err)
	}
	if err := again.Close(); err != nil {
		t.Fatal(err)
	}

	for _, end := range []string{"EndReplay", "Close"} {
		dir := t.TempDir()
		board := projections.NewBoard(dir)
		replay(board)
		if end == "EndReplay" {
			board.EndReplay()
			if err := board.Save(last); err != nil {
				t.Fatal(err)
			}
			if board.ReplayMarked() {
				t.Fatal("a synced commit after EndReplay left the mark")
			}
		}
		if err := board.Close(); err != nil {
			t.Fatal(err)
		}
		reopened := projections.NewBoard(dir)
		seq, err := reopened.Load()
		if err != nil || seq != last || reopened.ReplayMarked() || !reflect.DeepEqual(reopened.Tasks(), want) {
			t.Fatalf("%s: seq %d of %d, marked %v, %v", end, seq, last, reopened.ReplayMarked(), err)
		}
		_ = reopened.Close()
	}
}

// TestRunnerEndsReplay: a runner that starts behind the stream folds the
// backlog without per-commit syncs and, once it has applied what the
// stream held, commits with a sync and removes the mark: the file then
// holds the whole fold at the last sequence.
func TestRunnerEndsReplay(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	randomWorkload(t, ctx, b.svc, 41, 80)
	last, err := b.Store.LastSeq(ctx, events.StreamQueue)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	board := projections.NewBoard(dir)
	board.SetReplayMin(1)
	r := projections.NewRunner(b.Store, board, nil)
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.WaitFor(ctx, last); err != nil {
		t.Fatal(err)
	}
	// Save waits for the fold in flight, and with it the replay's end.
	if err := r.Save(); err != nil {
		t.Fatal(err)
	}
	if board.ReplayMarked() {
		t.Fatal("the mark outlived the end of the replay")
	}
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := board.Close(); err != nil {
		t.Fatal(err)
	}
	reopened := projections.NewBoard(dir)
	seq, err := reopened.Load()
	if err != nil || seq != last || !reflect.DeepEqual(reopened.Tasks(), sortedTasks(foldLog(t, ctx, b, 0))) {
		t.Fatalf("after the replay: seq %d of %d, %v", seq, last, err)
	}
	_ = reopened.Close()
}
