package retention

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trellis/trellis/events"
)

// retentionLog is the retention aggregate as a prune reads it: its last
// record (the only one a crash may have left unfinished: prunes are
// serialized by the record's check; lastSeq is its sequence when the
// aggregate's last event is a record) and every sequence the records
// account for.
type retentionLog struct {
	lastSeq  uint64
	lastHash string
	last     *events.PrunedPayload
	pruned   events.SeqRanges
	// others are the sequences records account for on the other streams
	// (workflow runs: see runs.go), by stream.
	others map[string]*events.SeqRanges
	js     jetstream.JetStream
	// continued are the snapshots records name as continuing an
	// aggregate they cut (sequence -> hash).
	continued map[uint64]string
}

// readLog reads the retention aggregate.
func readLog(ctx context.Context, store *events.Store) (*retentionLog, error) {
	recs, last, err := store.Load(ctx, events.StreamQueue, events.RetentionFilter)
	if err != nil && !errors.Is(err, events.ErrNotFound) {
		return nil, err
	}
	l := &retentionLog{lastSeq: last, continued: map[uint64]string{}, others: map[string]*events.SeqRanges{}, js: store.JetStream()}
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
			for _, g := range p.Removed {
				l.otherPruned(p.Stream).Add(g[0], g[1])
			}
			l.last = &p
			continue
		}
		for _, g := range p.Removed {
			l.pruned.Add(g[0], g[1])
		}
		l.pruned.Add(r.Seq+1, r.Seq+uint64(p.Tombstones))
		for _, c := range p.Continued {
			l.continued[c.Seq] = c.Hash
		}
		l.last = &p
	}
	return l, nil
}

// otherPruned returns the sequences records account for on stream (not
// the queue's).
func (l *retentionLog) otherPruned(stream string) *events.SeqRanges {
	s := l.others[stream]
	if s == nil {
		s = &events.SeqRanges{}
		l.others[stream] = s
	}
	return s
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

// finish removes the events (and tombstones) the last record accounts
// for, by sequence, several at a time. Removing is idempotent: a sequence
// removed before is skipped. It returns how many it removed.
func (l *retentionLog) finish(ctx context.Context, stream jetstream.Stream) (int, error) {
	if l.last == nil {
		return 0, nil
	}
	if l.last.Stream != events.StreamQueue {
		return l.finishOther(ctx)
	}
	// The head of the stream up to the first sequence no record accounts
	// for goes in one purge (the common case: the oldest tasks are the
	// finished ones); deleting one message at a time is synced one at a
	// time.
	info, err := stream.Info(ctx)
	if err != nil {
		return 0, err
	}
	head := info.State.FirstSeq
	// The stream's last message stays (a tombstone, then: verify counts it
	// as pruned, the board drops its task): projections catch up to the
	// stream's last sequence, and a deleted one is never delivered to a
	// projection that had not read it yet (a new server's, a replay's).
	tail := info.State.LastSeq
	if rs := l.pruned.Ranges(); len(rs) > 0 && rs[0][0] <= head && rs[0][1] >= head {
		end := min(rs[0][1], l.lastSeq-1)
		if err := stream.Purge(ctx, jetstream.WithPurgeSequence(end+1)); err != nil {
			return 0, fmt.Errorf("purge the head up to #%d: %w", end, err)
		}
		head = end + 1
	}
	var seqs []uint64
	for _, r := range l.last.Removed {
		for s := max(r[0], head); s <= r[1] && s < l.lastSeq; s++ {
			seqs = append(seqs, s)
		}
	}
	for i := 1; i <= l.last.Tombstones; i++ {
		if s := l.lastSeq + uint64(i); s >= head {
			seqs = append(seqs, s)
		}
	}
	return deleteSeqs(ctx, stream, seqs, tail)
}

// deleteSeqs removes seqs from stream, several at a time, except tail
// (the stream's last sequence). A sequence removed before is skipped. It
// returns how many it removed.
func deleteSeqs(ctx context.Context, stream jetstream.Stream, seqs []uint64, tail uint64) (int, error) {
	const workers = 8
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		removed int
		first   error
	)
	next := make(chan uint64)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := range next {
				if s == tail {
					continue
				}
				err := stream.DeleteMsg(ctx, s)
				mu.Lock()
				switch {
				case err == nil:
					removed++
				case events.IsDeletedBefore(err):
				case first == nil:
					first = fmt.Errorf("remove #%d: %w", s, err)
				}
				mu.Unlock()
			}
		}()
	}
	for _, s := range seqs {
		mu.Lock()
		failed := first != nil
		mu.Unlock()
		if failed {
			break
		}
		next <- s
	}
	close(next)
	wg.Wait()
	return removed, first
}

// finishOther removes the sequences the last record, of a stream other
// than the queue, names on that stream (its tombstones among them: they
// are stored before the record), except the stream's last message, as
// finish does on the queue stream.
func (l *retentionLog) finishOther(ctx context.Context) (int, error) {
	stream, err := l.js.Stream(ctx, l.last.Stream)
	if err != nil {
		return 0, err
	}
	info, err := stream.Info(ctx)
	if err != nil {
		return 0, err
	}
	head, tail := info.State.FirstSeq, info.State.LastSeq
	if rs := l.otherPruned(l.last.Stream).Ranges(); len(rs) > 0 && rs[0][0] <= head && rs[0][1] >= head {
		if end := min(rs[0][1], tail-1); end >= head {
			if err := stream.Purge(ctx, jetstream.WithPurgeSequence(end+1)); err != nil {
				return 0, fmt.Errorf("purge the head of %s up to #%d: %w", l.last.Stream, end, err)
			}
			head = end + 1
		}
	}
	var seqs []uint64
	for _, r := range l.last.Removed {
		for s := max(r[0], head); s <= r[1] && s < tail; s++ {
			seqs = append(seqs, s)
		}
	}
	return deleteSeqs(ctx, stream, seqs, tail)
}
