package taskqueue

import (
	"context"
	"errors"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
)

// errAlreadyCancelled reports a cancel the task already carries.
var errAlreadyCancelled = errors.New("already cancelled")

// Cancel cancels a task. A scheduled, waiting or queued task is cancelled
// at once (it never runs); so is a task claimed without a lease (queue
// next): its claimant's next finish is refused. A task a worker pool holds
// is marked (cancel_requested): the pool stops its handler at the next
// heartbeat and records cancelled; should the pool die first, the claimant
// that finds its lease expired records it. Cancelling a cancelled (or
// marked) task again succeeds and changes nothing; a finished task is a
// conflict. Its dependants are cancelled in turn (see Resolver).
func (q *Handler) Cancel(ctx context.Context, req trellis.CancelRequest) (*trellis.Task, error) {
	if err := req.Normalize(); err != nil {
		return nil, err
	}
	actor := req.Actor
	if actor == "" {
		actor = "operator"
	}
	st, err := q.loadState(ctx, req.TaskID)
	if err != nil {
		return nil, err
	}
	ack := ""
	next, err := q.decide(ctx, st, actor, func(t *trellis.Task) (decision, error) {
		ack = ""
		switch t.Status {
		case trellis.StatusScheduled, trellis.StatusWaiting, trellis.StatusQueued:
			return decision{Cancelled, CancelPayload{Reason: req.Reason}}, nil
		case trellis.StatusClaimed:
			if t.Lease == nil || t.Lease.ExpiresAt != nil {
				// No pool runs it (an agent's claim): cancelled at once;
				// the agent's next heartbeat or outcome is refused.
				if t.Lease != nil {
					ack = t.Lease.Ack
				}
				return decision{Cancelled, CancelPayload{Reason: req.Reason, Worker: t.ClaimedBy}}, nil
			}
			if t.CancelRequested != nil {
				return decision{}, errAlreadyCancelled
			}
			return decision{CancelRequested, CancelPayload{Reason: req.Reason}}, nil
		case trellis.StatusCancelled:
			return decision{}, errAlreadyCancelled
		}
		return decision{}, trellis.Errorf(trellis.CodeConflict, "task %s is already %s", t.TaskID, t.Status)
	})
	if errors.Is(err, errAlreadyCancelled) {
		return next.Value.Clone(), nil
	}
	if err != nil {
		return nil, err
	}
	q.ackAgentDispatch(ack)
	if next.Value.Status.Terminal() {
		q.tasks.Forget(req.TaskID)
	}
	return next.Value.Clone(), nil
}

// CancelClaimed records that worker, the claimant, stopped a task marked
// for cancellation (a pool whose heartbeat found the mark). Repeating it
// succeeds and appends nothing.
func (q *Handler) CancelClaimed(ctx context.Context, taskID, worker string) (*trellis.Task, error) {
	if err := trellis.ValidateTaskID("task_id", taskID); err != nil {
		return nil, err
	}
	if err := trellis.ValidateWorkerID(worker); err != nil {
		return nil, err
	}
	return q.finish(ctx, taskID, worker, func(t *trellis.Task) decision {
		reason := ""
		if t.CancelRequested != nil {
			reason = t.CancelRequested.Reason
		}
		return decision{Cancelled, CancelPayload{Reason: reason, Worker: worker}}
	}, func(rec events.Recorded) bool {
		var p CancelPayload
		return rec.Type == Cancelled && rec.DecodePayload(&p) == nil && p.Worker == worker
	})
}

// CancelRequested reports whether a task this process holds has been
// marked for cancellation (read from the log: a pool asks at each
// heartbeat), with the reason.
func (q *Handler) CancelRequested(ctx context.Context, taskID string) (bool, string, error) {
	st, err := q.loadState(ctx, taskID)
	if err != nil {
		return false, "", err
	}
	t := st.Value
	if t == nil {
		// Pruned: it ended elsewhere long enough ago to leave the log.
		return true, "the task was pruned", nil
	}
	if t.CancelRequested != nil {
		return true, t.CancelRequested.Reason, nil
	}
	if t.Status == trellis.StatusCancelled && t.Cancellation != nil {
		return true, t.Cancellation.Reason, nil
	}
	return false, "", nil
}
