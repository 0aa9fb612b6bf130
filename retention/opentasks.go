package retention

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/command"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/taskqueue"
)

// Open tasks (queued, claimed, waiting, scheduled) are cut at a snapshot:
// a prune appends a snapshot on the task (checked against the task's last
// event: a task that moves meanwhile is left for the next prune), then
// archives and removes the task's events after its last dispatch and
// before the snapshot (a claim, an agent's heartbeats, dependants linked,
// prerequisites done). The dispatch itself stays: the queue's claim
// consumer delivers it, and a claim holds it (a worker pool's lease, an
// agent's pending dispatch). The prune record names the snapshot
// (events.Continuation): audit verify accepts that its prev is the
// archive's last event of the task, not the dispatch before it in the log.

// minOpenCut is the fewest events worth cutting from an open task (the
// snapshot adds one).
const minOpenCut = 4

// openCut is an open task a prune cuts.
type openCut struct {
	c *candidate
	// cut are the task's events after its last dispatch: the snapshot
	// replaces them.
	cut  []events.Message
	snap events.Envelope
	seq  uint64 // the snapshot's sequence, once appended
}

// chooseOpen returns the open tasks a prune at cut snapshots and cuts.
func chooseOpen(scan *scanResult, cut time.Time, log *retentionLog) []*openCut {
	var out []*openCut
	for _, id := range scan.order {
		c := scan.tasks[id]
		if c.task == nil || taskqueue.IsFinished(c.task.Status) || c.keep != "" {
			continue
		}
		var keepTo uint64 // the last dispatch, or event the server published from a timer
		for _, m := range c.msgs {
			if taskqueue.IsDispatch(m.Type) || m.Scheduler != "" {
				keepTo = m.Seq
			}
		}
		if c.task.Lease != nil {
			keepTo = max(keepTo, c.task.Lease.DispatchSeq)
		}
		oc := &openCut{c: c}
		for _, m := range c.msgs {
			if m.Seq > keepTo {
				oc.cut = append(oc.cut, m)
			}
		}
		// A task an agent keeps heartbeating has a last event after any
		// cut: it is cut when enough of its events after the dispatch
		// were stored before the cut (the snapshot replaces them all).
		old := 0
		for _, m := range oc.cut {
			if m.Stored.Before(cut) {
				old++
			}
		}
		if old < minOpenCut {
			continue
		}
		explained := true
		for _, h := range c.holes {
			if h[0] > oc.cut[0].Seq && !log.pruned.Covers(h[0], h[1]) {
				explained = false // a fired timer after an event it would cut
			}
		}
		if explained && snapshotsMatch(c.msgs, log.continued) {
			out = append(out, oc)
		}
	}
	return out
}

// snapshotsMatch reports whether every snapshot among a task's events
// carries the fold of the events before it, or continues the task where a
// record says a prune cut it: a snapshot appended by anyone else is no
// state to cut at (verify reports it).
func snapshotsMatch(msgs []events.Message, continued map[uint64]string) bool {
	var t *trellis.Task
	for i, m := range msgs {
		if m.Type == taskqueue.Snapshot {
			var p taskqueue.SnapshotPayload
			if m.DecodePayload(&p) != nil || p.Task == nil {
				return false
			}
			chained := i > 0 && m.Prev == events.Hash(msgs[i-1].Envelope)
			switch {
			case chained && !taskqueue.SameTask(t, p.Task):
				return false
			case !chained && continued[m.Seq] != events.Hash(m.Envelope):
				return false
			}
		}
		next, err := taskqueue.Apply(t, m.Recorded)
		if err != nil {
			return false
		}
		t = next
	}
	return true
}

// pruneOpen cuts the chosen open tasks, batch by batch.
func pruneOpen(ctx context.Context, store *events.Store, stream jetstream.Stream, log *retentionLog, firstSeq uint64, open []*openCut, res *Result, opts Options) error {
	for len(open) > 0 {
		n := min(len(open), opts.BatchTasks)
		batch := open[:n]
		open = open[n:]
		ar, moved, err := pruneOpenBatch(ctx, store, stream, log, firstSeq, batch, res.Cut, opts)
		res.Kept["changed during the prune"] += moved
		if err != nil {
			return err
		}
		if ar != nil {
			res.Archives = append(res.Archives, ar.ArchiveResult)
			res.OpenTasks += ar.OpenTasks
			res.OpenEvents += ar.Events
			res.Sequences += ar.sequences
		}
	}
	return nil
}

