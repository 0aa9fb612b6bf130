package command

import (
	"context"
	"fmt"

	"github.com/trellis/trellis/events"
)

// Snapshots.
//
// An aggregate that never ends (a queue's gate, which records every gated
// claim) would make every cold load fold its whole history. Its kind may
// name a snapshot subject (Kind.Snapshot): an event there carries the
// aggregate's folded state (Fold replaces the state with it) and is
// chained to the aggregate's previous event like any other, so the hash
// chain runs on through it. A load with no state starts from the
// aggregate's last snapshot and folds only the events after it; a state
// caught up across a snapshot folds it like any event. A read that misses
// the newest snapshot (a lagging replica) folds more events, never a
// wrong state: folding from any snapshot, or from the first event the log
// still holds, gives the same state.

// startFromSnapshot puts the aggregate's last snapshot into st (a state
// with nothing folded yet); st is unchanged when the aggregate has none.
func (r *Runner[S]) startFromSnapshot(ctx context.Context, st *State[S]) error {
	subject := r.kind.Snapshot(st.ID)
	rec, ok, err := r.store.LoadLast(ctx, r.kind.Stream, subject)
	if err != nil {
		return fmt.Errorf("read the last snapshot on %s: %w", subject, err)
	}
	if !ok {
		return nil
	}
	var zero S
	v, err := r.kind.Fold(zero, rec)
	if err != nil {
		return fmt.Errorf("fold the snapshot of %s %s at #%d: %w", r.kind.Name, st.ID, rec.Seq, err)
	}
	st.Value, st.Seq, st.Head = v, rec.Seq, events.Hash(rec.Envelope)
	return nil
}
