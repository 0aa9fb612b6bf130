package retention

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/taskqueue"
)

// retentionLog is the retention aggregate as a prune reads it: its last
// record (the only one a crash may have left unfinished: prunes are
// serialized by the record's check; recSeq is its sequence, lastSeq the
// aggregate's last event's) and every sequence the records account for.
//
// A prune acts only on records it trusts (see trusts): another stream's,
// or one without a valid MAC when the prune holds the audit key, was not
// made by a prune (a client with NATS credentials can append to the
// retention subject); it is counted in ignored and otherwise skipped.
type retentionLog struct {
	lastSeq  uint64
	lastHash string
	last     *events.PrunedPayload
	recSeq   uint64
	pruned   events.SeqRanges
	// others are the sequences records account for on the other streams
	// (workflow runs: see runs.go), by stream.
	others map[string]*events.SeqRanges
	js     jetstream.JetStream
	store  *events.Store
	key    []byte
	// continued are the snapshots records name as continuing an
	// aggregate they cut (sequence -> hash).
	continued map[uint64]string
	// ignored counts the records this prune does not act on.
	ignored int
	// pace spaces the messages removed one at a time or in a purge of
	// tombstones (Options.RemoveRate; nil: unpaced).
	pace *pacer
}

// trusts reports whether a prune acts on record p: a record of a stream
// prunes remove from (events.PrunedStream), carrying a valid MAC when the
// prune has the audit key.
func (l *retentionLog) trusts(p events.PrunedPayload) bool {
	return events.PrunedStream(p.Stream) && (len(l.key) == 0 || p.Signed(l.key))
}

// readLog reads the retention aggregate, trusting records under key (see
// retentionLog).
func readLog(ctx context.Context, store *events.Store, key []byte) (*retentionLog, error) {
	recs, last, err := store.Load(ctx, events.StreamQueue, events.RetentionFilter)
	if err != nil && !errors.Is(err, events.ErrNotFound) {
		return nil, err
	}
	l := &retentionLog{lastSeq: last, continued: map[uint64]string{}, others: map[string]*events.SeqRanges{}, js: store.JetStream(),
		store: store, key: key}
	for _, r := range recs {
		l.lastHash = events.Hash(r.Envelope)
		if r.Type != events.PrunedType {
			continue
		}
		var p events.PrunedPayload
		if err := r.DecodePayload(&p); err != nil || !l.trusts(p) {
			l.ignored++
			continue
		}
		if p.Stream != events.StreamQueue {
			for _, g := range p.Removed {
				l.otherPruned(p.Stream).Add(g[0], g[1])
			}
			l.last, l.recSeq = &p, r.Seq
			continue
		}
		// A prune removes what was stored before its record, and one
		// tombstone per aggregate it names.
		var removed [][2]uint64
		for _, g := range p.Removed {
			if g[1] = min(g[1], r.Seq-1); g[0] <= g[1] {
				removed = append(removed, g)
			}
		}
		p.Removed, p.Tombstones = removed, min(max(p.Tombstones, 0), len(p.Aggregates))
		for _, g := range p.Removed {
			l.pruned.Add(g[0], g[1])
		}
		l.pruned.Add(r.Seq+1, r.Seq+uint64(p.Tombstones))
		for _, c := range p.Continued {
			l.continued[c.Seq] = c.Hash
		}
		l.last, l.recSeq = &p, r.Seq
	}
	return l, nil
}

// recorded notes the record p this prune appended at seq (hash: its
// envelope's hash) as the log's last.
func (l *retentionLog) recorded(seq uint64, hash string, p *events.PrunedPayload) {
	l.lastSeq, l.recSeq, l.lastHash, l.last = seq, seq, hash, p
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
// for. Removing is idempotent: a sequence removed before is skipped. It
// returns how many it removed.
//
// The head of the stream up to the first sequence no record accounts for
// goes in one purge; so do each queue's tombstones (see purgeSubjects);
// the rest go one sequence at a time, each a synced write.
func (l *retentionLog) finish(ctx context.Context, stream jetstream.Stream) (int, error) {
	if l.last == nil {
		return 0, nil
	}
	if l.last.Stream != events.StreamQueue {
		return l.finishOther(ctx)
	}
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
		end := min(rs[0][1], l.recSeq-1)
		if err := stream.Purge(ctx, jetstream.WithPurgeSequence(end+1)); err != nil {
			return 0, fmt.Errorf("purge the head up to #%d: %w", end, err)
		}
		head = end + 1
	}
	var seqs []uint64
	for _, r := range l.last.Removed {
		for s := max(r[0], head); s <= r[1] && s < l.recSeq; s++ {
			seqs = append(seqs, s)
		}
	}
	var filters []string
	for i := 1; i <= l.last.Tombstones; i++ {
		if s := l.recSeq + uint64(i); s >= head {
			seqs = append(seqs, s)
		}
		if q, _, ok := strings.Cut(l.last.Aggregates[i-1], "/"); ok && trellis.ValidateQueueName(q) == nil {
			filters = append(filters, taskqueue.Subject(q, "*", taskqueue.Pruned))
		}
	}
	end := min(l.recSeq+uint64(l.last.Tombstones)+1, tail) // before end: never the tail
	purged, gone, err := l.purgeSubjects(ctx, stream, head, end, filters)
	if err != nil {
		return purged, err
	}
	rest := seqs[:0]
	for _, s := range seqs {
		if !gone[s] {
			rest = append(rest, s)
		}
	}
	removed, err := deleteSeqs(ctx, stream, rest, tail, l.pace)
	return purged + removed, err
}

