package taskqueue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/command"
	"github.com/trellis/trellis/events"
)

// Next claims the oldest claimable task of the queue for the worker, or
// returns nil when none is queued. Tasks are dispatched by the queue's
// durable JetStream consumer, so concurrent callers receive distinct tasks;
// the claim itself is a checked append, so a task is claimed exactly once
// even if a dispatch is delivered twice.
//
// The claim holds a lease (req.LeaseSeconds, else the queue's default
// agent lease, see SetAgentLease): it records the dispatch and
// the lease, and the dispatch is left pending, to be delivered again when
// the lease ends (NakWithDelay). That redelivery, taken by any claimant of
// any process, is the lease's timer: before the lease's end (moved on by
// each Heartbeat) it is put off again; after it, the expiry is recorded
// (lease_expired, a checked append: once) and the task is claimed again
// or, its attempts used up, dead. JetStream keeps the pending dispatch
// across restarts, so no process needs to stay alive for the lease to
// end.
func (q *Handler) Next(ctx context.Context, req trellis.NextRequest) (*trellis.Task, error) {
	if err := req.Normalize(); err != nil {
		return nil, err
	}
	lease, err := q.agentLease(ctx, req)
	if err != nil {
		return nil, err
	}
	task, msg, err := q.claimNext(ctx, req.Queue, req.Worker, claimMode{agentLease: lease}, q.cfg.NextWait)
	if task == nil || err != nil {
		return nil, err
	}
	// The claim is recorded; a lost nak only means the dispatch is
	// delivered again after the consumer's ack wait and put off then.
	_ = msg.NakWithDelay(lease)
	return task, nil
}

// claimMode says what a claim holds: a worker pool's claim (leased) holds
// its dispatch as the lease; an agent's (agentLease > 0) holds a lease of
// its own, recorded with the claim; else the dispatch is acknowledged at
// once and the claim holds no lease.
type claimMode struct {
	leased     bool
	agentLease time.Duration
	ack        string // the dispatch's acknowledgement subject (agentLease)
}

// payload is the claimed event of attempt by worker through dispatch.
func (m claimMode) payload(worker string, attempt int, dispatch, delivery uint64) ClaimedPayload {
	return ClaimedPayload{Worker: worker, Attempt: attempt, Leased: m.leased || m.agentLease > 0,
		DispatchSeq: dispatch, Delivery: delivery, LeaseMS: m.agentLease.Milliseconds(), Ack: m.ack}
}

// RetryClaimAfter is when a dispatch whose claim failed (the store
// unavailable, a conflict after every retry) is offered again.
const RetryClaimAfter = 250 * time.Millisecond

// ClaimNext claims for worker the next claimable task of the queue, best
// priority lane first, waiting at most wait for one to arrive; it returns
// nil when none came. It returns the claim's dispatch message too: with
// leased the caller holds it as the lease (see ClaimDispatched), else it
// acknowledges it. Dispatches that yield no claim (stale, not due) are
// handled and the wait goes on.
func (q *Handler) ClaimNext(ctx context.Context, queue, worker string, leased bool, wait time.Duration) (*trellis.Task, jetstream.Msg, error) {
	return q.claimNext(ctx, queue, worker, claimMode{leased: leased}, wait)
}

// claimNext is ClaimNext for a claim of mode m.
func (q *Handler) claimNext(ctx context.Context, queue, worker string, m claimMode, wait time.Duration) (*trellis.Task, jetstream.Msg, error) {
	lanes, err := q.Lanes(ctx, queue)
	if err != nil {
		return nil, nil, err
	}
	deadline := time.Now().Add(wait)
	for {
		msg, err := nextDispatch(ctx, lanes, max(time.Until(deadline), time.Millisecond))
		if err != nil {
			return nil, nil, command.StoreError("fetch from queue "+queue, err)
		}
		if msg == nil {
			return nil, nil, nil
		}
		d, err := q.dispatched(ctx, msg)
		var task *trellis.Task
		if err == nil && d != nil {
			task, err = q.claimDispatched(ctx, msg, d, worker, m)
		}
		if err != nil {
			// Offered again soon, not after the whole ack wait.
			_ = msg.NakWithDelay(RetryClaimAfter)
			return nil, nil, err
		}
		if task != nil {
			return task, msg, nil
		}
		if time.Until(deadline) < time.Millisecond || ctx.Err() != nil {
			return nil, nil, nil // the dispatch was stale or not due yet; it is handled
		}
	}
}

