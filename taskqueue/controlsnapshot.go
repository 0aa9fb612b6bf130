package taskqueue

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/command"
	"github.com/trellis/trellis/events"
)

// ControlSnapshotEvery is how many events a queue's controls fold after
// their last snapshot before the control command that reaches it appends
// a new one: a queue paused and resumed, or its limits set, every day for
// years loads from its last snapshot and at most ControlSnapshotEvery
// events after it.
const ControlSnapshotEvery = 64

// controlSnapshotSubject is the subject of a queue's control snapshots.
func controlSnapshotSubject(queue string) string { return ControlSubject(queue, Snapshot) }

// foldControlEvent folds one control event: a snapshot replaces the state
// with the one it carries; every other event is foldControls' and counts
// towards the next snapshot.
func foldControlEvent(c *trellis.QueueControls, rec events.Recorded) (*trellis.QueueControls, error) {
	if rec.Type == Snapshot {
		var p SnapshotPayload
		if err := rec.DecodePayload(&p); err != nil {
			return c, err
		}
		if p.Controls == nil {
			return c, fmt.Errorf("snapshot %s carries no queue controls: %w", rec.ID, events.ErrBadEvent)
		}
		out := cloneControls(p.Controls)
		out.Folded = 0
		return out, nil
	}
	c, err := foldControls(c, rec)
	if c != nil && err == nil {
		c.Folded++
	}
	return c, err
}

// cloneControls copies a controls state.
func cloneControls(c *trellis.QueueControls) *trellis.QueueControls {
	if c == nil {
		return nil
	}
	cp := *c
	if c.LeaseFrom != nil {
		from := *c.LeaseFrom
		cp.LeaseFrom = &from
	}
	return &cp
}

// FoldControls folds a queue's control events (from its first, or from a
// snapshot) into its state: the state a snapshot after them must carry.
func FoldControls(recs []events.Recorded) (*trellis.QueueControls, error) {
	var c *trellis.QueueControls
	var err error
	for _, r := range recs {
		if c, err = foldControlEvent(c, r); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// ApplyControls folds one event into a controls state (nil before the
// first event; c is not changed).
func ApplyControls(c *trellis.QueueControls, rec events.Recorded) (*trellis.QueueControls, error) {
	return foldControlEvent(cloneControls(c), rec)
}

// SameControls reports whether two controls states are equal as the log
// records them (nil equals nil only).
func SameControls(a, b *trellis.QueueControls) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	x, errA := json.Marshal(a)
	y, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(x) == string(y)
}

// maybeSnapshotControls appends a snapshot of the controls st (the state
// after a control event) once they folded ControlSnapshotEvery events
// since their last one. The append is checked against st's sequence:
// controls changed meanwhile are left for the next command. A snapshot
// that cannot be appended costs nothing but a longer cold load, so its
// error is not the command's.
func (q *Handler) maybeSnapshotControls(ctx context.Context, st command.State[*trellis.QueueControls]) {
	if st.Value == nil || st.Value.Folded < ControlSnapshotEvery || st.Head == "" {
		return
	}
	c := cloneControls(st.Value)
	p := SnapshotPayload{Replaces: st.Head, ReplacesSeq: st.Seq, Events: c.Folded, Controls: c}
	_, _ = q.controls.Once(ctx, st, "trellis", command.Decision{Subject: controlSnapshotSubject(st.ID), Type: Snapshot, Payload: p})
}
