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
	// was sent (see events.Store.LastSeqRead; zero: the task needed no
	// read, this process knowing it).
	readAt time.Time
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
	}
	return r
}

// Settled reports whether reading the dispatch disposed of it (it names
// no task: acknowledged, terminated, or left to come back later): it is
// neither held nor given back.
func (r *DispatchRead) Settled() bool { return r.err == nil && r.d == nil }

// HoldRead is HoldDispatched for a dispatch read ahead (ReadDispatch). A
// task that may be held whose read is older than fresh is read again
// first: a pool holds a task only on a read of the log younger than
// fresh, so a task cancelled before that never reaches its handler. The
// hold's ReadAt says when that read was sent.
func (q *Handler) HoldRead(ctx context.Context, r *DispatchRead, worker string, fresh time.Duration) (*Hold, error) {
	if r.err != nil || r.d == nil {
		return nil, r.err
	}
	d := r.d
	readAt := r.readAt
	if !readAt.IsZero() && time.Since(readAt) > fresh && holdable(d, d.st.Value) {
		var err error
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