// nextDispatch returns one dispatch from the best priority lane that has
// one: first what each lane holds now, best lane first; else the first
// that arrives on any lane within wait, returned as it arrives
// (dispatches that the other lanes' pulls bring later are given back), or
// nil.
func nextDispatch(ctx context.Context, lanes []jetstream.Consumer, wait time.Duration) (jetstream.Msg, error) {
	for _, lane := range lanes {
		batch, err := lane.FetchNoWait(1)
		if err != nil {
			return nil, err
		}
		for msg := range batch.Messages() {
			return msg, nil
		}
	}
	type arrival struct {
		msg jetstream.Msg
		err error
	}
	arrivals := make(chan arrival, len(lanes))
	for _, lane := range lanes {
		go func() {
			msg, err := fetchOne(ctx, lane, wait)
			arrivals <- arrival{msg, err}
		}()
	}
	var firstErr error
	for left := len(lanes); left > 0; left-- {
		a := <-arrivals
		if a.msg == nil {
			if a.err != nil && firstErr == nil {
				firstErr = a.err
			}
			continue
		}
		// The first arrival is the caller's at once; the other lanes'
		// pulls end within wait, and what they bring is given back so
		// that someone else takes it.
		go func(left int) {
			for ; left > 0; left-- {
				if a := <-arrivals; a.msg != nil {
					_ = a.msg.Nak()
				}
			}
		}(left - 1)
		return a.msg, nil
	}
	return nil, firstErr
}

// fetchOne returns one dispatch message, waiting at most wait for one, or
// nil. (A no-wait fetch is not enough: the server answers it from the
// consumer's pending count, which learns of a just-stored message
// asynchronously.)
func fetchOne(ctx context.Context, cons jetstream.Consumer, wait time.Duration) (jetstream.Msg, error) {
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(wait))
	// A consumer that was just created or moved (a cluster electing its
	// leader, a restarting server) answers no responders for a moment.
	for tries := 0; errors.Is(err, nats.ErrNoResponders) && tries < 40 && ctx.Err() == nil; tries++ {
		time.Sleep(50 * time.Millisecond)
		batch, err = cons.Fetch(1, jetstream.FetchMaxWait(wait))
	}
	if err != nil {
		return nil, err
	}
	for msg := range batch.Messages() {
		return msg, nil
	}
	if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) {
		return nil, err
	}
	return nil, nil
}

// notYet reports a queued task whose retry is not due: its dispatch is
// delivered again after wait.
type notYet struct{ wait time.Duration }

func (n notYet) Error() string { return fmt.Sprintf("retry not due for %s", n.wait) }

var errNotClaimable = errors.New("task is not claimable")

// errSuperseded: the dispatch read is a stale delivery of the dispatch
// the task's claim holds (a later delivery was claimed while this one
// waited in a stalled process): only the current delivery's holder may
// acknowledge it.
var errSuperseded = errors.New("a later delivery of this dispatch holds the task")

// errOwnDispatchClaim: the task is claimed by this worker with this very
// delivery of the dispatch (see claimDispatched).
var errOwnDispatchClaim = errors.New("the task is claimed by this delivery, for this worker")

// ownDelivery reports whether t's claim (through the dispatch being
// decided) was made by worker with this delivery: an agent's claim
// records its delivery's acknowledgement subject, unique to it (a
// server that lost its consumer state counts deliveries again, and agents
// may share a name); a pool's records its delivery count, with the
// pool's own worker name (<pool>/<slot>).
func ownDelivery(t *trellis.Task, worker string, delivery uint64, ack string) bool {
	if t.ClaimedBy != worker || t.Lease.Delivery != delivery {
		return false
	}
	if t.Lease.ExpiresAt != nil || t.Lease.Ack != "" {
		return t.Lease.Ack != "" && t.Lease.Ack == ack
	}
	return true
}

