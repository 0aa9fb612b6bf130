package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/audit"
	"github.com/trellis/trellis/projections"
)

// listAsOf answers `queue list --as-of TIME` from the board as the log
// stood at TIME: rebuilt from the log (never the live board) and cached
// under <data>/asof/ by the cut of the queue stream (see audit.BoardAt).
func (a *app) listAsOf(cmd *cobra.Command, req trellis.ListRequest, asOf string, asJSON bool) error {
	at, err := trellis.ParseTimeArg("as-of", asOf, time.Now())
	if err != nil {
		return err
	}
	if err := req.Normalize(); err != nil {
		return err
	}
	var seq uint64
	return a.call(cmd, asJSON, func(ctx context.Context, s *session) (any, error) {
		store, err := s.log("queue list --as-of")
		if err != nil {
			return nil, err
		}
		var board *projections.Board
		board, seq, err = audit.BoardAt(ctx, store, at, filepath.Join(a.dataDir, "asof"))
		if err != nil {
			return nil, err
		}
		defer board.Close()
		l, err := board.List(req)
		if err != nil {
			return nil, trellis.Errorf(trellis.CodeInternal, "list as of %s: %w", asOf, err)
		}
		return l, nil
	}, func(v any) {
		printList(a.stdout, v.(*trellis.TaskList))
		fmt.Fprintf(a.stdout, "as of %s: TRELLIS_QUEUE up to #%d\n", at.Format(time.RFC3339Nano), seq)
	})
}
