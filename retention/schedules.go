package retention

import (
	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/taskqueue"
)

// Schedules are open for as long as they tick: each tick adds a tick event
// and a fired (or ticks_missed) event. A schedule snapshots itself every
// taskqueue.ScheduleSnapshotEvery events, when a tick is taken up, and a
// prune cuts it at its last snapshot stored before the cut like a gate
// (see gates.go), with one more rule: the timers behind its ticks. Each
// event that arms the next tick (created, fired, ticks_missed) is stored
// in an atomic batch with the tick's timer, whose sequence the server
// deletes when the tick is published. The prune archives each such timer
// as a gap line right after the event that armed it and removes it with
// that event, and it cuts a segment only when every timer armed in it
// fired into a tick in it: audit verify explains a tick by its timer's
// batch, so a tick must not stay in the log without it, nor a timer's
// deleted sequence without the event stored before it.

// matchesSchedule reports whether each snapshot in the segment (after its
// first event) and the one it ends at carry the fold of the events before
// them and chain to the last of those.
func (s gateSegment) matchesSchedule() bool {
	return matchFold(s, taskqueue.ApplySchedule, func(st *trellis.Schedule, p taskqueue.SnapshotPayload) bool {
		return p.Schedule != nil && taskqueue.SameSchedule(st, p.Schedule)
	})
}

// matchesControls is matchesSchedule for a queue's controls (which arm no
// timers: a queue's controls change only by commands, and snapshot
// themselves every taskqueue.ControlSnapshotEvery events).
func (s gateSegment) matchesControls() bool {
	return matchFold(s, taskqueue.ApplyControls, func(c *trellis.QueueControls, p taskqueue.SnapshotPayload) bool {
		return p.Controls != nil && taskqueue.SameControls(c, p.Controls)
	})
}

// matchesUnique is matchesSchedule for a unique key, whose held events
// the adds of its tasks append (see taskqueue.UniqueSnapshotEvery).
func (s gateSegment) matchesUnique() bool {
	return matchFold(s, taskqueue.ApplyUnique, func(u *taskqueue.UniqueHold, p taskqueue.SnapshotPayload) bool {
		return p.Unique != nil && taskqueue.SameUnique(u, p.Unique)
	})
}

// matchFold folds the segment's events and its snapshot with apply and
// reports whether each snapshot after the first event carries the state
// folded before it (same) and chains to the event before it.
func matchFold[S any](s gateSegment, apply func(S, events.Recorded) (S, error), same func(S, taskqueue.SnapshotPayload) bool) bool {
	var st S
	all := append(append([]events.Message(nil), s.msgs...), s.snap)
	for i, m := range all {
		if i > 0 && m.Type == taskqueue.Snapshot {
			var p taskqueue.SnapshotPayload
			prev := events.Hash(all[i-1].Envelope)
			if m.DecodePayload(&p) != nil || !same(st, p) || p.Replaces != prev || m.Prev != prev {
				return false
			}
		}
		next, err := apply(st, m.Recorded)
		if err != nil {
			return false
		}
		st = next
	}
	return true
}

// findTimers sets the segment's fired timers: for each tick in it, the
// sequence right after the event of its timer's batch (the event that
// armed it). It returns why the schedule must stay whole: a tick whose
// arming event is not in the segment, or an arming event in it whose tick
// is not.
func (s *gateSegment) findTimers() string {
	type batchPos struct {
		id  string
		seq uint64
	}
	armed := map[batchPos]uint64{} // an arming event's batch position -> its sequence
	for _, m := range s.msgs {
		if m.Scheduler == "" && m.BatchID != "" {
			armed[batchPos{m.BatchID, m.BatchSeq}] = m.Seq
		}
	}
	ticked := map[batchPos]bool{}
	seen := map[uint64]bool{}
	for _, m := range s.msgs {
		if m.Scheduler == "" {
			continue
		}
		at := batchPos{m.BatchID, m.BatchSeq - 1}
		seq, ok := armed[at]
		if m.BatchID == "" || m.BatchSeq == 0 || !ok {
			return "a tick of it was armed by an event it would keep"
		}
		ticked[at] = true
		if !seen[seq+1] {
			seen[seq+1] = true
			s.timers = append(s.timers, seq+1)
		}
	}
	for at := range armed {
		if !ticked[at] {
			return "a timer armed by an event it would cut has not fired before its snapshot"
		}
	}
	return ""
}

// heldByDelayed returns why a unique key's segment must stay whole: a
// task it names was added delayed. Its add's batch holds the task's
// event, the key's held event and then the task's timer, whose sequence
// the server deletes when it fires: audit verify explains that deleted
// sequence by the event stored right before it, the held event, which
// must therefore stay.
func (s gateSegment) heldByDelayed(delayed map[string]bool) string {
	for _, m := range s.msgs {
		if m.Type != taskqueue.Held {
			continue
		}
		var p taskqueue.HeldPayload
		if err := m.DecodePayload(&p); err != nil {
			return "an event of it does not decode: " + err.Error()
		}
		if delayed[p.TaskID] {
			return "a task added delayed holds it (its timer follows the key's event)"
		}
	}
	return ""
}

// delayedTasks returns the tasks of the scan whose add armed a timer (a
// delayed task: its timer is in the add's batch).
func delayedTasks(scan *scanResult) map[string]bool {
	out := map[string]bool{}
	for id, c := range scan.tasks {
		if c.task != nil && c.task.RunAt != nil {
			out[id] = true
			continue
		}
		for _, m := range c.msgs {
			if m.Scheduler != "" && len(c.msgs) > 0 && m.BatchID != "" && m.BatchID == c.msgs[0].BatchID {
				out[id] = true
			}
		}
	}
	return out
}
