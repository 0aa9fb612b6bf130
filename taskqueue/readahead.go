package taskqueue

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// DispatchRead is a dispatch message read ahead of its hold
// (ReadDispatch): the task it names as the log had it when read. A worker
// pool reads the dispatches it fetched ahead of its free slots at once,
// so their reads of the log share requests (see readHeld) instead of each
// slot waiting for its own before its handler starts; HoldRead then holds
// or claims it.
type DispatchRead struct {
	msg jetstream.Msg
	d   *dispatch
	err error
	// readAt is when the read of the log that showed the task unchanged
	// was sent (see events.Store.LastSeqRead), and answered when its
	// answer came; zero when no such read was made (this process had the
	// task, or it could not be held).
	readAt, answered time.Time
}

// ReadDispatch reads a dispatch for HoldRead: its event, its task (from
// this process's cache, else from the dispatch and, for a first delivery
// of an add, the task's last event on the log), its queue's controls.
// A dispatch that names no task is handled here as ClaimDispatched
// handles it (acknowledged, terminated or delivered again later:
// Settled); an error is returned by HoldRead.
func (q *Handler) ReadDispatch(ctx context.Context, msg jetstream.Msg) *DispatchRead {
	r := &DispatchRead{msg: msg}
	r.d, r.err = q.dispatched(ctx, msg)
	if r.err == nil && r.d != nil && r.d.unread && holdable(r.d, r.d.st.Value) {
		// Built from the dispatch alone (this process never saw the task:
		// a worker process, say): the task may have been cancelled while
		// it waited, and a hold appends nothing that the log could refuse
		// before the handler runs. Decide on the task as the log has it.
		r.readAt, r.err = q.readHeld(ctx, r.d)
		r.answered = time.Now()
	}
	return r
}

// Settled reports whether reading the dispatch disposed of it (it names
// no task: acknowledged, terminated, or left to come back later): it is
// neither held nor given back.
func (r *DispatchRead) Settled() bool { return r.err == nil && r.d == nil }

// HoldRead is HoldDispatched for a dispatch read ahead (ReadDispatch).
// What may have changed since the read is taken again first:
//   - a task that may be held whose read of the log was answered longer
//     than fresh ago is read again: a pool holds a task only on a read
//     answered less than fresh before it takes the dispatch, so a task
//     cancelled before that read was sent never reaches its handler;
//   - a first delivery of an add that needed no read (this process had
//     the task) is taken from this process's tasks again, which follow
//     what it did since (a cancel here, say), and read from the log if
//     they no longer hold it;
//   - the queue's controls are taken again (cached for FlowCacheTTL, as
//     every claim takes them), so a rate or a limit set since governs
//     the claim.
//
// The hold's ReadAt says when the read of the log it rests on was sent.
func (q *Handler) HoldRead(ctx context.Context, r *DispatchRead, worker string, fresh time.Duration) (*Hold, error) {
	if r.err != nil || r.d == nil {
		return nil, r.err
	}
	d := r.d
	readAt := r.readAt
	// The controls first: whether the task may be held, and so whether
	// it must be read from the log, is decided on them as they are now.
	if err := q.flowFor(ctx, d.st, &d.flow); err != nil {
		return nil, err
	}
	var err error
	switch {
	case readAt.IsZero() && d.delivery == 1 && d.rec.Type == Added:
		if d.st, d.unread, err = q.dispatchedState(ctx, d.rec, d.delivery); err != nil {
			return nil, err
		}
		if d.unread && holdable(d, d.st.Value) {
			if readAt, err = q.readHeld(ctx, d); err != nil {
				return nil, err
			}
		}
	case !r.answered.IsZero() && time.Since(r.answered) > fresh && holdable(d, d.st.Value):
		if readAt, err = q.readHeld(ctx, d); err != nil {
			return nil, err
		}
	}
	if t := d.st.Value; holdable(d, t) {
		if d.leaseSpent() {
			d.giveBack(r.msg) // see dispatch.leaseSpent: a fresh delivery, with a whole lease
			return nil, nil
		}
		at := q.cfg.Now().UTC()
		c := ClaimedPayload{Worker: worker, Attempt: 1, Leased: true, DispatchSeq: d.rec.Seq, Delivery: d.delivery, At: &at}
		claimed := *t
		applyClaim(&claimed, c, at)
		return &Hold{Task: &claimed, ReadAt: readAt, state: d.st, claim: c}, nil
	}
	task, err := q.claimDispatched(ctx, r.msg, d, worker, claimMode{leased: true})
	if err != nil || task == nil {
		return nil, err
	}
	return &Hold{Task: task, recorded: true}, nil
}
