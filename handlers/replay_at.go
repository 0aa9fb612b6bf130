package handlers

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/audit"
	"github.com/trellis/trellis/command"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/projections"
)

// RebuildResult reports a rebuild as of a point.
type RebuildResult struct {
	// Dir is the directory the projections were built in: a data
	// directory of its own (projections/, checkpoints/, index/).
	Dir         string               `json:"dir"`
	Cut         audit.Cut            `json:"cut"`
	Projections []ReplayedProjection `json:"projections"`
	Millis      int64                `json:"millis"`
}

// RebuildAt builds every projection Replay rebuilds (board, checkpoints,
// frontiers, tasks, facts, search) as of cut into dir, which must be
// empty or absent: the live projections are not touched. Each projection
// folds its stream from the start up to its cut (see projections.FoldTo);
// the cost is that of a replay up to the point.
func RebuildAt(ctx context.Context, store *events.Store, cut *audit.Cut, dir string, log *slog.Logger) (*RebuildResult, error) {
	start := time.Now()
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if err := emptyDir("out", dir); err != nil {
		return nil, err
	}
	svc := NewService(store, ServiceConfig{DataDir: dir, Logger: log})
	res := &RebuildResult{Dir: dir, Cut: *cut, Projections: []ReplayedProjection{}}
	var first error
	for _, r := range svc.runners {
		p := r.Projection()
		seq, err := projections.FoldTo(ctx, store, p, cut.Streams[p.Stream()], log)
		if err != nil {
			first = command.StoreError("rebuild "+p.Name(), err)
			break
		}
		res.Projections = append(res.Projections, ReplayedProjection{Name: p.Name(), Stream: p.Stream(), LastSeq: seq})
	}
	if err := svc.search.Close(); err != nil && first == nil {
		first = trellis.Errorf(trellis.CodeInternal, "rebuild: close the search index: %w", err)
	}
	if err := svc.board.Close(); err != nil && first == nil {
		first = trellis.Errorf(trellis.CodeInternal, "rebuild: close the board: %w", err)
	}
	if first != nil {
		return nil, first
	}
	res.Millis = time.Since(start).Milliseconds()
	return res, nil
}

// emptyDir creates dir or checks that it is an empty directory.
func emptyDir(field, dir string) error {
	if dir == "" {
		return trellis.FieldError(field, "must name a directory")
	}
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return trellis.FieldError(field, "cannot create %s: %v", dir, err)
		}
		return nil
	case err != nil:
		return trellis.FieldError(field, "%s is not a directory Trellis can use: %v", dir, err)
	case len(entries) > 0:
		return trellis.FieldError(field, "%s is not empty: give a new or empty directory (the rebuild never writes over files)", dir)
	}
	return nil
}
