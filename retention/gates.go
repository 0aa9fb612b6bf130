package retention

import (
	"context"
	"errors"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/command"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/taskqueue"
)

// Gates are open for ever: a queue's gate and each concurrency key's gate
// record every gated claim. Each snapshots itself every
// taskqueue.GateSnapshotEvery events (a snapshot carries its folded state,
// chained to the event before it). A prune cuts each gate at its last
// snapshot stored before the cut: the events before that snapshot go to
// an archive, and the prune record names the snapshot (an
// events.Continuation with its sequence, its hash and its prev, the hash
// of the gate's last archived event), which stays the first event the
// live log holds of the gate. audit verify trusts that first event only
// when a trusted record names it, and checks every later snapshot against
// the events it replaces.

// maxGateEvents bounds the gate events one record cuts (their sequences
// are interleaved with the tasks': about a removed range each).
const maxGateEvents = 4096

// gateHistory is one gate's events in the live log, in stream order (or
// a schedule's: see schedules.go).
type gateHistory struct {
	filter   string
	msgs     []events.Message
	schedule bool
	controls bool // a queue's controls (see schedules.go)
	unique   bool // a unique key (see schedules.go)
}

// gateSegment is the part of a gate one batch cuts: msgs, the events
// before the snapshot snap.
type gateSegment struct {
	filter string
	msgs   []events.Message
	snap   events.Message
	// schedule: the segment is a schedule's, whose fired timers (timers)
	// it archives with their ticks.
	schedule bool
	timers   []uint64
	controls bool
	unique   bool
}

