package taskqueue

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/command"
	"github.com/trellis/trellis/events"
)

// ExportTasks writes the JSONL task-packet log: one line per queue
// event, holding the task packet as it stood after that event, in log order.
// It streams: each line is written as its event is read, and it keeps at
// most ExportCacheSize task packets in memory (see ExportTasksCached).
func ExportTasks(ctx context.Context, store *events.Store, w io.Writer) (int, error) {
	return ExportTasksCached(ctx, store, w, ExportCacheSize)
}

// ExportTasksCached is ExportTasks keeping at most cacheTasks task packets
// in memory: a task whose packet was dropped is folded again from its own
// events up to the current one (one direct read of the task's events), so
// memory does not grow with the log while the output stays the same.
func ExportTasksCached(ctx context.Context, store *events.Store, w io.Writer, cacheTasks int) (int, error) {
	tasks := newLRU[string, *trellis.Task](cacheTasks)
	n := 0
	enc := newJSONLWriter(w)
	err := store.Read(ctx, events.StreamQueue, "", 0, func(rec events.Recorded) error {
		if !IsTaskSubject(rec.Subject) {
			return nil
		}
		prev, ok := tasks.get(rec.AggregateID)
		if !ok && rec.Type != Added && rec.AggregateID != "" {
			var err error
			if prev, err = foldTaskBefore(ctx, store, rec); err != nil {
				return err
			}
		}
		t, err := Apply(prev, rec)
		if errors.Is(err, events.ErrBadEvent) {
			return nil // not a Trellis event: nothing to export
		}
		if err != nil {
			return fmt.Errorf("export: %w", err)
		}
		if t == nil {
			return nil
		}
		tasks.put(rec.AggregateID, t)
		n++
		return enc.write(t)
	})
	if err != nil {
		return n, command.StoreError("export", err)
	}
	return n, enc.flush()
}

// foldTaskBefore folds a task's events that precede rec (nil when there
// are none).
func foldTaskBefore(ctx context.Context, store *events.Store, rec events.Recorded) (*trellis.Task, error) {
	if trellis.ValidateTaskID("task_id", rec.AggregateID) != nil {
		return nil, nil // not a task: ApplyTask reports the bad event
	}
	recs, _, err := store.Load(ctx, events.StreamQueue, Filter(rec.AggregateID))
	if err != nil {
		return nil, fmt.Errorf("export: reload task %s: %w", rec.AggregateID, err)
	}
	var t *trellis.Task
	for _, r := range recs {
		if r.Seq >= rec.Seq {
			break
		}
		next, err := Apply(t, r)
		if errors.Is(err, events.ErrBadEvent) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("export: reload task %s: %w", rec.AggregateID, err)
		}
		if next != nil {
			t = next
		}
	}
	return t, nil
}
