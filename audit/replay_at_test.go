package audit_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/audit"
	"github.com/trellis/trellis/internal/servicetest"
)

// TestBoardAtCaches: the board as of a time is built once per cut and
// reused; a later cut starts from the nearest earlier cached board; the
// cache keeps at most AsOfCacheSize boards.
func TestBoardAtCaches(t *testing.T) {
	t.Parallel()
	svc, b := servicetest.Start(t)
	ctx := context.Background()
	servicetest.RunTask(t, svc, "jobs", "w1")
	time.Sleep(5 * time.Millisecond)
	t1 := time.Now()
	time.Sleep(5 * time.Millisecond)
	servicetest.RunTask(t, svc, "jobs", "w2")
	t2 := time.Now()
	cache := t.TempDir()

	board, seq, err := audit.BoardAt(ctx, b.Store, t1, cache)
	if err != nil {
		t.Fatal(err)
	}
	if tasks := board.Tasks(); seq != 3 || len(tasks) != 1 {
		t.Fatalf("board at t1: seq %d, %d tasks", seq, len(tasks))
	}
	// A second reader at the same time while the first holds it open.
	again, _, err := audit.BoardAt(ctx, b.Store, t1, cache)
	if err != nil {
		t.Fatal(err)
	}
	_ = again.Close()
	_ = board.Close()
	entries, _ := os.ReadDir(cache)
	if len(entries) != 1 {
		t.Fatalf("cache after two reads of one point: %d entries", len(entries))
	}
	board, seq, err = audit.BoardAt(ctx, b.Store, t2, cache)
	if err != nil {
		t.Fatal(err)
	}
	if l, err := board.List(trellis.ListRequest{Limit: 10}); err != nil || seq != 6 || len(l.Tasks) != 2 || l.Counts["jobs"][trellis.StatusDone] != 2 {
		t.Fatalf("board at t2: seq %d, %+v, %v", seq, l, err)
	}
	_ = board.Close()
	board, seq, err = audit.BoardAt(ctx, b.Store, time.Unix(0, 0), cache)
	if err != nil || seq != 0 || len(board.Tasks()) != 0 {
		t.Fatalf("board before the log: %d, %v", seq, err)
	}
	_ = board.Close()
}
