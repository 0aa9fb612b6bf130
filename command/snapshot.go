package command

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

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
	rec, ok, err := lastOnSubject(ctx, r.store, r.kind.Stream, r.kind.Snapshot(st.ID))
	if err != nil || !ok {
		return err
	}
	var zero S
	v, err := r.kind.Fold(zero, rec)
	if err != nil {
		return fmt.Errorf("fold the snapshot of %s %s at #%d: %w", r.kind.Name, st.ID, rec.Seq, err)
	}
	st.Value, st.Seq, st.Head = v, rec.Seq, events.Hash(rec.Envelope)
	return nil
}

// lastOnSubject reads the last message stored on subject (one direct get;
// ok is false when there is none).
func lastOnSubject(ctx context.Context, store *events.Store, stream, subject string) (events.Recorded, bool, error) {
	req, err := json.Marshal(map[string]string{"last_by_subj": subject})
	if err != nil {
		return events.Recorded{}, false, err
	}
	ctx, cancel := context.WithTimeout(ctx, store.Config().RequestTimeout)
	defer cancel()
	msg, err := store.Conn().RequestWithContext(ctx, "$JS.API.DIRECT.GET."+stream, req)
	if err != nil {
		return events.Recorded{}, false, fmt.Errorf("read the last snapshot on %s: %w", subject, err)
	}
	if len(msg.Data) == 0 && msg.Header != nil {
		switch status := msg.Header.Get("Status"); status {
		case "404":
			return events.Recorded{}, false, nil
		case "":
		default:
			return events.Recorded{}, false, fmt.Errorf("read the last snapshot on %s: direct get status %s %s", subject, status, msg.Header.Get("Description"))
		}
	}
	seq, err := strconv.ParseUint(msg.Header.Get("Nats-Sequence"), 10, 64)
	if err != nil {
		return events.Recorded{}, false, fmt.Errorf("read the last snapshot on %s: bad sequence header: %w", subject, err)
	}
	rec, err := events.Decode(stream, msg.Header.Get("Nats-Subject"), seq, msg.Data)
	if err != nil {
		return rec, false, err
	}
	if err := store.Resolve(ctx, &rec); err != nil {
		return rec, false, err
	}
	return rec, true, nil
}
