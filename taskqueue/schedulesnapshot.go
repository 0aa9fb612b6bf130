package taskqueue

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/command"
	"github.com/trellis/trellis/events"
)

// ScheduleSnapshotEvery is how many events a schedule folds after its
// last snapshot before the server taking up its next tick appends a new
// one: each tick adds two events (the tick and its fired or ticks_missed
// event), so a cold load of a schedule folds at most about
// ScheduleSnapshotEvery+2 events however long it has been ticking.
//
// The snapshot is appended when a tick is taken up, after the tick and
// before the event that decides the next timer: every timer decided by
// an event before a snapshot has fired before it, so a prune cutting a
// schedule at a snapshot archives each fired timer with its tick.
const ScheduleSnapshotEvery = 64

// scheduleSnapshotFilter is the subject filter of a schedule's snapshots,
// whatever its queue (the Kind's Snapshot: its last one starts a load).
func scheduleSnapshotFilter(name string) string {
	return "trellis.queue.*._schedule." + name + "." + Snapshot
}

// IsScheduleSubject reports whether subject belongs to a schedule
// (trellis.queue.<queue>._schedule.<name>.<type>).
func IsScheduleSubject(subject string) bool {
	t := strings.Split(subject, ".")
	return len(t) == 6 && t[0] == "trellis" && t[1] == "queue" && t[3] == "_schedule"
}

// foldScheduleEvent folds one event of a schedule: a snapshot replaces the
// state with the one it carries; every other event is foldSchedule's and
// counts towards the next snapshot.
func foldScheduleEvent(s *trellis.Schedule, rec events.Recorded) (*trellis.Schedule, error) {
	if rec.Type == Snapshot {
		var p SnapshotPayload
		if err := rec.DecodePayload(&p); err != nil {
			return s, err
		}
		if p.Schedule == nil {
			return s, fmt.Errorf("snapshot %s carries no schedule: %w", rec.ID, events.ErrBadEvent)
		}
		c := p.Schedule.Clone()
		c.Folded = 0
		return c, nil
	}
	s, err := foldSchedule(s, rec)
	if s != nil && err == nil {
		s.Folded++
	}
	return s, err
}

// FoldSchedule folds a schedule's events (from its first, or from a
// snapshot) into its state: the state a snapshot after them must carry.
func FoldSchedule(recs []events.Recorded) (*trellis.Schedule, error) {
	var s *trellis.Schedule
	var err error
	for _, r := range recs {
		if s, err = foldScheduleEvent(s, r); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// ApplySchedule folds one event into a schedule state (nil before the
// first event; s is not changed).
func ApplySchedule(s *trellis.Schedule, rec events.Recorded) (*trellis.Schedule, error) {
	return foldScheduleEvent(s.Clone(), rec)
}

// SameSchedule reports whether two schedule states are equal as the log
// records them (nil equals nil only).
func SameSchedule(a, b *trellis.Schedule) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	x, errA := json.Marshal(a)
	y, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(x) == string(y)
}

// maybeSnapshotSchedule appends a snapshot of the schedule, as of the tick
// being taken up, once it folded ScheduleSnapshotEvery events since its
// last one (Config.ScheduleSnapshotEvery). The append is checked against the schedule's last sequence: a
// schedule that moved on meanwhile (another server took the tick) is left
// for a later tick. A snapshot that cannot be appended costs nothing but a
// longer cold load, so its error is not the tick's.
func (q *Handler) maybeSnapshotSchedule(ctx context.Context, name string) {
	st, err := q.schedules.Load(ctx, name)
	if err != nil || st.Value == nil || st.Value.Folded < q.cfg.ScheduleSnapshotEvery || st.Head == "" {
		return
	}
	s := st.Value.Clone()
	p := SnapshotPayload{Replaces: st.Head, ReplacesSeq: st.Seq, Events: s.Folded, Schedule: s}
	_, _ = q.schedules.Once(ctx, st, "trellis", command.Decision{Subject: scheduleSubject(s.Queue, name, Snapshot),
		Type: Snapshot, Payload: p, Check: ScheduleFilter(name)})
}
