package audit

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/taskqueue"
)

// Snapshots (taskqueue.Snapshot) carry an aggregate's folded state: a load
// starts from the last one, and a prune may cut the events before one. A
// snapshot is chained like any event, so a client holding only NATS
// credentials could append one, chained right, carrying any state (a gate
// with its slots free). Verify therefore folds the events each snapshot
// replaces (from the aggregate's previous snapshot, or its first event)
// and compares the state; a snapshot whose replaced events a prune cut is
// trusted only when a trusted prune record names it (Continued), and the
// events after it are folded from it.

// snapshotCheck checks the snapshots of one stream as the walk meets them.
type snapshotCheck struct {
	store     *events.Store
	stream    string
	last      map[string]uint64 // aggregate -> sequence of its last snapshot met
	continued map[uint64]events.Continuation
	checked   uint64
}

func newSnapshotCheck(store *events.Store, stream string, continued map[uint64]events.Continuation) *snapshotCheck {
	return &snapshotCheck{store: store, stream: stream, last: map[string]uint64{}, continued: continued}
}

// check checks m when it is the snapshot of a gate, a task, a schedule, a
// queue's controls or a unique key.
func (s *snapshotCheck) check(ctx context.Context, m events.Message) ([]Finding, error) {
	isTask := taskqueue.IsTaskSubject(m.Subject)
	isSchedule := taskqueue.IsScheduleSubject(m.Subject)
	isControls := !isTask && taskqueue.IsControlSubject(m.Subject)
	isUnique := taskqueue.IsUniqueSubject(m.Subject)
	if m.Bad != nil || m.Type != taskqueue.Snapshot || !(isTask || isSchedule || isControls || isUnique || taskqueue.IsGateSubject(m.Subject)) {
		return nil, nil
	}
	ref, ok := aggregateOf(m.Subject)
	if !ok {
		return nil, nil
	}
	var out []Finding
	altered := func(detail string, args ...any) {
		out = append(out, Finding{Kind: FindingAltered, Stream: m.Stream, Seq: m.Seq, Subject: m.Subject, Aggregate: ref.name,
			EventID: m.ID, Detail: fmt.Sprintf(detail, args...)})
	}
	from := s.last[ref.key]
	s.last[ref.key] = m.Seq
	s.checked++
	var p taskqueue.SnapshotPayload
	err := m.DecodePayload(&p)
	switch {
	case err != nil:
	case isTask:
		err = boolErr(p.Task != nil && p.Task.TaskID == m.AggregateID)
	case isSchedule:
		err = boolErr(p.Schedule != nil && p.Schedule.Name == m.AggregateID)
	case isControls:
		err = boolErr(p.Controls != nil && p.Controls.Queue == m.AggregateID)
	case isUnique:
		err = boolErr(p.Unique != nil)
	default:
		err = boolErr(p.Gate != nil)
	}
	if err != nil {
		altered("a snapshot that carries no state of its aggregate")
		return out, nil
	}
	if p.Replaces != m.Prev {
		altered("the snapshot says it replaces the event hashing to %s, but it chains to %s", short(p.Replaces), short(m.Prev))
	}
	if c, ok := s.continued[m.Seq]; ok && c.Hash == events.Hash(m.Envelope) {
		return out, nil // a prune cut what it replaces; its record names it
	}
	var recs []events.Recorded
	read := ref.read
	if isSchedule {
		read = ref.key // a schedule's earlier generations may be on other queues
	}
	err = s.store.Scan(ctx, s.stream, events.ScanRange{Filter: read, From: max(from, 1), To: m.Seq - 1}, func(x events.Message) error {
		if x.Bad == nil {
			recs = append(recs, x.Recorded)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read back %s: %w", read, err)
	}
	if len(recs) > 0 && recs[0].Prev != "" && recs[0].Type != taskqueue.Snapshot {
		return out, nil // its history is gone: the chain check reports that
	}
	var same bool
	switch {
	case isSchedule:
		want, err := taskqueue.FoldSchedule(recs)
		if err != nil {
			altered("the events the snapshot replaces do not fold: %v", err)
			return out, nil
		}
		same = taskqueue.SameSchedule(want, p.Schedule)
	case isControls:
		want, err := taskqueue.FoldControls(recs)
		if err != nil {
			altered("the events the snapshot replaces do not fold: %v", err)
			return out, nil
		}
		same = taskqueue.SameControls(want, p.Controls)
	case isUnique:
		want, err := taskqueue.FoldUnique(recs)
		if err != nil {
			altered("the events the snapshot replaces do not fold: %v", err)
			return out, nil
		}
		same = taskqueue.SameUnique(want, p.Unique)
	case isTask:
		want, err := taskqueue.Fold(recs)
		if err != nil {
			altered("the events the snapshot replaces do not fold: %v", err)
			return out, nil
		}
		same = taskqueue.SameTask(want, p.Task)
	default:
		want, err := taskqueue.FoldGate(recs)
		if err != nil {
			altered("the events the snapshot replaces do not fold: %v", err)
			return out, nil
		}
		same = taskqueue.SameGate(want, p.Gate)
	}
	if !same {
		first := uint64(0)
		if len(recs) > 0 {
			first = recs[0].Seq
		}
		altered("the snapshot's state is not the fold of the %d event(s) it replaces (from #%d): it was forged or altered", len(recs), first)
	}
	return out, nil
}

// readContinued returns, per stream, the snapshots trusted prune records
// name as continuing an aggregate they cut (by sequence), under the same
// trust as readPruned.
func readContinued(ctx context.Context, store *events.Store, key []byte) (map[string]map[uint64]events.Continuation, error) {
	out := map[string]map[uint64]events.Continuation{}
	recs, _, err := store.Load(ctx, events.StreamQueue, events.RetentionFilter)
	if errors.Is(err, events.ErrNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	for _, r := range recs {
		var p events.PrunedPayload
		if r.Type != events.PrunedType || r.DecodePayload(&p) != nil || !events.PrunedStream(p.Stream) || r.Stream != events.StreamQueue {
			continue
		}
		if len(key) > 0 && !p.Signed(key) {
			continue
		}
		for _, c := range p.Continued {
			if p.Stream == r.Stream && c.Seq >= r.Seq {
				continue // the snapshot a prune cuts at is stored before its record
			}
			if out[p.Stream] == nil {
				out[p.Stream] = map[uint64]events.Continuation{}
			}
			out[p.Stream][c.Seq] = c
		}
	}
	return out, nil
}

// continues reports whether it, the first event the check meets of its
// aggregate, is a snapshot a trusted prune record names: chained to the
// archive's last event of the aggregate.
func (c *chainCheck) continues(it chainItem) bool {
	cont, ok := c.continued[it.Seq]
	return ok && it.Line == 0 && cont.Hash == it.Hash && cont.Prev == it.Prev && it.Prev != ""
}

// errNoState is a snapshot's missing or foreign state.
var errNoState = errors.New("no state of its aggregate")

// boolErr is errNoState unless ok.
func boolErr(ok bool) error {
	if ok {
		return nil
	}
	return errNoState
}
