package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/command"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/projections"
	"github.com/trellis/trellis/taskqueue"
)

// AsOfMaxTasks bounds the tasks ListAsOf folds in memory: a log that held
// more tasks at the requested time is answered unavailable. (Issue 15's
// replay --until rebuilds a board of any size into a directory; ListAsOf
// is the seam where it plugs in.)
const AsOfMaxTasks = 100_000

// errStopFold ends a fold at its sequence.
var errStopFold = errors.New("stop fold")

// asOfFold is the last board folded for an as-of read: the rows as they
// stood after sequence seq, in task id order.
type asOfFold struct {
	mu   sync.Mutex
	seq  uint64
	rows []trellis.TaskRow
	ok   bool
}

// ListAsOf answers a list request about the queue board as it stood at
// time at: the events the queue stream stored up to then, folded. Filters,
// limit and cursor work as for List (the cursor of an as-of page continues
// only the same as-of listing). The last fold is kept, so paging through
// one moment folds the log once.
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
	seq, err := seqBefore(ctx, s.store, events.StreamQueue, at.Add(time.Nanosecond))
	if err != nil {
		return nil, command.StoreError("list as of", err)
	}
	rows, err := s.asOf.fold(ctx, s.store, seq)
	if err != nil {
		return nil, err
	}
	return pageRows(rows, req)
}

// fold returns the board rows as of sequence seq, folding the queue stream
// unless the last fold was for the same sequence.
func (f *asOfFold) fold(ctx context.Context, store *events.Store, seq uint64) ([]trellis.TaskRow, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ok && f.seq == seq {
		return f.rows, nil
	}
	tasks := map[string]*trellis.Task{}
	err := store.Read(ctx, events.StreamQueue, "", 1, func(rec events.Recorded) error {
		if rec.Seq > seq {
			return errStopFold
		}
		if taskqueue.IsControlSubject(rec.Subject) || rec.Type == "" || trellis.ValidateTaskID("task_id", rec.AggregateID) != nil {
			return nil
		}
		t, err := taskqueue.Apply(tasks[rec.AggregateID], rec)
		if errors.Is(err, events.ErrBadEvent) {
			return nil
		}
		if err != nil {
			return err
		}
		if t == nil {
			return nil
		}
		if _, known := tasks[rec.AggregateID]; !known && len(tasks) >= AsOfMaxTasks {
			return trellis.Errorf(trellis.CodeUnavailable, "as of: the log held more than %d tasks by then; this server folds at most that many in memory", AsOfMaxTasks)
		}
		tasks[rec.AggregateID] = t
		return nil
	})
	if err != nil && !errors.Is(err, errStopFold) {
		var te *trellis.Error
		if errors.As(err, &te) {
			return nil, err
		}
		return nil, command.StoreError("list as of", err)
	}
	rows := make([]trellis.TaskRow, 0, len(tasks))
	for _, t := range tasks {
		rows = append(rows, projections.Row(t))
	}
	slices.SortFunc(rows, func(x, y trellis.TaskRow) int {
		switch {
		case x.TaskID < y.TaskID:
			return -1
		case x.TaskID > y.TaskID:
			return 1
		}
		return 0
	})
	f.seq, f.rows, f.ok = seq, rows, true
	return rows, nil
}

// pageRows applies a normalized list request to rows in task id order:
// the filters, the cursor, the limit and the page's byte bound, plus the
// counts per queue and status (narrowed by the queue filter only), as
// Board.List answers.
func pageRows(rows []trellis.TaskRow, req trellis.ListRequest) (*trellis.TaskList, error) {
	after, err := trellis.DecodeCursor(req.Cursor)
	if err != nil {
		return nil, err
	}
	since, err := req.SinceTime()
	if err != nil {
		return nil, err
	}
	out := &trellis.TaskList{Tasks: []trellis.TaskRow{}, Counts: map[string]map[trellis.Status]int{}}
	size := 0
	last := ""
	for _, row := range rows {
		if req.Queue != "" && row.Queue != req.Queue {
			continue
		}
		if out.Counts[row.Queue] == nil {
			out.Counts[row.Queue] = map[trellis.Status]int{}
		}
		out.Counts[row.Queue][row.Status]++
		if row.TaskID <= after || out.NextCursor != "" {
			continue
		}
		if req.Status != "" && row.Status != req.Status || !req.MatchText(row.TaskID, row.Objective) {
			continue
		}
		if !since.IsZero() {
			if u, err := time.Parse(time.RFC3339Nano, row.UpdatedAt); err == nil && u.Before(since) {
				continue
			}
		}
		enc, err := json.Marshal(row)
		if err != nil {
			return nil, err
		}
		if len(out.Tasks) == req.Limit || (len(out.Tasks) > 0 && size+len(enc) > trellis.MaxListBytes) {
			out.NextCursor = trellis.EncodeCursor(last)
			continue
		}
		out.Tasks = append(out.Tasks, row)
		size += len(enc) + 1
		last = row.TaskID
	}
	return out, nil
}
