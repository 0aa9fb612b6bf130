package taskqueue

import (
	"context"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/command"
	"github.com/trellis/trellis/events"
)

// Done finishes a claimed task with a checkpoint. Only the claimant may
// finish it; finishing twice is a conflict. Usage beyond the budget is
// recorded as budget_exhausted.
func (q *Handler) Done(ctx context.Context, req trellis.DoneRequest) (*trellis.Task, error) {
	return q.done(ctx, nil, req)
}

// DoneHeld is Done for a task a worker pool holds (see Hold): when the
// claim is not recorded yet, the completion carries it.
func (q *Handler) DoneHeld(ctx context.Context, h *Hold, req trellis.DoneRequest) (*trellis.Task, error) {
	return q.done(ctx, h, req)
}

func (q *Handler) done(ctx context.Context, h *Hold, req trellis.DoneRequest) (*trellis.Task, error) {
	if err := req.Normalize(); err != nil {
		return nil, err
	}
	usage := trellis.Usage{StepsUsed: req.StepsUsed, ToolCallsUsed: req.ToolCallsUsed}
	return q.finishHeld(ctx, h, req.TaskID, req.Worker, func(t *trellis.Task) decision {
		return decision{Completed, CompletedPayload{
			Worker:          req.Worker,
			WhatWasDone:     req.WhatWasDone,
			WhatChanged:     req.WhatChanged,
			WhatNext:        req.WhatNext,
			Blockers:        req.Blockers,
			Citations:       req.Citations,
			Usage:           usage,
			BudgetExhausted: usage.Exceeds(t.Budget),
		}}
	}, func(rec events.Recorded) bool {
		var p CompletedPayload
		return rec.Type == Completed && rec.DecodePayload(&p) == nil &&
			p.Worker == req.Worker && p.WhatWasDone == req.WhatWasDone && slices.Equal(p.WhatChanged, req.WhatChanged) &&
			p.WhatNext == req.WhatNext && slices.Equal(p.Blockers, req.Blockers) && slices.Equal(p.Citations, req.Citations) &&
			p.Usage == usage
	})
}

// Fail ends a claimed task as failed with a checkpoint. Only the claimant
// may fail it. An explicit fail is terminal unless req.Retry asks for
// another attempt: then the task is queued again after a backoff, or is
// dead when its attempts are used up.
func (q *Handler) Fail(ctx context.Context, req trellis.FailRequest) (*trellis.Task, error) {
	return q.fail(ctx, nil, req)
}

// FailHeld is Fail for a task a worker pool holds (see Hold): when the
// claim is not recorded yet, the outcome carries it.
func (q *Handler) FailHeld(ctx context.Context, h *Hold, req trellis.FailRequest) (*trellis.Task, error) {
	return q.fail(ctx, h, req)
}

func (q *Handler) fail(ctx context.Context, h *Hold, req trellis.FailRequest) (*trellis.Task, error) {
	if err := req.Normalize(); err != nil {
		return nil, err
	}
	usage := trellis.Usage{StepsUsed: req.StepsUsed, ToolCallsUsed: req.ToolCallsUsed}
	return q.finishHeld(ctx, h, req.TaskID, req.Worker, func(t *trellis.Task) decision {
		exhausted := usage.Exceeds(t.Budget)
		if req.Retry {
			return q.failedAttempt(t, req.Worker, req.Error, req.WhatWasDone, req.Blockers, usage)
		}
		return decision{Failed, FailedPayload{
			Worker:          req.Worker,
			Error:           req.Error,
			WhatWasDone:     req.WhatWasDone,
			Blockers:        req.Blockers,
			Usage:           usage,
			BudgetExhausted: exhausted,
		}}
	}, func(rec events.Recorded) bool {
		switch {
		case rec.Type == Failed && !req.Retry:
			var p FailedPayload
			return rec.DecodePayload(&p) == nil && p.Worker == req.Worker && p.Error == req.Error &&
				p.WhatWasDone == req.WhatWasDone && slices.Equal(p.Blockers, req.Blockers) && p.Usage == usage
		case (rec.Type == AttemptFailed || rec.Type == Dead) && req.Retry:
			var p AttemptFailedPayload
			return rec.DecodePayload(&p) == nil && p.Worker == req.Worker && p.Error == req.Error &&
				p.WhatWasDone == req.WhatWasDone && slices.Equal(p.Blockers, req.Blockers) && p.Usage == usage
		}
		return false
	})
}

// failedAttempt decides what a failed attempt leads to: another attempt
// after a backoff, or the dead letter once the attempts are used up.
func (q *Handler) failedAttempt(t *trellis.Task, worker, msg, whatWasDone string, blockers []string, usage trellis.Usage) decision {
	p := AttemptFailedPayload{
		Worker: worker, Attempt: t.Attempts, Error: msg, WhatWasDone: whatWasDone,
		Blockers: blockers, Usage: usage, BudgetExhausted: usage.Exceeds(t.Budget),
	}
	if t.Attempts >= t.MaxAttempts {
		return decision{Dead, p}
	}
	at := q.cfg.Now().Add(q.cfg.RetryBackoff(t.Attempts)).UTC()
	p.RetryAt = &at
	return decision{AttemptFailed, p}
}