// ClaimDispatched claims the task a dispatch message names for worker.
//
// It returns the claimed task, or nil when the message is handled without
// a claim: a stale dispatch (the task was claimed through another dispatch
// or has ended) is acknowledged; a retry that is not due yet is delivered
// again when it is (NakWithDelay); a task whose lease ran out too often is
// declared dead. With leased, the claim records the dispatch it holds: the
// caller keeps the message unacknowledged as the lease (heartbeating with
// InProgress) and acknowledges it when the task ends; a later redelivery of
// the same dispatch then reveals that the lease expired, and the history
// shows "lease_expired" before the next claim. Without leased the caller
// acknowledges the message at once.
func (q *Handler) ClaimDispatched(ctx context.Context, msg jetstream.Msg, worker string, leased bool) (*trellis.Task, error) {
	d, err := q.dispatched(ctx, msg)
	if err != nil || d == nil {
		return nil, err
	}
	return q.claimDispatched(ctx, msg, d, worker, claimMode{leased: leased})
}

// dispatch is a dispatch message read: the event it carries, the task's
// state as of it, its delivery count and the flow controls of its queue.
type dispatch struct {
	rec      events.Recorded
	st       taskState
	delivery uint64
	flow     *trellis.QueueControls
	// unread: st was built from the dispatch message alone (a first
	// delivery this process had not cached), not read from the log.
	unread bool
	// lease is the claim consumer's lease (AckWait) and deadline when it
	// ends for this delivery, at the latest (counted from when this
	// process began to read the dispatch: zero when unknown).
	lease    time.Duration
	deadline time.Time
}

// leaseSpent reports whether a worker pool's claim of d would start with
// too little of its dispatch's lease left: less than half. A pool's first
// heartbeat comes a third of a lease after its handler starts, so a claim
// recorded later than that (a store that stalled between the fetch and
// the claim's append) would lose its dispatch before it and the task
// would run twice.
func (d *dispatch) leaseSpent() bool {
	return !d.deadline.IsZero() && time.Until(d.deadline) < d.lease/2
}

// giveBack offers a dispatch whose claim will not start again at once
// (Nak) while this delivery may still be the current one: an eighth of
// its lease left at least. Past that, its lease may have ended (the
// process or its store stalled), and JetStream may have delivered it
// again to another claimant that holds the task with it now: a nak,
// which JetStream applies by the dispatch's stream sequence whatever
// delivery it names, would cut that claimant's lease short. It is then
// left alone; still pending, it comes back when its lease ends.
func (d *dispatch) giveBack(msg jetstream.Msg) {
	if d.deadline.IsZero() || time.Until(d.deadline) > d.lease/8 {
		_ = msg.Nak()
	}
}

// errLeaseSpent refuses a claim whose dispatch's lease is nearly spent
// (see dispatch.leaseSpent): the dispatch is offered again at once.
var errLeaseSpent = errors.New("the dispatch's lease is nearly spent")

// dispatched reads a dispatch message, or returns nil when it names no
// task (it is terminated: never delivered again).
func (q *Handler) dispatched(ctx context.Context, msg jetstream.Msg) (*dispatch, error) {
	received := time.Now() // the dispatch came before: its lease ends no earlier than this plus the lease
	meta, err := msg.Metadata()
	if err != nil {
		return nil, command.StoreError("dispatch metadata", err)
	}
	rec, err := events.Decode(events.StreamQueue, msg.Subject(), meta.Sequence.Stream, msg.Data())
	if err != nil {
		_ = msg.Term() // not an event: never deliver it again
		return nil, trellis.Errorf(trellis.CodeInternal, "undecodable dispatch %s: %w", msg.Subject(), err)
	}
	if err := q.store.Resolve(ctx, &rec); err != nil {
		return nil, command.StoreError("dispatch payload", err)
	}
	d := &dispatch{rec: rec, delivery: meta.NumDelivered}
	if d.st, d.unread, err = q.dispatchedState(ctx, rec, d.delivery); err != nil {
		if trellis.ErrorCode(err) == trellis.CodeNotFound {
			// The dispatch is an event of the task: a load that finds
			// nothing was answered by a replica that has not applied it
			// yet. Never terminate it (the task would stay queued for
			// ever): deliver it again later.
			_ = msg.NakWithDelay(time.Second)
			return nil, nil
		}
		return nil, err
	}
	if d.st.Value == nil && d.st.Exists() {
		// The task's tombstone: a prune removed it (its dispatch is
		// still in the log while the removal runs). It never runs again.
		_ = msg.Ack()
		return nil, nil
	}
	if err := q.flowFor(ctx, d.st, &d.flow); err != nil {
		return nil, err
	}
	if d.lease = q.dispatchLease(ctx, d); d.lease > 0 {
		d.deadline = received.Add(d.lease)
	}
	return d, nil
}