// pruneOpenBatch snapshots the batch's tasks, archives the events the
// snapshots replace, appends the record naming the snapshots and removes
// the events. It returns how many tasks moved before their snapshot.
func pruneOpenBatch(ctx context.Context, store *events.Store, stream jetstream.Stream, log *retentionLog, firstSeq uint64, batch []*openCut, cut time.Time, opts Options) (*batchResult, int, error) {
	at := time.Now()
	ps := make([]events.Pending, len(batch))
	for i, oc := range batch {
		c := oc.c
		env, err := events.NewEnvelope(at, taskqueue.Snapshot, c.id, opts.Actor, taskqueue.Schema,
			taskqueue.SnapshotPayload{Replaces: c.lastHash, ReplacesSeq: c.lastSeq, Events: len(oc.cut), Task: c.task})
		if err != nil {
			return nil, 0, err
		}
		env.Prev = c.lastHash
		oc.snap = env
		ps[i] = events.Pending{Subject: taskqueue.TaskSnapshotSubject(c.queue, c.id), Envelope: env,
			Expect: events.Expect{Filter: taskqueue.FilterIn(c.queue, c.id), LastSeq: c.lastSeq}}
	}
	if opts.BeforeOpenSnapshots != nil {
		opts.BeforeOpenSnapshots()
	}
	var done []*openCut
	moved := 0
	for i, r := range store.AppendAll(ctx, ps) {
		if errors.Is(r.Err, events.ErrWrongLastSequence) {
			// It changed since the scan: an agent heartbeating it, say.
			// Caught up with what followed, it is snapshotted again.
			r.Seq, r.Err = snapshotMoved(ctx, store, batch[i], at, opts.Actor)
		}
		switch {
		case errors.Is(r.Err, events.ErrWrongLastSequence) || errors.Is(r.Err, errMovedOn):
			moved++ // the next prune takes it
		case r.Err != nil:
			return nil, moved, command.StoreError("prune: snapshot an open task", r.Err)
		default:
			batch[i].seq = r.Seq
			done = append(done, batch[i])
		}
	}
	if len(done) == 0 {
		return nil, moved, nil
	}
	recordID := events.NewID(at)
	name := "prune-" + recordID + ".jsonl"
	cands := make([]*candidate, len(done))
	for i, oc := range done {
		cands[i] = &candidate{id: oc.c.id, queue: oc.c.queue, msgs: oc.cut}
	}
	a, err := writeArchive(opts.Archive, name, firstSeq, cands)
	if err != nil {
		return nil, moved, trellis.FieldError("archive", "%v (the open tasks are snapshotted, nothing was pruned from this batch)", err)
	}
	if opts.AfterArchive != nil {
		opts.AfterArchive(a.path)
	}
	p := events.PrunedPayload{Stream: events.StreamQueue, Cut: cut.Format(time.RFC3339Nano), Archive: name, Digest: a.digest,
		Events: a.events, Removed: a.removed.Ranges(), Aggregates: []string{}}
	for _, oc := range done {
		p.Continued = append(p.Continued, events.Continuation{Aggregate: taskqueue.Filter(oc.c.id), Seq: oc.seq,
			Hash: events.Hash(oc.snap), Prev: oc.snap.Prev})
	}
	p = p.Sign(opts.Key)
	rec, err := events.NewEnvelope(at, events.PrunedType, events.RetentionAggregate, opts.Actor, events.PrunedSchema, p)
	if err != nil {
		return nil, moved, err
	}
	rec.ID, rec.Prev = recordID, log.lastHash
	ack, err := store.Append(ctx, events.RetentionSubjectPrefix+events.PrunedType, rec, events.Expect{Filter: events.RetentionFilter, LastSeq: log.lastSeq}, "")
	if err != nil {
		if errors.Is(err, events.ErrWrongLastSequence) {
			_ = os.Remove(a.path) // refused: no record, the archive prunes nothing
			return nil, moved, trellis.Errorf(trellis.CodeConflict, "another prune ran while this one did (the retention log moved on): run it again")
		}
		// Any other error (a timeout, a cancelled prune) leaves the batch
		// in doubt: its record may be stored, naming this archive, so the
		// archive stays (unnamed, it prunes nothing).
		return nil, moved, command.StoreError("prune: append the prune record", err)
	}
	if opts.AfterRecord != nil {
		opts.AfterRecord()
	}
	log.recorded(ack.Seq, events.Hash(rec), &p)
	for _, r := range p.Removed {
		log.pruned.Add(r[0], r[1])
	}
	for _, c := range p.Continued {
		log.continued[c.Seq] = c.Hash
	}
	if _, err := log.finish(ctx, stream); err != nil {
		return nil, moved, command.StoreError("prune: remove the cut events of open tasks (the record is appended: the next prune finishes it)", err)
	}
	seqs := 0
	for _, r := range p.Removed {
		seqs += int(r[1] - r[0] + 1)
	}
	return &batchResult{ArchiveResult: ArchiveResult{File: a.path, Digest: a.digest, OpenTasks: len(done), Events: a.events, Bytes: a.bytes,
		Record: recordID, RecordSeq: ack.Seq}, sequences: seqs}, moved, nil
}

