package taskqueue

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/command"
	"github.com/trellis/trellis/events"
)

// Hold is a worker pool's claim of a dispatched task that may not be
// recorded yet. The dispatch message is the lease (JetStream delivers it
// to one claimant until its AckWait passes), so a pool can run a task it
// holds before its claim is on the log: when the handler ends quickly, the
// outcome event carries the claim (one synced write per task instead of
// two); when it runs longer, the pool records the claim on its own
// (RecordHold) once its window passes, as an eager claim would have been.
//
// Only a first delivery of a task that was never claimed, whose add is its
// last event on the log (read from the log unless this process cached
// it), that may be attempted more than once and that no gate of its
// queue (rate, per-key or global limit) governs is held unrecorded; every
// other dispatch is claimed at once (HoldRead records it).
//
// What it costs: a pool that dies inside the window leaves no trace of
// that attempt. Its dispatch is delivered again after the lease, and that
// delivery, no longer a first one, is claimed at once: the lost attempt is
// not counted against max_attempts.
type Hold struct {
	// Task is the task as claimed (status claimed, the attempt counted).
	Task *trellis.Task
	// ReadAt is when the read of the log that showed the task unchanged
	// since its add was sent (see HoldRead); zero when the claim is
	// recorded, or the task came from this process's cache unread. The
	// claim window counts from it.
	ReadAt time.Time

	mu       sync.Mutex
	state    taskState // the task before the claim, while not recorded
	claim    ClaimedPayload
	recorded bool
}

// Recorded reports whether the claim is on the log.
func (h *Hold) Recorded() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.isRecorded()
}

// isRecorded is Recorded with h.mu held. A Hold not made by
// HoldRead holds nothing unrecorded.
func (h *Hold) isRecorded() bool { return h.recorded || h.claim.At == nil }

// errHoldLost: the held task changed on the log before its claim was
// recorded (cancelled, most likely), so the claim no longer applies.
var errHoldLost = errors.New("the held task changed before its claim was recorded")

// errOwnClaim: the held claim is on the log after all (a write the pool
// gave up on, stored later: resent on a reconnect, or by a store that
// stalled): the task is the pool's own, not changed.
var errOwnClaim = errors.New("the held claim is on the log")

// HoldDispatched is ClaimDispatched for a worker pool (a leased claim)
// that may leave the claim unrecorded (see Hold). It returns nil when the
// dispatch yields no task (see ClaimDispatched). It is ReadDispatch then
// HoldRead at once.
func (q *Handler) HoldDispatched(ctx context.Context, msg jetstream.Msg, worker string) (*Hold, error) {
	return q.HoldRead(ctx, q.ReadDispatch(ctx, msg), worker, time.Duration(math.MaxInt64))
}

// readHeld makes d, a first delivery of an add built from the dispatch
// alone, the task as the log has it, and returns when the read was sent
// (what it read of the log is at least that recent). It asks for the
// task's last event, together with the other holds reading at the same
// moment (one request for all: see events.Store.LastSeqOf): when that is
// the add the dispatch carries, nothing followed it and the dispatch's
// state is the log's. Anything else (an event after it: a cancel, a
// claim; no event at all: a prune removed the task, or a lagging replica
// answered) folds the task from its first event, as every load does.
func (q *Handler) readHeld(ctx context.Context, d *dispatch) (time.Time, error) {
	last, sent, err := q.store.LastSeqRead(ctx, events.StreamQueue, FilterIn(d.st.Value.Queue, d.st.ID))
	if err != nil {
		return time.Time{}, command.StoreError("load task", err)
	}
	if last != d.rec.Seq {
		if d.st, err = q.loadState(ctx, d.st.ID); err != nil {
			return time.Time{}, err
		}
	}
	d.unread = false
	return sent, nil
}

// holdable reports whether a dispatch's claim may stay unrecorded (see
// Hold).
func holdable(d *dispatch, t *trellis.Task) bool {
	return t != nil && d.delivery == 1 && d.rec.Type == Added && d.st.Seq == d.rec.Seq &&
		t.Status == trellis.StatusQueued && t.Attempts == 0 && t.MaxAttempts > 1 &&
		t.CancelRequested == nil && t.RetryAt == nil && (d.flow == nil || !gated(d.flow, t, true))
}

// stillHeld reports whether t, the task as the log now has it, is still
// the task the hold was taken on.
func (h *Hold) stillHeld(t *trellis.Task) bool {
	return t != nil && t.Status == trellis.StatusQueued && t.Attempts == h.claim.Attempt-1 &&
		t.CancelRequested == nil && t.RetryAt == nil
}

// ownClaim reports whether t, the task as the log now has it, is claimed
// by the hold's own claim: its worker, attempt and dispatch delivery.
func (h *Hold) ownClaim(t *trellis.Task) bool {
	return t != nil && t.Status == trellis.StatusClaimed && t.ClaimedBy == h.claim.Worker && t.Attempts == h.claim.Attempt &&
		t.Lease != nil && t.Lease.DispatchSeq == h.claim.DispatchSeq && t.Lease.Delivery == h.claim.Delivery
}

