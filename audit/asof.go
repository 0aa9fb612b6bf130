package audit

import (
	"context"
	"path/filepath"
	"sync"
	"time"

	"github.com/trellis/trellis"
)

// asOfBoards serializes the as-of reads of one server: a board not cached
// yet is folded once, not by every request that asks for it at once.
type asOfBoards struct {
	mu sync.Mutex
}

// ListAsOf answers a list request about the queue board as it stood at
// time at: the board rebuilt from the events the queue stream stored up to
// then (BoardAt, cached under <data>/asof/ like `queue list --as-of`).
// Filters, limit and cursor work as for List.
func (s *Service) ListAsOf(ctx context.Context, at time.Time, req trellis.ListRequest) (*trellis.TaskList, error) {
	if err := req.Normalize(); err != nil {
		return nil, err
	}
	if at.IsZero() {
		return nil, trellis.FieldError("as_of", "must be a time")
	}
	if at.After(time.Now()) {
		return nil, trellis.FieldError("as_of", "%s is in the future", at.UTC().Format(time.RFC3339))
	}
	s.asOf.mu.Lock()
	board, _, err := BoardAt(ctx, s.store, at, filepath.Join(s.cfg.DataDir, "asof"))
	s.asOf.mu.Unlock()
	if err != nil {
		return nil, err
	}
	defer board.Close()
	l, err := board.List(req)
	if err != nil {
		return nil, trellis.Errorf(trellis.CodeInternal, "list as of %s: %w", at.UTC().Format(time.RFC3339Nano), err)
	}
	return l, nil
}