// purgeSubjects removes, for each distinct filter (a queue's tombstones,
// trellis.queue.Q.*.pruned), the messages matching it stored from head
// up to the first one that no record accounts for, and before end, in
// one subject-filtered purge: one synced write where deleting them is
// one each. It reads the matches first (a purge takes no lower bound, so
// it runs only as far as every match before its bound is accounted for:
// a tombstone a client appended with NATS credentials stays). It returns
// how many it removed and their sequences.
//
// Only tombstones go this way. nats-server's filtered purge loads every
// block that holds a match of its filter, however far past the bound,
// under the store's lock: a queue's tombstones are few and recent (a
// prune removes them), where a queue's events of one type
// (trellis.queue.Q.*.completed) span the whole stream, and purging by them
// held the pools' appends for that long at every batch (measured: worker
// pools beside such a prune fell to 0.13x of their rate alone).
func (l *retentionLog) purgeSubjects(ctx context.Context, stream jetstream.Stream, head, end uint64, filters []string) (int, map[uint64]bool, error) {
	gone := map[uint64]bool{}
	if head >= end {
		return 0, gone, nil
	}
	seen := map[string]bool{}
	for _, f := range filters {
		if seen[f] {
			continue
		}
		seen[f] = true
		var covered []uint64
		bound := end
		err := l.store.Scan(ctx, events.StreamQueue, events.ScanRange{Filter: f, From: head, To: end - 1}, func(m events.Message) error {
			if !l.pruned.Covers(m.Seq, m.Seq) {
				bound = m.Seq
				return events.ErrStopScan
			}
			covered = append(covered, m.Seq)
			return nil
		})
		if err != nil {
			return len(gone), gone, fmt.Errorf("read %s: %w", f, err)
		}
		if len(covered) == 0 {
			continue
		}
		if err := l.pace.waitN(ctx, len(covered)); err != nil {
			return len(gone), gone, err
		}
		if err := stream.Purge(ctx, jetstream.WithPurgeSubject(f), jetstream.WithPurgeSequence(bound)); err != nil {
			return len(gone), gone, fmt.Errorf("purge %s before #%d: %w", f, bound, err)
		}
		for _, s := range covered {
			gone[s] = true
		}
	}
	return len(gone), gone, nil
}

// deleteSeqs removes seqs from stream, several at a time, except tail
// (the stream's last sequence), no faster than pace allows. A sequence
// removed before is skipped and gives its slot of the pace back. It
// returns how many it removed.
func deleteSeqs(ctx context.Context, stream jetstream.Stream, seqs []uint64, tail uint64, pace *pacer) (int, error) {
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
				// Each removal waits for a slot of the pace; one that
				// found its sequence removed before gives it back.
				err := pace.wait(ctx)
				if err == nil {
					if err = stream.DeleteMsg(ctx, s); events.IsDeletedBefore(err) {
						pace.giveBack()
					}
				}
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
// finish does on the queue stream. It removes only what the record's own
// prune could have: events of the aggregates it names, stored before the
// record; it leaves any other message a range names.
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
	var stored time.Time
	err = l.store.Scan(ctx, events.StreamQueue, events.ScanRange{From: l.recSeq, To: l.recSeq}, func(m events.Message) error {
		stored = m.Stored
		return nil
	})
	if err != nil || stored.IsZero() {
		return 0, fmt.Errorf("read the prune record #%d: %w", l.recSeq, errors.Join(err, events.ErrNotFound))
	}
	named := map[string]bool{}
	for _, a := range l.last.Aggregates {
		named[a] = true
	}
	var seqs []uint64
	whole := true // every message from head to the end of the first range is the record's
	for i, r := range l.last.Removed {
		from, to := max(r[0], head), min(r[1], tail-1)
		if from > to {
			continue
		}
		err := l.store.Scan(ctx, l.last.Stream, events.ScanRange{From: from, To: to}, func(m events.Message) error {
			if !named[aggregateOf(l.last.Stream, m.Subject)] || m.Stored.After(stored.Add(storedSkew)) {
				whole = whole && i > 0
				return nil // not the record's prune's: stays
			}
			seqs = append(seqs, m.Seq)
			return nil
		})
		if err != nil {
			return 0, fmt.Errorf("read the pruned sequences of %s: %w", l.last.Stream, err)
		}
	}
	// The head of the stream up to the end of the first range goes in one
	// purge when every message there is the record's.
	if rs := l.last.Removed; whole && len(seqs) > 0 && len(rs) > 0 && rs[0][0] <= head {
		end := min(rs[0][1], tail-1)
		if err := stream.Purge(ctx, jetstream.WithPurgeSequence(end+1)); err != nil {
			return 0, fmt.Errorf("purge the head of %s up to #%d: %w", l.last.Stream, end, err)
		}
		n := 0
		for n < len(seqs) && seqs[n] <= end {
			n++
		}
		removed, err := deleteSeqs(ctx, stream, seqs[n:], tail, l.pace)
		return removed + n, err
	}
	return deleteSeqs(ctx, stream, seqs, tail, l.pace)
}

// storedSkew bounds how far the clocks of the servers leading the queue
// stream and another stream may differ: an event of a record's prune is
// stored before the record, by another stream's leader.
const storedSkew = time.Minute

// aggregateOf returns the aggregate a record of stream names for an
// event's subject ("run/<id>", "agent-task/<name>"; "" for none).
func aggregateOf(stream, subject string) string {
	switch stream {
	case events.StreamWorkflows:
		if id, ok := runOf(subject); ok {
			return "run/" + id
		}
	case events.StreamTasks:
		if t := strings.Split(subject, "."); len(t) == 4 && t[1] == "tasks" {
			return "agent-task/" + t[2]
		}
	}
	return ""
}
