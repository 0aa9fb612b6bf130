package retention

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/command"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/workflow"
)

// Workflow runs are pruned whole: a run that completed, failed or was
// cancelled before the cut is archived, tombstoned and removed from the
// workflow stream. Running, sleeping and waiting runs keep every event:
// a run's journal is bounded by the run itself (its steps, waits and
// children), not by time. The registrations of workflows
// (trellis.workflows.def.>) are never pruned.
//
// The prune record lives on the queue stream (the retention log) and the
// run's events on the workflow stream, so they cannot be one atomic
// batch: a batch of runs gets its tombstones first (one atomic batch on
// the workflow stream, each checked against the run's last event), then
// the record, which names the runs' events and the tombstones in
// Removed, then the removal. A prune stopped between the tombstones and
// the record leaves runs that fold to nothing (show: not found) with
// every event still in the log; the next prune archives and records them
// when it would have pruned the run as it was before its tombstone (the
// same cut, on the run's last event before it, and the same family
// rules): a tombstone a client forged on a young run, or on a run of an
// open family, does not get the run removed.

// runScan is what one walk of the workflow stream found.
type runScan struct {
	runs     map[string]*candidate
	state    map[string]*workflow.Run
	order    []string
	firstSeq uint64
	// tombstoned are the runs whose last event is a tombstone that no
	// record names (a prune stopped before its record, or forged), with
	// the run as it was before it and when its event before it was
	// stored.
	tombstoned map[string]bool
	before     map[string]*workflow.Run
	ended      map[string]time.Time
}

