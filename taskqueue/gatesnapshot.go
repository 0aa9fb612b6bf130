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

// Snapshot is the event type of an aggregate's snapshot: its folded state
// as of the event before it, chained to that event (prev) like any other,
// so the aggregate's hash chain runs on through it. A load starts from the
// aggregate's last snapshot (command.Kind.Snapshot); a prune may cut the
// events before a snapshot (see retention/): the snapshot then continues
// the chain from the archive's last event of the aggregate.
const Snapshot = "snapshot"

// GateSnapshotEvery is how many events a gate folds after its last
// snapshot before the claim that reaches it appends a new one: a cold
// load of a gate folds at most GateSnapshotEvery+1 events however many
// claims it has admitted.
const GateSnapshotEvery = 64

// SnapshotPayload is the payload of a snapshot event.
type SnapshotPayload struct {
	// Replaces is the hash of the last event the snapshot replaces (its
	// prev) and ReplacesSeq that event's sequence.
	Replaces    string `json:"replaces"`
	ReplacesSeq uint64 `json:"replaces_seq"`
	// Events is how many events the aggregate folded since its previous
	// snapshot.
	Events int `json:"events"`
	// Gate is the state of a gate (a queue's or a concurrency key's).
	Gate *Gate `json:"gate,omitempty"`
	// Task is the state of an open queue task (see TaskSnapshot).
	Task *trellis.Task `json:"task,omitempty"`
	// Schedule is the state of a schedule (see ScheduleSnapshotEvery).
	Schedule *trellis.Schedule `json:"schedule,omitempty"`
	// Controls is the state of a queue's controls (see
	// ControlSnapshotEvery).
	Controls *trellis.QueueControls `json:"controls,omitempty"`
	// Unique is the state of a unique key (see UniqueSnapshotEvery).
	Unique *UniqueHold `json:"unique,omitempty"`
}

// gateSnapshotSubject is the subject of a gate's snapshots.
func gateSnapshotSubject(id string) string { return infraSubject(id, Snapshot) }

// IsGateSubject reports whether subject belongs to a gate: a queue's
// (trellis.queue.<queue>._gate.<type>) or a concurrency key's
// (trellis.queue.<queue>._key.<hash>.<type>).
func IsGateSubject(subject string) bool {
	t := strings.Split(subject, ".")
	return (len(t) == 5 && t[3] == "_gate") || (len(t) == 6 && t[3] == "_key")
}

// foldGateSnapshot is the state a gate's snapshot event carries.
func foldGateSnapshot(rec events.Recorded) (*Gate, error) {
	var p SnapshotPayload
	if err := rec.DecodePayload(&p); err != nil {
		return nil, err
	}
	if p.Gate == nil {
		return nil, fmt.Errorf("snapshot %s carries no gate: %w", rec.ID, events.ErrBadEvent)
	}
	return cloneGate(p.Gate), nil
}

// cloneGate copies a gate state.
func cloneGate(g *Gate) *Gate {
	if g == nil {
		return nil
	}
	c := *g
	c.Holders = append([]Holder(nil), g.Holders...)
	return &c
}

// FoldGate folds a gate's events (from its first, or from a snapshot) into
// its state: the state a snapshot after them must carry.
func FoldGate(recs []events.Recorded) (*Gate, error) {
	var g *Gate
	var err error
	for _, r := range recs {
		if g, err = gateKind.Fold(g, r); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// ApplyGate folds one event into a gate state (nil before the first
// event; g is not changed).
func ApplyGate(g *Gate, rec events.Recorded) (*Gate, error) {
	return gateKind.Fold(cloneGate(g), rec)
}

// SameGate reports whether two gate states are equal as the log records
// them (nil is the empty gate).
func SameGate(a, b *Gate) bool {
	if a == nil {
		a = &Gate{}
	}
	if b == nil {
		b = &Gate{}
	}
	x, errA := json.Marshal(a)
	y, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(x) == string(y)
}

// maybeSnapshotGate appends a snapshot of the gate st (the state after a
// claim's admitted event) once it folded GateSnapshotEvery events since
// its last one. The append is checked against st's sequence: a gate that
// moved on meanwhile is left for the claim after (that one snapshots it).
// A snapshot that cannot be appended costs nothing but a longer cold load,
// so its error is not the claim's.
func (q *Handler) maybeSnapshotGate(ctx context.Context, st command.State[*Gate]) {
	if st.Value == nil || st.Value.since < GateSnapshotEvery || st.Head == "" {
		return
	}
	g := cloneGate(st.Value)
	p := SnapshotPayload{Replaces: st.Head, ReplacesSeq: st.Seq, Events: g.since, Gate: g}
	_, _ = q.gates.Once(ctx, st, "trellis", command.Decision{Subject: gateSnapshotSubject(st.ID), Type: Snapshot, Payload: p})
}