// dispatchLease is the lease of a dispatch's claim consumer: its priority
// lane's AckWait as this process knows it, or the queue's lease by its
// controls when shorter (being switched to; 0 when neither is known).
func (q *Handler) dispatchLease(ctx context.Context, d *dispatch) time.Duration {
	t := d.st.Value
	if t == nil {
		return 0
	}
	var lease time.Duration
	if lanes, err := q.Lanes(ctx, t.Queue); err == nil && t.Priority >= 1 && t.Priority <= len(lanes) {
		lease = lanes[t.Priority-1].CachedInfo().Config.AckWait
	}
	if d.flow != nil {
		if l := d.flow.Lease(time.Now()); l > 0 && (lease == 0 || l < lease) {
			lease = l
		}
	}
	return lease
}

// claimDispatched claims the task of a read dispatch (see ClaimDispatched).
func (q *Handler) claimDispatched(ctx context.Context, msg jetstream.Msg, d *dispatch, worker string, m claimMode) (*trellis.Task, error) {
	leased := m.leased
	if m.agentLease > 0 {
		m.ack = msg.Reply()
	}
	st, flow, dispatch, delivery := d.st, d.flow, d.rec.Seq, d.delivery
	for {
		var expired, own *trellis.Task
		next, err := q.decide(ctx, st, worker, func(t *trellis.Task) (decision, error) {
			expired, own = nil, nil
			switch t.Status {
			case trellis.StatusQueued:
				if t.CancelRequested != nil {
					return decision{Cancelled, CancelPayload{Reason: t.CancelRequested.Reason}}, nil
				}
				if t.RetryAt != nil {
					if wait := t.RetryAt.Sub(q.cfg.Now()); wait > 0 {
						return decision{}, notYet{wait}
					}
				}
				if leased && d.leaseSpent() {
					return decision{}, errLeaseSpent
				}
				if flow != nil && gated(flow, t, leased) {
					return decision{}, errGated
				}
				return decision{Claimed, m.payload(worker, t.Attempts+1, dispatch, delivery)}, nil
			case trellis.StatusClaimed:
				if t.Lease == nil || t.Lease.DispatchSeq != dispatch {
					return decision{}, errNotClaimable
				}
				if ownDelivery(t, worker, delivery, msg.Reply()) {
					// Our own claim of this very delivery: an append
					// reported failed (a leader changing under it) was
					// stored after all, and this is the command deciding
					// again. It is ours to run.
					own = t
					return decision{}, errOwnDispatchClaim
				}
				if t.Lease.ExpiresAt != nil {
					// An agent's claim: its lease's end is on the log (a
					// heartbeat may have moved it since the dispatch was
					// put off), and no process holds the dispatch, so any
					// delivery of it decides, whatever its count (a
					// server that lost its consumer state counts again).
					if wait := t.Lease.ExpiresAt.Sub(q.cfg.Now()); wait > 0 {
						return decision{}, notYet{wait}
					}
				} else if delivery <= t.Lease.Delivery {
					return decision{}, errSuperseded
				}
				// The dispatch the claimant held came back: its lease expired.
				expired = t
				if t.CancelRequested != nil {
					// Its pool died before it could stop it: cancelled.
					return decision{Cancelled, CancelPayload{Reason: t.CancelRequested.Reason}}, nil
				}
				if t.Attempts >= t.MaxAttempts {
					return decision{Dead, AttemptFailedPayload{
						Worker: t.ClaimedBy, Attempt: t.Attempts,
						Error: fmt.Sprintf("lease of worker %s expired on attempt %d of %d", t.ClaimedBy, t.Attempts, t.MaxAttempts),
					}}, nil
				}
				return decision{LeaseExpired, LeaseExpiredPayload{
					Worker: t.ClaimedBy, Attempt: t.Attempts, Delivery: delivery,
				}}, nil
			}
			return decision{}, errNotClaimable // scheduled, waiting or ended
		})
		claimed := next.Value
		var ny notYet
		if errors.Is(err, errGated) {
			next, err = q.claimGated(ctx, st.ID, worker, m, dispatch, delivery, flow)
			claimed = next.Value
			if errors.Is(err, errOwnDispatchClaim) {
				own = claimed
			}
		}
		switch {
		case errors.As(err, &ny):
			_ = msg.NakWithDelay(ny.wait)
			return nil, nil
		case errors.Is(err, errNotClaimable):
			_ = msg.Ack()
			return nil, nil
		case errors.Is(err, errOwnDispatchClaim):
			if leased && d.leaseSpent() {
				d.giveBack(msg) // recorded too late to start: see below
				return nil, nil
			}
			return own.Clone(), nil
		case errors.Is(err, errSuperseded):
			// Another claimant holds this dispatch's current delivery:
			// JetStream acknowledges by stream sequence, so an
			// acknowledgement (or a nak) of this stale delivery would end
			// or cut short that claimant's lease. Leave it alone.
			return nil, nil
		case errors.Is(err, errLeaseSpent):
			d.giveBack(msg) // a fresh delivery, with a whole lease
			return nil, nil
		case err != nil:
			return nil, err
		case claimed.Status == trellis.StatusCancelled:
			q.tasks.Forget(claimed.TaskID)
			_ = msg.Term()
			return nil, nil
		case expired != nil && claimed.Status == trellis.StatusDead:
			_ = msg.Term()
			return nil, nil
		case expired != nil:
			st = next // queued again: now claim it
			continue
		case leased && d.leaseSpent():
			// Recorded, but too late to start (the append stalled): the
			// dispatch, offered again at once, records the claim's expiry
			// and gives the task to the next claimant.
			d.giveBack(msg)
			return nil, nil
		}
		return claimed, nil
	}
}