// scanRuns walks the workflow stream and folds every run. pruned are the
// sequences records account for on it (skipped: a kept last message).
func scanRuns(ctx context.Context, store *events.Store, pruned *events.SeqRanges) (*runScan, error) {
	info, err := store.StreamInfo(ctx, events.StreamWorkflows)
	if err != nil {
		return nil, fmt.Errorf("read the workflow stream: %w", err)
	}
	res := &runScan{runs: map[string]*candidate{}, state: map[string]*workflow.Run{}, tombstoned: map[string]bool{},
		before: map[string]*workflow.Run{}, ended: map[string]time.Time{}, firstSeq: info.State.FirstSeq}
	last := info.State.LastSeq
	if last == 0 {
		return res, nil
	}
	var prev *candidate
	var prevSeq uint64
	err = store.Scan(ctx, events.StreamWorkflows, events.ScanRange{To: last}, func(m events.Message) error {
		if prev != nil && m.Seq > prevSeq+1 {
			prev.holes = append(prev.holes, [2]uint64{prevSeq + 1, m.Seq - 1})
		}
		prev, prevSeq = nil, m.Seq
		if pruned.Covers(m.Seq, m.Seq) {
			return nil // a record names it: the stream's kept last message
		}
		id, ok := runOf(m.Subject)
		if !ok {
			return nil // a registration: never pruned
		}
		c := res.runs[id]
		if c == nil {
			c = &candidate{id: id}
			res.runs[id] = c
			res.order = append(res.order, id)
		}
		prev = c
		ended := c.stored // the run's event before this one
		c.msgs = append(c.msgs, m)
		c.lastSeq, c.stored, c.lastHash = m.Seq, m.Stored, events.Hash(m.Envelope)
		if m.Bad != nil {
			c.keep = "an event of it cannot be read: " + m.Bad.Error()
			return nil
		}
		if c.keep != "" {
			return nil
		}
		if m.Type == workflow.Pruned {
			pre := res.state[id]
			if pre == nil || !pre.Status.Terminal() {
				// Not a prune's: a prune tombstones finished runs only.
				c.keep = "a tombstone follows an open run"
				return nil
			}
			res.tombstoned[id], res.before[id], res.ended[id] = true, pre, ended
		} else {
			delete(res.tombstoned, id) // an event after the tombstone: the run goes on
		}
		r, err := workflow.FoldRun(res.state[id], m.Recorded)
		if err != nil {
			c.keep = "an event of it does not fold: " + err.Error()
			return nil
		}
		res.state[id] = r
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("scan the workflow stream: %w", err)
	}
	if prev != nil && prevSeq < last {
		prev.holes = append(prev.holes, [2]uint64{prevSeq + 1, last})
	}
	for _, c := range res.runs {
		if c.keep == "" {
			c.findTimers(pruned) // no timers on this stream: every hole must be pruned
		}
	}
	return res, nil
}

// choose returns the runs a prune at cut removes, in stream order, and
// counts the others by why they stay.
func (s *runScan) choose(cut time.Time) ([]*candidate, map[string]int) {
	kept := map[string]int{}
	open := func(id string) bool {
		r := s.state[id]
		return r != nil && !r.Status.Terminal()
	}
	var out []*candidate
	for _, id := range s.order {
		c, r, stored := s.runs[id], s.state[id], s.runs[id].stored
		if s.tombstoned[id] {
			// Tombstoned by a prune stopped before its record (or
			// forged): decided as the run was before its tombstone.
			r, stored = s.before[id], s.ended[id]
		}
		switch {
		case c.keep != "":
			kept[c.keep]++
		case r == nil:
			kept["it does not start with started"]++
		case !r.Status.Terminal():
			kept["open"]++
		case !stored.Before(cut):
			kept["finished after the cut"]++
		case r.Parent != "" && open(r.Parent):
			kept["its parent run is open"]++ // the parent still reads its end
		case openChild(r, open):
			kept["a child run of it is open"]++ // the child reports its end to it
		default:
			out = append(out, c)
		}
	}
	return out, kept
}

// openChild reports whether a child run r started is still open.
func openChild(r *workflow.Run, open func(string) bool) bool {
	for _, e := range r.Journal {
		for _, id := range e.Children {
			if open(id) {
				return true
			}
		}
	}
	return false
}

// awaited returns the queue tasks that open runs added (workflow.Task):
// a run reads their ends when it resumes, so they stay while it is open.
func (s *runScan) awaited() map[string]bool {
	out := map[string]bool{}
	for _, r := range s.state {
		if r == nil || r.Status.Terminal() {
			continue
		}
		for _, e := range r.Journal {
			for _, id := range e.Tasks {
				out[id] = true
			}
		}
	}
	return out
}

// pruneRuns prunes the finished workflow runs of scan (taken at the
// prune's start), batch by batch.
func pruneRuns(ctx context.Context, store *events.Store, log *retentionLog, scan *runScan, res *Result, opts Options) error {
	chosen, kept := scan.choose(res.Cut)
	res.RunsKept = kept
	for len(chosen) > 0 {
		n := min(len(chosen), opts.BatchTasks)
		batch := chosen[:n]
		chosen = chosen[n:]
		for attempt := 1; len(batch) > 0; attempt++ {
			tried := len(batch)
			ar, err := pruneRunBatch(ctx, store, log, scan, batch, res.Cut, opts)
			if err == nil {
				res.Archives = append(res.Archives, ar.ArchiveResult)
				res.Runs += ar.Runs
				res.RunEvents += ar.Events
				res.Sequences += ar.sequences
				break
			}
			if !errors.Is(err, events.ErrWrongLastSequence) || attempt >= 3 {
				return err
			}
			// A run moved since the scan (a retry of a failed run, a
			// signal refused...): decided again without it.
			if batch, err = unchangedRuns(ctx, store, batch); err != nil {
				return command.StoreError("prune", err)
			}
			res.RunsKept["changed during the prune"] += tried - len(batch)
		}
	}
	return nil
}

// pruneRunBatch archives, tombstones, records and removes one batch of
// runs.
func pruneRunBatch(ctx context.Context, store *events.Store, log *retentionLog, scan *runScan, batch []*candidate, cut time.Time, opts Options) (*batchResult, error) {
	at := time.Now()
	recordID := events.NewID(at)
	name := "prune-" + recordID + ".jsonl"
	a, err := writeArchiveOf(opts.Archive, name, events.StreamWorkflows, scan.firstSeq, batch)
	if err != nil {
		return nil, trellis.FieldError("archive", "%v (nothing was pruned from this batch)", err)
	}
	if opts.AfterArchive != nil {
		opts.AfterArchive(a.path)
	}
	// Tombstones, each checked against the run's last event (a run
	// tombstoned already, by a prune stopped before its record, keeps its
	// tombstone).
	var ps []events.Pending
	removed := a.removed
	for _, c := range batch {
		if scan.tombstoned[c.id] {
			continue
		}
		tomb, err := events.NewEnvelope(at, workflow.Pruned, c.id, opts.Actor, 1, workflow.PrunedPayload{Archive: name})
		if err != nil {
			return nil, err
		}
		tomb.Prev = c.lastHash
		ps = append(ps, events.Pending{Subject: workflow.RunSubject(c.id, workflow.Pruned), Envelope: tomb,
			Expect: events.Expect{Filter: workflow.RunFilter(c.id), LastSeq: c.lastSeq}})
	}
	if len(ps) > 0 {
		acks, err := store.AppendAtomic(ctx, ps)
		if err != nil {
			if errors.Is(err, events.ErrWrongLastSequence) {
				_ = os.Remove(a.path) // no tombstone, no record: the archive prunes nothing
				return nil, err
			}
			return nil, command.StoreError("prune: tombstone the finished runs", err)
		}
		for _, ack := range acks {
			removed.Add(ack.Seq, ack.Seq)
		}
	}
	if opts.AfterRunTombstones != nil {
		opts.AfterRunTombstones()
	}
	p := events.PrunedPayload{Stream: events.StreamWorkflows, Cut: cut.Format(time.RFC3339Nano), Archive: name, Digest: a.digest,
		Events: a.events, Removed: removed.Ranges(), Aggregates: []string{}}
	for _, c := range batch {
		p.Aggregates = append(p.Aggregates, "run/"+c.id)
	}
	// Another prune recording meanwhile leaves the runs tombstoned, every
	// event in the log: the next prune records them.
	recSeq, seqs, err := recordOther(ctx, store, log, opts, at, recordID, a.path, p, "runs")
	if err != nil {
		return nil, err
	}
	return &batchResult{ArchiveResult: ArchiveResult{File: a.path, Digest: a.digest, Runs: len(batch), Events: a.events, Bytes: a.bytes,
		Record: recordID, RecordSeq: recSeq}, sequences: seqs}, nil
}

// unchangedRuns returns the runs of batch whose last event is still the
// one the scan saw.
func unchangedRuns(ctx context.Context, store *events.Store, batch []*candidate) ([]*candidate, error) {
	var out []*candidate
	for _, c := range batch {
		_, last, err := store.Load(ctx, events.StreamWorkflows, workflow.RunFilter(c.id))
		if err != nil && !errors.Is(err, events.ErrNotFound) {
			return nil, err
		}
		if last == c.lastSeq {
			out = append(out, c)
		}
	}
	return out, nil
}

// runOf returns the run id of a run's subject
// (trellis.workflows.run.<id>.<type>).
func runOf(subject string) (string, bool) {
	const prefix = "trellis.workflows.run."
	if len(subject) <= len(prefix) || subject[:len(prefix)] != prefix {
		return "", false
	}
	rest := subject[len(prefix):]
	for i := 0; i < len(rest); i++ {
		if rest[i] == '.' {
			return rest[:i], i > 0
		}
	}
	return "", false
}