// errMovedOn reports an open task that moved on in a way a prune does not
// follow (a new dispatch, a timer, an end): the next prune decides again.
var errMovedOn = errors.New("the task moved on since the scan")

// snapshotRetries bounds how often a prune catches a moving task up and
// appends its snapshot again.
const snapshotRetries = 3

// snapshotMoved catches an open task whose snapshot failed its check up
// with the events stored since the scan, when they only extend its lease
// (an agent heartbeating a long task more often than the retention age;
// a heartbeat arms no timer), and appends its snapshot again,
// checked against its new last event; it returns the snapshot's sequence.
// The cut then also takes the events caught up: the snapshot replaces
// every event after the dispatch.
func snapshotMoved(ctx context.Context, store *events.Store, oc *openCut, at time.Time, actor string) (uint64, error) {
	c := oc.c
	for attempt := 0; attempt < snapshotRetries; attempt++ {
		var fresh []events.Message
		err := store.Scan(ctx, events.StreamQueue, events.ScanRange{Filter: taskqueue.FilterIn(c.queue, c.id), From: c.lastSeq + 1}, func(m events.Message) error {
			fresh = append(fresh, m)
			return nil
		})
		if err != nil {
			return 0, err
		}
		for _, m := range fresh {
			switch {
			case m.Bad != nil || m.Scheduler != "":
				return 0, errMovedOn
			case m.Type != taskqueue.LeaseExtended || m.BatchID != "":
				return 0, errMovedOn
			}
			next, err := taskqueue.Apply(c.task, m.Recorded)
			if err != nil || taskqueue.IsFinished(next.Status) {
				return 0, errMovedOn
			}
			c.task = next
			c.msgs = append(c.msgs, m)
			oc.cut = append(oc.cut, m)
			c.lastSeq, c.lastHash, c.stored = m.Seq, events.Hash(m.Envelope), m.Stored
		}
		env, err := events.NewEnvelope(at, taskqueue.Snapshot, c.id, actor, taskqueue.Schema,
			taskqueue.SnapshotPayload{Replaces: c.lastHash, ReplacesSeq: c.lastSeq, Events: len(oc.cut), Task: c.task})
		if err != nil {
			return 0, err
		}
		env.Prev = c.lastHash
		ack, err := store.Append(ctx, taskqueue.TaskSnapshotSubject(c.queue, c.id), env,
			events.Expect{Filter: taskqueue.FilterIn(c.queue, c.id), LastSeq: c.lastSeq}, "")
		if errors.Is(err, events.ErrWrongLastSequence) {
			continue
		}
		if err != nil {
			return 0, err
		}
		oc.snap = env
		return ack.Seq, nil
	}
	return 0, events.ErrWrongLastSequence
}
