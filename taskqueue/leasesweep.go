package taskqueue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
)

// The agent-lease sweeper.
//
// An agent's claim (queue next) expires when its lease passes without a
// heartbeat. Whoever next receives the claim's dispatch records the
// expiry (see Next); on a queue nobody works, that would be never, and
// boards would show the claim held by a vanished agent for ever. So every
// server's reactor also sweeps: it follows the agent claims and their
// heartbeats on the log and, once a claim's lease has passed, records
// the expiry itself (ExpireAgentLease). The decision is read from the
// log and appended with the task's expected last sequence, so with
// several servers sweeping, and claimants receiving the dispatch, the
// expiry is recorded once, by whoever comes first.

// SweepEvery is how often a server looks for agent claims whose lease
// has passed.
const SweepEvery = time.Second

// sweepActor is the actor of the expiries the sweeper records.
const sweepActor = "trellis"

// errNoExpiry: the task holds no agent claim whose lease has passed.
var errNoExpiry = errors.New("no agent lease has passed")

// ExpireAgentLease records the expiry of task's agent claim (queue next)
// if its lease has passed: lease_expired (an attempt; the task is
// claimable again through its pending dispatch), or dead when its
// attempts are used up, or cancelled when a cancel was asked meanwhile.
// It returns when the claim's lease ends instead, when it is still
// running (zero when the task holds no agent claim: it ended, was
// released, expired already, or is a worker pool's).
func (q *Handler) ExpireAgentLease(ctx context.Context, taskID string) (time.Time, error) {
	st, err := q.loadState(ctx, taskID)
	if trellis.ErrorCode(err) == trellis.CodeNotFound {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, err
	}
	var until time.Time
	ack := ""
	next, err := q.decide(ctx, st, sweepActor, func(t *trellis.Task) (decision, error) {
		until, ack = time.Time{}, ""
		if t.Status != trellis.StatusClaimed || t.Lease == nil || t.Lease.ExpiresAt == nil {
			return decision{}, errNoExpiry
		}
		if now := q.cfg.Now(); now.Before(*t.Lease.ExpiresAt) {
			until = *t.Lease.ExpiresAt
			return decision{}, errNoExpiry
		}
		switch {
		case t.CancelRequested != nil:
			ack = t.Lease.Ack
			return decision{Cancelled, CancelPayload{Reason: t.CancelRequested.Reason}}, nil
		case t.Attempts >= t.MaxAttempts:
			ack = t.Lease.Ack
			return decision{Dead, AttemptFailedPayload{
				Worker: t.ClaimedBy, Attempt: t.Attempts,
				Error: fmt.Sprintf("lease of worker %s expired on attempt %d of %d", t.ClaimedBy, t.Attempts, t.MaxAttempts),
			}}, nil
		}
		// The claim's dispatch, pending until the lease's end, makes the
		// task claimable again.
		return decision{LeaseExpired, LeaseExpiredPayload{Worker: t.ClaimedBy, Attempt: t.Attempts}}, nil
	})
	if errors.Is(err, errNoExpiry) {
		return until, nil
	}
	if trellis.ErrorCode(err) == trellis.CodeNotFound {
		return time.Time{}, nil // pruned meanwhile: no claim to expire
	}
	if err != nil {
		return time.Time{}, err
	}
	if next.Value.Status.Terminal() {
		q.tasks.Forget(taskID)
	}
	q.ackAgentDispatch(ack) // ended: its dispatch is not needed any more
	return time.Time{}, nil
}

// leaseWatch is what the sweeper knows of live agent claims: when each
// one's lease ends, by task id, as the log last told it.
type leaseWatch struct {
	mu  sync.Mutex
	due map[string]time.Time
}