// RecordHold records the claim of h if it is not on the log yet: the
// pool's handler is still running when its window passes, or the pool
// stops it (cancelled, drained) and records what happens as it would
// after an eager claim. It returns a conflict when the task changed
// meanwhile (cancelled while held). A claim found on the log as the hold
// made it (an earlier write given up on but stored later) is recorded.
func (q *Handler) RecordHold(ctx context.Context, h *Hold) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.isRecorded() {
		return nil
	}
	_, err := q.decide(ctx, h.state, h.claim.Worker, func(t *trellis.Task) (decision, error) {
		if h.ownClaim(t) {
			return decision{}, errOwnClaim
		}
		if !h.stillHeld(t) {
			return decision{}, errHoldLost
		}
		return decision{Claimed, h.claim}, nil
	})
	if errors.Is(err, errOwnClaim) {
		h.recorded = true
		return nil
	}
	if errors.Is(err, errHoldLost) {
		return trellis.Errorf(trellis.CodeConflict, "task %s changed before its claim by %s was recorded: %w", h.Task.TaskID, h.claim.Worker, err)
	}
	if err != nil {
		return err
	}
	h.recorded = true
	return nil
}

// finishHeld records an outcome (see finish). With a hold whose claim is
// not recorded yet, the outcome is decided on the task as claimed and
// carries the claim, in one event. A claim found on the log as the hold
// made it (a write given up on, stored later) is the hold's own: the
// outcome is then recorded after it; an outcome found on the log (an
// earlier attempt of this one, stored after it was given up on) is
// returned as recorded.
func (q *Handler) finishHeld(ctx context.Context, h *Hold, taskID, worker string, build func(*trellis.Task) decision, same func(events.Recorded) bool) (*trellis.Task, error) {
	if h == nil {
		return q.finish(ctx, taskID, worker, build, same)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.isRecorded() {
		return q.finish(ctx, taskID, worker, build, same)
	}
	if taskID != h.Task.TaskID || worker != h.claim.Worker {
		return nil, trellis.Errorf(trellis.CodeConflict, "task %s is held by %q, not %q", h.Task.TaskID, h.claim.Worker, worker)
	}
	next, err := q.decide(ctx, h.state, worker, func(t *trellis.Task) (decision, error) {
		if h.ownClaim(t) {
			return decision{}, errOwnClaim
		}
		if !h.stillHeld(t) {
			return decision{}, errHoldLost
		}
		claimed := *t
		applyClaim(&claimed, h.claim, *h.claim.At)
		d := build(&claimed)
		d.payload = carryClaim(d.payload, &h.claim)
		return d, nil
	})
	if errors.Is(err, errOwnClaim) {
		h.recorded = true
		return q.finish(ctx, taskID, worker, build, same)
	}
	if errors.Is(err, errHoldLost) {
		if t, ok, rerr := q.repeated(ctx, taskID, worker, same); rerr != nil {
			return nil, rerr
		} else if ok {
			h.recorded = true
			return t, nil
		}
		return nil, trellis.Errorf(trellis.CodeConflict, "task %s changed before its claim by %s was recorded: %w", taskID, worker, err)
	}
	if err != nil {
		return nil, err
	}
	h.recorded = true
	if next.Value.Status.Terminal() {
		q.tasks.Forget(taskID)
	}
	return next.Value, nil
}

// HeldTaskEnded reports whether the task of a hold whose claim was
// refused (the task changed before it was recorded) has ended on the log:
// only then may the pool acknowledge the hold's dispatch. JetStream
// acknowledges a dispatch by its stream sequence, whatever delivery the
// acknowledgement names: once the hold's lease may have expired, another
// pool may hold a later delivery of the same dispatch (and claim the task
// with it), and an acknowledgement would end that pool's lease. A
// dispatch left alone comes back after the lease and is skipped as stale.
func (q *Handler) HeldTaskEnded(ctx context.Context, h *Hold) bool {
	st, err := q.loadState(ctx, h.Task.TaskID)
	return err == nil && st.Value != nil && st.Value.Status.Terminal()
}

// carryClaim returns an outcome payload carrying claim c.
func carryClaim(payload any, c *ClaimedPayload) any {
	switch p := payload.(type) {
	case CompletedPayload:
		p.Claim = c
		return p
	case FailedPayload:
		p.Claim = c
		return p
	case AttemptFailedPayload:
		p.Claim = c
		return p
	}
	return payload
}

// ExpandClaims returns a task's history as its steps: each outcome that
// carries its claim (see Hold) is preceded by that claim as a claimed
// record of its own (the outcome's sequence and id, the claim's time, the
// claimant as actor), so a history reads "added, claimed, completed"
// however the claim was recorded. Folding the expanded history gives the
// same task as folding the log.
func ExpandClaims(recs []events.Recorded) []events.Recorded {
	out := make([]events.Recorded, 0, len(recs))
	for _, r := range recs {
		if c, ok := ClaimOf(r); ok {
			claim := r
			claim.Type, claim.Actor, claim.Prev, claim.PayloadRef = Claimed, c.Worker, "", nil
			if c.At != nil {
				claim.Time = *c.At
			}
			if data, err := json.Marshal(c); err == nil {
				claim.Payload = data
			}
			out = append(out, claim)
		}
		out = append(out, r)
	}
	return out
}
