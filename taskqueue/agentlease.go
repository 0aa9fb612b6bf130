package taskqueue

import (
	"context"
	"time"

	"github.com/trellis/trellis"
)

// AgentLeaseSet sets the queue's default agent lease: the lease of a
// queue next claim made without one (a control event).
const AgentLeaseSet = "agent_lease_set"

// AgentLeasePayload is the payload of an agent_lease_set event (0: the
// default, trellis.DefaultAgentLease).
type AgentLeasePayload struct {
	LeaseMillis int64 `json:"lease_ms"`
}

// SetAgentLease sets the lease of the queue's queue next claims made
// without one (0 restores trellis.DefaultAgentLease; else 1 s to 24 h). A
// claim already made keeps its lease. It returns once every process's
// claims use it.
func (q *Handler) SetAgentLease(ctx context.Context, queue, actor string, lease time.Duration) (*trellis.QueueControls, error) {
	req := trellis.ControlRequest{Queue: queue, Action: "agent_lease", LeaseSeconds: lease.Seconds()}
	if err := req.Normalize(); err != nil {
		return nil, err
	}
	return q.control(ctx, queue, actor, AgentLeaseSet, AgentLeasePayload{LeaseMillis: lease.Milliseconds()})
}

// agentLease is the lease of a queue next claim: the request's, else the
// queue's default agent lease (controls read at most FlowCacheTTL ago).
func (q *Handler) agentLease(ctx context.Context, req trellis.NextRequest) (time.Duration, error) {
	if req.LeaseSeconds > 0 {
		return req.AgentLease(), nil
	}
	c, err := q.flow(ctx, req.Queue)
	if err != nil {
		return 0, err
	}
	return c.AgentLease(), nil
}

// Heartbeat extends the lease of a task the worker claimed with queue
// next: the lease now ends the claim's lease from now (a lease_extended
// event, a checked append). It is refused (conflict) when the task is not
// claimed by the worker, when the claim's lease has already run out (its
// expiry may not be recorded yet: the worker lost the task all the same),
// and for a worker pool's claim, whose lease is the dispatch it holds.
func (q *Handler) Heartbeat(ctx context.Context, req trellis.HeartbeatRequest) (*trellis.Task, error) {
	if err := req.Normalize(); err != nil {
		return nil, err
	}
	st, err := q.current(ctx, req.TaskID)
	if err != nil {
		return nil, err
	}
	next, err := q.decide(ctx, st, req.Worker, func(t *trellis.Task) (decision, error) {
		now := q.cfg.Now()
		switch {
		case t.Status == trellis.StatusQueued && t.Attempts > 0:
			return decision{}, trellis.Errorf(trellis.CodeConflict, "task %s is queued again, not claimed: its claim's lease ran out or it was released", t.TaskID)
		case t.Status != trellis.StatusClaimed:
			return decision{}, trellis.Errorf(trellis.CodeConflict, "task %s is %s, not claimed: there is no lease to extend", t.TaskID, t.Status)
		case t.ClaimedBy != req.Worker:
			return decision{}, trellis.Errorf(trellis.CodeConflict, "task %s is claimed by worker %q, not %q", t.TaskID, t.ClaimedBy, req.Worker)
		case t.Lease == nil || t.Lease.ExpiresAt == nil:
			return decision{}, trellis.Errorf(trellis.CodeConflict, "task %s is held by a worker pool, whose lease is its dispatch: it heartbeats through the pool", t.TaskID)
		case !now.Before(*t.Lease.ExpiresAt):
			return decision{}, trellis.Errorf(trellis.CodeConflict, "the lease of worker %q on task %s ran out at %s: the task is no longer its own", req.Worker, t.TaskID, t.Lease.ExpiresAt.UTC().Format(time.RFC3339))
		}
		until := now.Add(time.Duration(t.Lease.LeaseMS) * time.Millisecond).UTC()
		return decision{LeaseExtended, LeaseExtendedPayload{Worker: req.Worker, ExpiresAt: until}}, nil
	})
	if err != nil {
		return nil, err
	}
	return next.Value.Clone(), nil
}

// ReleaseClaim gives a claimed task back to its queue: an operator's act
// on a claim whose claimant is gone or stuck. The task is queued again at
// once (a released event, which is a dispatch: any claimant takes it) and
// the attempt does not count. A worker pool's claim is refused: the pool
// is running it (cancel it with queue cancel, or let its lease run out).
func (q *Handler) ReleaseClaim(ctx context.Context, req trellis.ReleaseRequest) (*trellis.Task, error) {
	if err := req.Normalize(); err != nil {
		return nil, err
	}
	actor := req.Actor
	if actor == "" {
		actor = "operator"
	}
	reason := req.Reason
	if reason == "" {
		reason = "released by " + actor
	}
	st, err := q.loadState(ctx, req.TaskID)
	if err != nil {
		return nil, err
	}
	ack := ""
	next, err := q.decide(ctx, st, actor, func(t *trellis.Task) (decision, error) {
		ack = ""
		switch {
		case t.Status != trellis.StatusClaimed:
			return decision{}, trellis.Errorf(trellis.CodeConflict, "task %s is %s, not claimed: there is nothing to release", t.TaskID, t.Status)
		case t.Lease != nil && t.Lease.ExpiresAt == nil:
			return decision{}, trellis.Errorf(trellis.CodeConflict, "task %s is run by worker pool member %q under its lease: cancel it (queue cancel) or let the lease run out", t.TaskID, t.ClaimedBy)
		}
		if t.Lease != nil {
			ack = t.Lease.Ack
		}
		return decision{Released, ReleasedPayload{Worker: t.ClaimedBy, Reason: reason}}, nil
	})
	if err != nil {
		return nil, err
	}
	q.ackAgentDispatch(ack)
	return next.Value.Clone(), nil
}

// ackAgentDispatch acknowledges the dispatch an agent's claim left
// pending, once the claim has ended (an outcome, a release, a cancel):
// nothing needs it any more. Best effort: a lost acknowledgement only
// means the dispatch comes back when the lease ends and is acknowledged
// then as stale.
func (q *Handler) ackAgentDispatch(ack string) {
	if ack == "" {
		return
	}
	_ = q.store.Conn().Publish(ack, []byte("+ACK"))
}
