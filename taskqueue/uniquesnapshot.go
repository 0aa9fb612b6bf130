package taskqueue

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/trellis/trellis/command"
	"github.com/trellis/trellis/events"
)

// UniqueSnapshotEvery is how many events a unique key folds after its last
// snapshot before the add that reaches it appends a new one: a key held by
// one task after the other (a nightly job's "one at a time") records a
// held event per add for as long as it is used, and a cold load folds its
// last snapshot and at most UniqueSnapshotEvery events after it.
const UniqueSnapshotEvery = 64

// uniqueSnapshotSubject is the subject of a unique key's snapshots.
func uniqueSnapshotSubject(id string) string { return infraSubject(id, Snapshot) }

// IsUniqueSubject reports whether subject belongs to a unique key
// (trellis.queue.<queue>._unique.<hash>.<type>).
func IsUniqueSubject(subject string) bool {
	t := strings.Split(subject, ".")
	return len(t) == 6 && t[0] == "trellis" && t[1] == "queue" && t[3] == "_unique"
}

// foldUniqueEvent folds one event of a unique key: a held event names the
// holder, a snapshot replaces the state with the one it carries.
func foldUniqueEvent(u *UniqueHold, rec events.Recorded) (*UniqueHold, error) {
	switch rec.Type {
	case Snapshot:
		var p SnapshotPayload
		if err := rec.DecodePayload(&p); err != nil {
			return u, err
		}
		if p.Unique == nil {
			return u, fmt.Errorf("snapshot %s carries no unique key: %w", rec.ID, events.ErrBadEvent)
		}
		return &UniqueHold{TaskID: p.Unique.TaskID, Until: utcPtr(p.Unique.Until)}, nil
	case Held:
		var p HeldPayload
		if err := rec.DecodePayload(&p); err != nil {
			return u, err
		}
		since := 0
		if u != nil {
			since = u.since
		}
		return &UniqueHold{TaskID: p.TaskID, Until: utcPtr(p.Until), since: since + 1}, nil
	}
	if u != nil {
		u.since++
	}
	return u, nil
}

// FoldUnique folds a unique key's events (from its first, or from a
// snapshot) into its state: the state a snapshot after them must carry.
func FoldUnique(recs []events.Recorded) (*UniqueHold, error) {
	var u *UniqueHold
	var err error
	for _, r := range recs {
		if u, err = foldUniqueEvent(u, r); err != nil {
			return nil, err
		}
	}
	return u, nil
}

// ApplyUnique folds one event into a unique key's state (nil before the
// first event; u is not changed).
func ApplyUnique(u *UniqueHold, rec events.Recorded) (*UniqueHold, error) {
	if u != nil {
		c := *u
		c.Until = utcPtr(u.Until)
		u = &c
	}
	return foldUniqueEvent(u, rec)
}

// SameUnique reports whether two unique key states are equal as the log
// records them (nil equals nil only).
func SameUnique(a, b *UniqueHold) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	x, errA := json.Marshal(a)
	y, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(x) == string(y)
}

// maybeSnapshotUnique appends a snapshot of the unique key st (the state
// after an add's held event) once it folded UniqueSnapshotEvery events
// since its last one, checked against st's sequence: a key taken by
// another add meanwhile is left for that one. A snapshot that cannot be
// appended costs nothing but a longer cold load, so its error is not the
// add's.
func (q *Handler) maybeSnapshotUnique(ctx context.Context, st command.State[*UniqueHold]) {
	if st.Value == nil || st.Value.since < UniqueSnapshotEvery || st.Head == "" {
		return
	}
	u := &UniqueHold{TaskID: st.Value.TaskID, Until: utcPtr(st.Value.Until)}
	p := SnapshotPayload{Replaces: st.Head, ReplacesSeq: st.Seq, Events: st.Value.since, Unique: u}
	_, _ = q.uniques.Once(ctx, st, "trellis", command.Decision{Subject: uniqueSnapshotSubject(st.ID), Type: Snapshot, Payload: p})
}
