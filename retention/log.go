package retention

import (
	"context"
	"errors"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/taskqueue"
)

// retentionLog is the retention aggregate as a prune reads it: its last
// record (the only one a crash may have left unfinished: prunes are
// serialized by the record's check) and every sequence the records
// account for.
type retentionLog struct {
	lastSeq  uint64
	lastHash string
	last     *events.PrunedPayload
	pruned   events.SeqRanges
}

// readLog reads the retention aggregate.
func readLog(ctx context.Context, store *events.Store) (*retentionLog, error) {
	recs, last, err := store.Load(ctx, events.StreamQueue, events.RetentionFilter)
	if err != nil && !errors.Is(err, events.ErrNotFound) {
		return nil, err
	}
	l := &retentionLog{lastSeq: last}
	for _, r := range recs {
		l.lastHash = events.Hash(r.Envelope)
		if r.Type != events.PrunedType {
			continue
		}
		var p events.PrunedPayload
		if err := r.DecodePayload(&p); err != nil {
			return nil, err
		}
		if p.Stream != events.StreamQueue {
			continue
		}
		for _, g := range p.Removed {
			l.pruned.Add(g[0], g[1])
		}
		l.pruned.Add(r.Seq+1, r.Seq+uint64(p.Tombstones))
		l.last = &p
	}
	return l, nil
}

// moved reports whether the retention aggregate has events this prune
// did not read: another prune recorded meanwhile.
func (l *retentionLog) moved(ctx context.Context, store *events.Store) (bool, error) {
	_, last, err := store.Load(ctx, events.StreamQueue, events.RetentionFilter)
	if err != nil && !errors.Is(err, events.ErrNotFound) {
		return false, err
	}
	return last != l.lastSeq, nil
}

// finish purges the events (and tombstones) of the tasks the last record
// names. Purging is idempotent. With count, a task purged before is
// skipped and it returns how many tasks still had events.
func (l *retentionLog) finish(ctx context.Context, stream jetstream.Stream, count bool) (int, error) {
	if l.last == nil {
		return 0, nil
	}
	n := 0
	for _, agg := range l.last.Aggregates {
		// Read from the log: untrusted until checked, since it becomes a
		// subject filter.
		queue, id, ok := strings.Cut(agg, "/")
		if !ok || trellis.ValidateQueueName(queue) != nil || trellis.ValidateTaskID("task_id", id) != nil {
			continue
		}
		filter := taskqueue.FilterIn(queue, id)
		if count {
			info, err := stream.Info(ctx, jetstream.WithSubjectFilter(filter))
			if err != nil {
				return n, err
			}
			if info.State.Msgs == 0 {
				continue
			}
		}
		if err := stream.Purge(ctx, jetstream.WithPurgeSubject(filter)); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