// flowFor reads the flow controls of the task's queue into *flow before
// a claim is decided (nil when they cannot be read: the claim then waits
// for the next delivery).
func (q *Handler) flowFor(ctx context.Context, st taskState, flow **trellis.QueueControls) error {
	queue := ""
	if st.Value != nil {
		queue = st.Value.Queue
	}
	if queue == "" {
		return nil
	}
	c, err := q.flow(ctx, queue)
	if err != nil {
		return err
	}
	*flow = c
	return nil
}

// dispatchedState returns the task a dispatch names and its last sequence.
// A first delivery of an add is usually the task's only event, so its
// sequence is taken for the aggregate's last sequence and no load is
// needed (unread is then true): a claim appended from it is checked
// against the log anyway, but a decision that appends nothing first (a
// hold, see HoldRead) must read the log before it trusts it.
func (q *Handler) dispatchedState(ctx context.Context, rec events.Recorded, delivery uint64) (st taskState, unread bool, err error) {
	if st, ok := q.tasks.Cached(rec.AggregateID); ok && st.Seq >= rec.Seq {
		return st, false, nil
	}
	if rec.Type == Added && delivery == 1 {
		task, err := Apply(nil, rec)
		if err != nil {
			return taskState{}, false, trellis.Errorf(trellis.CodeInternal, "dispatch %s: %w", rec.Subject, err)
		}
		// The add is the head of the task's hash chain: no read of it.
		return taskState{ID: rec.AggregateID, Value: task, Seq: rec.Seq, Head: events.Hash(rec.Envelope)}, true, nil
	}
	st, err = q.loadState(ctx, rec.AggregateID)
	return st, false, err
}
