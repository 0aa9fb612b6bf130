package retention

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/command"
	"github.com/trellis/trellis/events"
)

// Agent tasks (TRELLIS_TASKS, one aggregate per task name) are pruned
// whole per name: a name whose current task is completed and whose last
// event was stored before the cut loses every event into an archive; a
// name with an open task keeps all of them. Unlike a workflow run's, the
// name's tombstone stays in the log: a later task may take the name (its
// created event chains to the tombstone), and the task views, a
// projection saved to disk, drop the name's tasks when they read it,
// however late. The record names the tombstone as the aggregate's
// continuation (events.Continuation), so audit verify accepts that it
// chains to an event the archive holds.

// agentScan is what one walk of the agent tasks' stream found.
type agentScan struct {
	names    map[string]*candidate // msgs: the events to archive (not the tombstones)
	state    map[string]*events.AgentTask
	tomb     map[string]*events.Message // a trailing tombstone no record names yet
	reused   map[string]bool            // the name's first live event is a tombstone
	order    []string
	firstSeq uint64
}

// scanAgentTasks walks TRELLIS_TASKS and folds every task name. pruned
// are the sequences records account for on it, continued the tombstones
// records name.
func scanAgentTasks(ctx context.Context, store *events.Store, pruned *events.SeqRanges, continued map[uint64]bool) (*agentScan, error) {
	info, err := store.StreamInfo(ctx, events.StreamTasks)
	if err != nil {
		return nil, fmt.Errorf("read the agent tasks' stream: %w", err)
	}
	res := &agentScan{names: map[string]*candidate{}, state: map[string]*events.AgentTask{}, tomb: map[string]*events.Message{},
		reused: map[string]bool{}, firstSeq: info.State.FirstSeq}
	last := info.State.LastSeq
	if last == 0 {
		return res, nil
	}
	var prev *candidate
	var prevSeq uint64
	err = store.Scan(ctx, events.StreamTasks, events.ScanRange{To: last}, func(m events.Message) error {
		if prev != nil && m.Seq > prevSeq+1 {
			prev.holes = append(prev.holes, [2]uint64{prevSeq + 1, m.Seq - 1})
		}
		prev, prevSeq = nil, m.Seq
		if pruned.Covers(m.Seq, m.Seq) {
			return nil // a record names it (removed, or the stream's last message)
		}
		t := strings.Split(m.Subject, ".")
		if len(t) != 4 {
			return nil
		}
		name := t[2]
		c := res.names[name]
		if c == nil {
			c = &candidate{id: name}
			res.names[name] = c
			res.order = append(res.order, name)
		}
		prev = c
		c.lastSeq, c.stored, c.lastHash = m.Seq, m.Stored, events.Hash(m.Envelope)
		if m.Bad != nil {
			c.keep = "an event of it cannot be read: " + m.Bad.Error()
			return nil
		}
		if m.Type == events.AgentTaskPruned {
			delete(res.tomb, name)
			if continued[m.Seq] {
				if len(c.msgs) == 0 {
					res.reused[name] = true // a later task's events chain to it
				}
			} else if pre := res.state[name]; pre == nil || pre.Status != events.AgentTaskStatusCompleted {
				// Not a prune's: a prune tombstones completed tasks only.
				c.keep = "a tombstone follows an open task"
				return nil
			} else {
				mm := m
				res.tomb[name] = &mm
			}
			res.state[name] = nil
			return nil
		}
		c.msgs = append(c.msgs, m)
		if res.tomb[name] != nil {
			c.keep = "an event follows a tombstone no record names"
		}
		if c.keep != "" {
			return nil
		}
		st, err := events.ApplyAgentTask(res.state[name], m.Recorded)
		if err != nil {
			c.keep = "an event of it does not fold: " + err.Error()
			return nil
		}
		res.state[name] = st
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("scan the agent tasks' stream: %w", err)
	}
	if prev != nil && prevSeq < last {
		prev.holes = append(prev.holes, [2]uint64{prevSeq + 1, last})
	}
	for _, c := range res.names {
		if c.keep == "" {
			c.findTimers(pruned) // no timers on this stream: every hole must be pruned
		}
	}
	return res, nil
}

// choose returns the task names a prune at cut removes, in stream order,
// and counts the others by why they stay.
func (s *agentScan) choose(cut time.Time) ([]*candidate, map[string]int) {
	kept := map[string]int{}
	var out []*candidate
	for _, name := range s.order {
		c, t := s.names[name], s.state[name]
		switch {
		case len(c.msgs) == 0:
			// Pruned already: only its tombstone is left.
		case c.keep != "":
			kept[c.keep]++
		case s.reused[name]:
			kept["its name was pruned before (its events chain to that tombstone)"]++
		case s.tomb[name] != nil && !c.msgs[len(c.msgs)-1].Stored.Before(cut):
			// Tombstoned by a prune stopped before its record (or
			// forged): decided as the task was before its tombstone.
			kept["completed after the cut"]++
		case s.tomb[name] != nil:
			out = append(out, c) // tombstoned by a prune stopped before its record
		case t == nil:
			kept["it does not start with created"]++
		case t.Status != events.AgentTaskStatusCompleted:
			kept["open"]++
		case !c.stored.Before(cut):
			kept["completed after the cut"]++
		default:
			out = append(out, c)
		}
	}
	return out, kept
}

// pruneAgentTasks prunes the completed agent tasks, batch by batch.
func pruneAgentTasks(ctx context.Context, store *events.Store, log *retentionLog, res *Result, opts Options) error {
	continued, err := log.continuedOn(ctx, store, events.StreamTasks)
	if err != nil {
		return command.StoreError("prune: read the retention log", err)
	}
	scan, err := scanAgentTasks(ctx, store, log.otherPruned(events.StreamTasks), continued)
	if err != nil {
		return command.StoreError("prune: read the agent tasks", err)
	}
	chosen, kept := scan.choose(res.Cut)
	res.AgentTasksKept = kept
	for len(chosen) > 0 {
		n := min(len(chosen), opts.BatchTasks)
		batch := chosen[:n]
		chosen = chosen[n:]
		for attempt := 1; len(batch) > 0; attempt++ {
			ar, err := pruneAgentBatch(ctx, store, log, scan, batch, res.Cut, opts)
			if err == nil {
				res.Archives = append(res.Archives, ar.ArchiveResult)
				res.AgentTasks += ar.AgentTasks
				res.AgentTaskEvents += ar.Events
				res.Sequences += ar.sequences
				break
			}
			if !errors.Is(err, events.ErrWrongLastSequence) || attempt >= 3 {
				return err
			}
			var still []*candidate
			for _, c := range batch {
				_, last, err := store.Load(ctx, events.StreamTasks, events.TaskNameFilter(c.id))
				if err != nil && !errors.Is(err, events.ErrNotFound) {
					return command.StoreError("prune", err)
				}
				if last == c.lastSeq {
					still = append(still, c)
				}
			}
			res.AgentTasksKept["changed during the prune"] += len(batch) - len(still)
			batch = still
		}
	}
	return nil
}

// pruneAgentBatch archives, tombstones, records and removes one batch of
// task names.
func pruneAgentBatch(ctx context.Context, store *events.Store, log *retentionLog, scan *agentScan, batch []*candidate, cut time.Time, opts Options) (*batchResult, error) {
	at := time.Now()
	recordID := events.NewID(at)
	name := "prune-" + recordID + ".jsonl"
	a, err := writeArchiveOf(opts.Archive, name, events.StreamTasks, scan.firstSeq, batch)
	if err != nil {
		return nil, trellis.FieldError("archive", "%v (nothing was pruned from this batch)", err)
	}
	if opts.AfterArchive != nil {
		opts.AfterArchive(a.path)
	}
	var ps []events.Pending
	var fresh []*candidate
	conts := map[string]events.Continuation{}
	for _, c := range batch {
		if m := scan.tomb[c.id]; m != nil {
			conts[c.id] = events.Continuation{Aggregate: events.TaskNameFilter(c.id), Seq: m.Seq, Hash: events.Hash(m.Envelope), Prev: m.Prev}
			continue
		}
		tomb, err := events.NewEnvelope(at, events.AgentTaskPruned, c.id, opts.Actor, events.TasksSchema, map[string]string{"archive": name})
		if err != nil {
			return nil, err
		}
		tomb.Prev = c.lastHash
		ps = append(ps, events.Pending{Subject: events.TasksSubject(c.id, events.AgentTaskPruned), Envelope: tomb,
			Expect: events.Expect{Filter: events.TaskNameFilter(c.id), LastSeq: c.lastSeq}})
		fresh = append(fresh, c)
	}
	if len(ps) > 0 {
		acks, err := store.AppendAtomic(ctx, ps)
		if err != nil {
			if errors.Is(err, events.ErrWrongLastSequence) {
				_ = os.Remove(a.path)
				return nil, err
			}
			return nil, command.StoreError("prune: tombstone the completed agent tasks", err)
		}
		for i, ack := range acks {
			conts[fresh[i].id] = events.Continuation{Aggregate: events.TaskNameFilter(fresh[i].id), Seq: ack.Seq,
				Hash: events.Hash(ps[i].Envelope), Prev: ps[i].Envelope.Prev}
		}
	}
	if opts.AfterRunTombstones != nil {
		opts.AfterRunTombstones()
	}
	p := events.PrunedPayload{Stream: events.StreamTasks, Cut: cut.Format(time.RFC3339Nano), Archive: name, Digest: a.digest,
		Events: a.events, Removed: a.removed.Ranges(), Aggregates: []string{}}
	for _, c := range batch {
		p.Aggregates = append(p.Aggregates, "agent-task/"+c.id)
		p.Continued = append(p.Continued, conts[c.id])
	}
	recSeq, seqs, err := recordOther(ctx, store, log, opts, at, recordID, a.path, p, "agent tasks")
	if err != nil {
		return nil, err
	}
	return &batchResult{ArchiveResult: ArchiveResult{File: a.path, Digest: a.digest, AgentTasks: len(batch), Events: a.events, Bytes: a.bytes,
		Record: recordID, RecordSeq: recSeq}, sequences: seqs}, nil
}

// continuedOn returns the sequences of the continuations the records the
// prune trusts name on stream.
func (l *retentionLog) continuedOn(ctx context.Context, store *events.Store, stream string) (map[uint64]bool, error) {
	recs, _, err := store.Load(ctx, events.StreamQueue, events.RetentionFilter)
	if err != nil && !errors.Is(err, events.ErrNotFound) {
		return nil, err
	}
	out := map[uint64]bool{}
	for _, r := range recs {
		var p events.PrunedPayload
		if r.Type != events.PrunedType || r.DecodePayload(&p) != nil || p.Stream != stream || !l.trusts(p) {
			continue
		}
		for _, c := range p.Continued {
			out[c.Seq] = true
		}
	}
	return out, nil
}