// scanGates reads every gate of the queue stream and returns what a prune
// at cut removes of each, in order (a gate's later segments follow its
// earlier ones), counting the gates it keeps whole by reason in kept.
func scanGates(ctx context.Context, store *events.Store, cut time.Time, continued map[uint64]string, delayed map[string]bool, kept map[string]int) ([][]gateSegment, error) {
	gates := map[string]*gateHistory{}
	var order []string
	for _, filter := range []string{"trellis.queue.*._gate.>", "trellis.queue.*._key.*.>", "trellis.queue.*._schedule.*.>", "trellis.queue.*." + taskqueue.ControlID + ".>", "trellis.queue.*._unique.*.>"} {
		err := store.Scan(ctx, events.StreamQueue, events.ScanRange{Filter: filter}, func(m events.Message) error {
			schedule := taskqueue.IsScheduleSubject(m.Subject)
			controls := !schedule && taskqueue.IsControlSubject(m.Subject)
			unique := taskqueue.IsUniqueSubject(m.Subject)
			if !schedule && !controls && !unique && !taskqueue.IsGateSubject(m.Subject) {
				return nil
			}
			f := m.Subject[:strings.LastIndexByte(m.Subject, '.')] + ".>"
			if schedule {
				f = taskqueue.ScheduleFilter(strings.Split(m.Subject, ".")[4]) // whatever its queue
			}
			g := gates[f]
			if g == nil {
				g = &gateHistory{filter: f, schedule: schedule, controls: controls, unique: unique}
				gates[f] = g
				order = append(order, f)
			}
			g.msgs = append(g.msgs, m)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	var out [][]gateSegment
	for _, f := range order {
		segs, why := gates[f].segments(cut, continued, delayed)
		if why != "" {
			kept[why]++
			continue
		}
		if len(segs) > 0 {
			out = append(out, segs)
		}
	}
	return out, nil
}

// segments splits the gate's events before its last snapshot stored
// before cut into segments of at most maxGateEvents events (or up to its
// next snapshot), each ending right before a snapshot. It returns why the
// gate is kept whole, if it is.
func (g *gateHistory) segments(cut time.Time, continued map[uint64]string, delayed map[string]bool) ([]gateSegment, string) {
	last := -1
	for i, m := range g.msgs {
		if m.Bad != nil {
			return nil, "an event of it cannot be read: " + m.Bad.Error()
		}
		if i > 0 && m.Type == taskqueue.Snapshot && m.Stored.Before(cut) {
			last = i
		}
	}
	if last < 0 {
		return nil, ""
	}
	// The events cut must fold to each snapshot they end at: a snapshot
	// that does not match its history (appended by someone else) is no
	// place to cut.
	first := g.msgs[0]
	if first.Prev != "" && (first.Type != taskqueue.Snapshot || continued[first.Seq] != events.Hash(first.Envelope)) {
		return nil, "its first event in the log chains to one that is gone"
	}
	var segs []gateSegment
	start := 0
	for start < last {
		end := -1
		for i := start + 1; i <= last; i++ {
			if g.msgs[i].Type == taskqueue.Snapshot && (end < 0 || i-start <= maxGateEvents) {
				end = i
			}
		}
		seg := gateSegment{filter: g.filter, msgs: g.msgs[start:end], snap: g.msgs[end], schedule: g.schedule, controls: g.controls, unique: g.unique}
		if !seg.matches() {
			return nil, "a snapshot of it does not match the events it replaces"
		}
		if g.schedule {
			if why := seg.findTimers(); why != "" {
				return nil, why
			}
		}
		if g.unique {
			if why := seg.heldByDelayed(delayed); why != "" {
				return nil, why
			}
		}
		segs = append(segs, seg)
		start = end
	}
	return segs, ""
}

// matches reports whether each snapshot in the segment (after its first
// event) and the one it ends at carry the fold of the events before them
// and chain to the last of those.
func (s gateSegment) matches() bool {
	if s.schedule {
		return s.matchesSchedule()
	}
	if s.controls {
		return s.matchesControls()
	}
	if s.unique {
		return s.matchesUnique()
	}
	var g *taskqueue.Gate
	all := append(append([]events.Message(nil), s.msgs...), s.snap)
	for i, m := range all {
		if i > 0 && m.Type == taskqueue.Snapshot {
			var p taskqueue.SnapshotPayload
			prev := events.Hash(all[i-1].Envelope)
			if m.DecodePayload(&p) != nil || p.Gate == nil || !taskqueue.SameGate(g, p.Gate) || p.Replaces != prev || m.Prev != prev {
				return false
			}
		}
		next, err := taskqueue.ApplyGate(g, m.Recorded)
		if err != nil {
			return false
		}
		g = next
	}
	return true
}

// pruneGates cuts the gates' histories (scanGates), one batch after the
// other: a gate's next segment goes in a later batch than its previous
// one, so each record names a snapshot the log still holds.
func pruneGates(ctx context.Context, store *events.Store, stream jetstream.Stream, log *retentionLog, firstSeq uint64, gates [][]gateSegment, res *Result, opts Options) error {
	for len(gates) > 0 {
		var batch []gateSegment
		n := 0
		var rest [][]gateSegment
		for _, segs := range gates {
			if len(batch) == 0 || n+len(segs[0].msgs) <= maxGateEvents {
				batch = append(batch, segs[0])
				n += len(segs[0].msgs)
				segs = segs[1:]
			}
			if len(segs) > 0 {
				rest = append(rest, segs)
			}
		}
		gates = rest
		ar, err := pruneGateBatch(ctx, store, stream, log, firstSeq, batch, res.Cut, opts)
		if err != nil {
			return err
		}
		res.Archives = append(res.Archives, ar.ArchiveResult)
		res.GateEvents += ar.Events - ar.scheduleEvents - ar.controlEvents - ar.uniqueEvents
		res.UniqueEvents += ar.uniqueEvents
		res.ScheduleEvents += ar.scheduleEvents
		res.ControlEvents += ar.controlEvents
		res.Sequences += ar.sequences
	}
	return nil
}

// pruneGateBatch archives the segments' events, appends the record that
// names their snapshots, and removes the events.
func pruneGateBatch(ctx context.Context, store *events.Store, stream jetstream.Stream, log *retentionLog, firstSeq uint64, batch []gateSegment, cut time.Time, opts Options) (*batchResult, error) {
	at := time.Now()
	recordID := events.NewID(at)
	name := "prune-" + recordID + ".jsonl"
	cands := make([]*candidate, len(batch))
	for i, s := range batch {
		cands[i] = &candidate{id: s.filter, msgs: s.msgs, timers: s.timers}
	}
	a, err := writeArchive(opts.Archive, name, firstSeq, cands)
	if err != nil {
		return nil, trellis.FieldError("archive", "%v (nothing was pruned from this batch)", err)
	}
	if opts.AfterArchive != nil {
		opts.AfterArchive(a.path)
	}
	p := events.PrunedPayload{Stream: events.StreamQueue, Cut: cut.Format(time.RFC3339Nano), Archive: name, Digest: a.digest,
		Events: a.events, Removed: a.removed.Ranges(), Aggregates: []string{}}
	for _, s := range batch {
		p.Continued = append(p.Continued, events.Continuation{Aggregate: s.filter, Seq: s.snap.Seq, Hash: events.Hash(s.snap.Envelope), Prev: s.snap.Prev})
	}
	p = p.Sign(opts.Key)
	rec, err := events.NewEnvelope(at, events.PrunedType, events.RetentionAggregate, opts.Actor, events.PrunedSchema, p)
	if err != nil {
		return nil, err
	}
	rec.ID, rec.Prev = recordID, log.lastHash
	ack, err := store.Append(ctx, events.RetentionSubjectPrefix+events.PrunedType, rec, events.Expect{Filter: events.RetentionFilter, LastSeq: log.lastSeq}, "")
	if err != nil {
		if errors.Is(err, events.ErrWrongLastSequence) {
			_ = os.Remove(a.path) // refused: no record, the archive prunes nothing
			return nil, trellis.Errorf(trellis.CodeConflict, "another prune ran while this one did (the retention log moved on): run it again")
		}
		// Any other error (a timeout, a cancelled prune) leaves the batch
		// in doubt: its record may be stored, naming this archive, so the
		// archive stays (unnamed, it prunes nothing).
		return nil, command.StoreError("prune: append the prune record", err)
	}
	log.recorded(ack.Seq, events.Hash(rec), &p)
	for _, r := range p.Removed {
		log.pruned.Add(r[0], r[1])
	}
	for _, c := range p.Continued {
		log.continued[c.Seq] = c.Hash
	}
	if opts.AfterGateRecord != nil {
		opts.AfterGateRecord()
	}
	if _, err := log.finish(ctx, stream); err != nil {
		return nil, command.StoreError("prune: remove the cut gate events (the record is appended: the next prune finishes it)", err)
	}
	seqs := 0
	for _, r := range p.Removed {
		seqs += int(r[1] - r[0] + 1)
	}
	out := &batchResult{ArchiveResult: ArchiveResult{File: a.path, Digest: a.digest, Events: a.events, Bytes: a.bytes,
		Record: recordID, RecordSeq: ack.Seq}, sequences: seqs}
	for _, s := range batch {
		switch {
		case s.schedule:
			out.Schedules++
			out.scheduleEvents += len(s.msgs)
		case s.controls:
			out.Controls++
			out.controlEvents += len(s.msgs)
		case s.unique:
			out.Uniques++
			out.uniqueEvents += len(s.msgs)
		default:
			out.Gates++
		}
	}
	return out, nil
}