// Release gives a claimed task back unfinished (a draining worker): the
// task is queued again at once and the attempt does not count.
func (q *Handler) Release(ctx context.Context, taskID, worker, reason string) (*trellis.Task, error) {
	if err := trellis.ValidateTaskID("task_id", taskID); err != nil {
		return nil, err
	}
	if err := trellis.ValidateWorkerID(worker); err != nil {
		return nil, err
	}
	return q.finish(ctx, taskID, worker, func(*trellis.Task) decision {
		return decision{Released, ReleasedPayload{Worker: worker, Reason: reason}}
	}, func(rec events.Recorded) bool {
		var p ReleasedPayload
		return rec.Type == Released && rec.DecodePayload(&p) == nil && p.Worker == worker && p.Reason == reason
	})
}

// Retry queues a failed or dead task again with fresh attempts.
func (q *Handler) Retry(ctx context.Context, taskID, actor string) (*trellis.Task, error) {
	if err := trellis.ValidateTaskID("task_id", taskID); err != nil {
		return nil, err
	}
	st, err := q.loadState(ctx, taskID)
	if err != nil {
		return nil, err
	}
	next, err := q.decide(ctx, st, actor, func(t *trellis.Task) (decision, error) {
		if t.Status != trellis.StatusFailed && t.Status != trellis.StatusDead {
			return decision{}, trellis.Errorf(trellis.CodeConflict, "task %s is %s; only failed or dead tasks can be retried", t.TaskID, t.Status)
		}
		return decision{Requeued, RequeuedPayload{Reason: "retry of a " + string(t.Status) + " task"}}, nil
	})
	if err != nil {
		return nil, err
	}
	return next.Value, nil
}

// finish loads the task and appends the event build returns after checking
// that worker holds the claim. A finish the log already holds (same
// worker, same content: a retry after a lost reply) is not a conflict: it
// succeeds again with the task's current state, appending nothing.
func (q *Handler) finish(ctx context.Context, taskID, worker string, build func(*trellis.Task) decision, same func(events.Recorded) bool) (*trellis.Task, error) {
	st, err := q.current(ctx, taskID)
	if err != nil {
		return nil, err
	}
	ack := ""
	next, err := q.decide(ctx, st, worker, func(t *trellis.Task) (decision, error) {
		ack = ""
		if t.Lease != nil {
			ack = t.Lease.Ack
		}
		switch {
		case t.Status == trellis.StatusQueued:
			return decision{}, trellis.Errorf(trellis.CodeConflict, "task %s is queued, not claimed: claim it with queue next first", t.TaskID)
		case t.Status != trellis.StatusClaimed:
			return decision{}, trellis.Errorf(trellis.CodeConflict, "task %s is already %s", t.TaskID, t.Status)
		case t.ClaimedBy != worker:
			return decision{}, trellis.Errorf(trellis.CodeConflict, "task %s is claimed by worker %q, not %q", t.TaskID, t.ClaimedBy, worker)
		}
		return build(t), nil
	})
	if trellis.ErrorCode(err) == trellis.CodeConflict {
		if t, ok, rerr := q.repeated(ctx, taskID, worker, same); rerr != nil {
			return nil, rerr
		} else if ok {
			return t, nil
		}
	}
	if err != nil {
		return nil, err
	}
	q.ackAgentDispatch(ack)
	if next.Value.Status.Terminal() {
		q.tasks.Forget(taskID)
	}
	return next.Value, nil
}

// repeated reports whether the log already holds the finish same
// recognises, made by worker after its latest claim, and returns the
// task's current state. An older finish, from before worker claimed the
// task again, is not a repeat of this one.
func (q *Handler) repeated(ctx context.Context, taskID, worker string, same func(events.Recorded) bool) (*trellis.Task, bool, error) {
	recs, _, err := q.store.Load(ctx, events.StreamQueue, Filter(taskID))
	if err != nil {
		return nil, false, command.StoreError("load task", err)
	}
	for i := len(recs) - 1; i >= 0; i-- {
		r := recs[i]
		if same(r) {
			t, err := Fold(recs)
			if err != nil {
				return nil, false, trellis.Errorf(trellis.CodeInternal, "fold task %s: %w", taskID, err)
			}
			return t, true, nil
		}
		var c ClaimedPayload
		if r.Type == Claimed && r.DecodePayload(&c) == nil && c.Worker == worker {
			return nil, false, nil
		}
	}
	return nil, false, nil
}

// DefaultRetryBackoff is exponential backoff with jitter: 1 s before the
// second attempt, doubling per attempt up to 5 minutes, ±20 %.
func DefaultRetryBackoff(attempt int) time.Duration {
	return ExponentialBackoff(time.Second, 5*time.Minute)(attempt)
}

// ExponentialBackoff returns a backoff of base·2^(attempt-1), capped at max,
// with ±20 % jitter.
func ExponentialBackoff(base, max time.Duration) func(int) time.Duration {
	return func(attempt int) time.Duration {
		if attempt < 1 {
			attempt = 1
		}
		d := base
		for i := 1; i < attempt && d < max; i++ {
			d *= 2
		}
		if d > max {
			d = max
		}
		jitter := 0.8 + 0.4*rand.Float64()
		return time.Duration(float64(d) * jitter)
	}
}
