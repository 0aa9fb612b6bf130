package audit_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/audit"
	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/retention"
	"github.com/trellis/trellis/taskqueue"
)

// TestAsOfBeforePruneCutIsArchived: after a prune, a board as of a time
// before its cut (queue list --as-of) and a replay point before it
// (replay --until) are refused with not_found naming the cut and the
// archives, instead of a board silently missing the pruned tasks; a time
// from the cut on still answers. Bad input: a point the log never held is
// still not_found as before.
func TestAsOfBeforePruneCutIsArchived(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	ctx := context.Background()
	q := taskqueue.New(b.Store, taskqueue.Config{})
	task, err := q.Add(ctx, trellis.AddTaskRequest{Queue: "arch", Objective: "archived"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Cancel(ctx, trellis.CancelRequest{TaskID: task.TaskID, Reason: "done with it"}); err != nil {
		t.Fatal(err)
	}
	then := time.Now()
	cut := time.Now().Add(time.Second)
	res, err := retention.Prune(ctx, b.Store, retention.Options{OlderThan: time.Minute, Archive: t.TempDir(),
		Now: func() time.Time { return cut.Add(time.Minute) }})
	if err != nil || res.Tasks != 1 {
		t.Fatalf("prune: %+v, %v", res, err)
	}
	_, _, err = audit.BoardAt(ctx, b.Store, then, t.TempDir())
	if trellis.ErrorCode(err) != trellis.CodeNotFound || !strings.Contains(err.Error(), "archived") || !strings.Contains(err.Error(), res.Archives[0].File[strings.LastIndex(res.Archives[0].File, "/")+1:]) {
		t.Fatalf("board as of a time before the cut: %v; want not_found naming the archive", err)
	}
	if _, err := audit.ResolvePoint(ctx, b.Store, audit.Point{Time: then}); trellis.ErrorCode(err) != trellis.CodeNotFound || !strings.Contains(err.Error(), "archived") {
		t.Fatalf("replay point before the cut: %v; want not_found, archived", err)
	}
	for time.Now().Before(cut.Add(10 * time.Millisecond)) {
		time.Sleep(10 * time.Millisecond) // a time from the cut on must be in the past
	}
	board, _, err := audit.BoardAt(ctx, b.Store, time.Now(), t.TempDir())
	if err != nil {
		t.Fatalf("board as of now, after the cut: %v", err)
	}
	_ = board.Close()
	if _, err := audit.ResolvePoint(ctx, b.Store, audit.Point{Stream: "TRELLIS_QUEUE", Seq: 1 << 40}); trellis.ErrorCode(err) != trellis.CodeNotFound {
		t.Fatalf("a point past the log's end: %v; want not_found", err)
	}
}