// sweepAgentLeases follows the agent claims on the log and records the
// expiry of each whose lease passes (see above), until ctx ends.
func (q *Handler) sweepAgentLeases(ctx context.Context, log *slog.Logger) {
	w := &leaseWatch{due: map[string]time.Time{}}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		q.followAgentClaims(ctx, w, log)
	}()
	defer wg.Wait()
	tick := time.NewTicker(SweepEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		now := time.Now()
		w.mu.Lock()
		var ids []string
		seen := map[string]time.Time{}
		for id, at := range w.due {
			if !at.After(now) {
				ids = append(ids, id)
				seen[id] = at
			}
		}
		w.mu.Unlock()
		for _, id := range ids {
			if ctx.Err() != nil {
				return
			}
			ectx, cancel := context.WithTimeout(ctx, 30*time.Second)
			until, err := q.ExpireAgentLease(ectx, id)
			cancel()
			if err != nil {
				log.Warn("agent lease sweep: expiry not recorded yet; trying again", "task", id, "err", err)
				continue
			}
			w.mu.Lock()
			if w.due[id].Equal(seen[id]) { // else the log told of a newer claim or heartbeat meanwhile
				if until.IsZero() {
					delete(w.due, id)
				} else {
					w.due[id] = until
				}
			}
			w.mu.Unlock()
		}
	}
}

// followAgentClaims keeps w.due up to date from the log: each agent
// claim's and heartbeat's lease end. It starts one longest lease back (a
// live claim has been claimed or heartbeated since), and follows on
// until ctx ends.
func (q *Handler) followAgentClaims(ctx context.Context, w *leaseWatch, log *slog.Logger) {
	start := time.Now().Add(-trellis.MaxAgentLease - time.Minute)
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		cons, err := q.store.JetStream().OrderedConsumer(ctx, events.StreamQueue, jetstream.OrderedConsumerConfig{
			FilterSubjects: []string{"trellis.queue.*.*." + Claimed, "trellis.queue.*.*." + LeaseExtended},
			DeliverPolicy:  jetstream.DeliverByStartTimePolicy,
			OptStartTime:   &start,
		})
		if err == nil {
			var it jetstream.MessagesContext
			if it, err = cons.Messages(); err == nil {
				stop := context.AfterFunc(ctx, it.Stop)
				for {
					msg, nerr := it.Next()
					if nerr != nil {
						err = nerr
						break
					}
					backoff = 100 * time.Millisecond
					if meta, merr := msg.Metadata(); merr == nil {
						start = meta.Timestamp // a new consumer goes on from here
						q.watchAgentClaim(ctx, w, msg, meta.Sequence.Stream)
					}
				}
				stop()
				it.Stop()
			}
		}
		if ctx.Err() != nil {
			return
		}
		log.Warn("agent lease sweep: following the claims", "err", err)
		_ = sleepUntil(ctx, time.Now().Add(backoff))
		backoff = min(2*backoff, 5*time.Second)
	}
}

// watchAgentClaim notes the lease end of one claimed or lease_extended
// event (a worker pool's claim, with no lease of its own, is skipped).
func (q *Handler) watchAgentClaim(ctx context.Context, w *leaseWatch, msg jetstream.Msg, seq uint64) {
	rec, err := events.Decode(events.StreamQueue, msg.Subject(), seq, msg.Data())
	if err != nil || rec.AggregateID == "" {
		return
	}
	if rec.PayloadRef != nil {
		if err := q.store.Resolve(ctx, &rec); err != nil {
			return
		}
	}
	var until time.Time
	switch rec.Type {
	case Claimed:
		var p ClaimedPayload
		if rec.DecodePayload(&p) != nil || p.LeaseMS <= 0 {
			return
		}
		until = rec.Time.Add(time.Duration(p.LeaseMS) * time.Millisecond)
	case LeaseExtended:
		var p LeaseExtendedPayload
		if rec.DecodePayload(&p) != nil {
			return
		}
		until = p.ExpiresAt
	default:
		return
	}
	w.mu.Lock()
	w.due[rec.AggregateID] = until
	w.mu.Unlock()
}
