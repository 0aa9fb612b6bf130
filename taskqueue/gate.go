package taskqueue

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/command"
	"github.com/trellis/trellis/events"
)

// Flow control at claim time.
//
// A queue's rate (claims per second for the whole cluster), its global
// limit (leased tasks in flight) and its per-key limit (tasks running per
// concurrency key) are enforced when a task is claimed, by aggregates in
// the log: the queue's gate (trellis.queue.<queue>._gate) holds the rate's
// state (GCRA: the theoretical arrival time of the next claim) and the
// claims holding one of the global limit's slots; a key's gate
// (trellis.queue.<queue>._key.<hash>) holds the claims running with that
// key. A gated claim appends the gate's "admitted" event and the task's
// "claimed" event as one atomic batch, each checked against its own
// aggregate (command.Atomic), so two claimants on two servers can never
// both take the last slot or the same rate token. A slot is freed lazily:
// a holder whose task is no longer under that claim (done, failed,
// released, expired) is dropped by the next claimant that needs the room,
// and named in its event. A claim refused by a gate is not an error: the
// dispatch is delivered again when the gate may let it through
// (NakWithDelay).

// Admitted is the event type of a gate letting a claim through.
const Admitted = "admitted"

// Held is the event type of a unique key held by a task.
const Held = "held"

// FlowCacheTTL bounds how long a process decides claims on a queue's flow
// controls as it last read them: a rate or limit set elsewhere applies to
// this process's claims within it (the command that sets one waits it out
// before returning).
const FlowCacheTTL = time.Second

// Holder is a claim holding a concurrency slot.
type Holder struct {
	TaskID    string    `json:"task_id"`
	ClaimedAt time.Time `json:"claimed_at"`
}

// Gate is the state of a queue's gate or of a concurrency key's gate.
type Gate struct {
	// TAT is the rate's theoretical arrival time: a claim conforms while
	// TAT - now <= (burst-1)/rate.
	TAT *time.Time `json:"tat,omitempty"`
	// Holders are the claims holding a slot.
	Holders []Holder `json:"holders,omitempty"`
	// since counts the events folded after the last snapshot.
	since int
}

// AdmittedPayload is the payload of an admitted event.
type AdmittedPayload struct {
	TaskID    string    `json:"task_id"`
	Worker    string    `json:"worker"`
	ClaimedAt time.Time `json:"claimed_at"`
	// Slot is set when the claim takes a concurrency slot.
	Slot bool `json:"slot,omitempty"`
	// TAT is the rate's new theoretical arrival time.
	TAT *time.Time `json:"tat,omitempty"`
	// Freed lists holders found no longer running: their slots are free.
	Freed []string `json:"freed,omitempty"`
}

// HeldPayload is the payload of a held event: the task holding a unique
// key, until Until (absent: while the task is not finished).
type HeldPayload struct {
	TaskID string     `json:"task_id"`
	Until  *time.Time `json:"until,omitempty"`
}

// UniqueHold is the state of a unique key: the task holding it.
type UniqueHold struct {
	TaskID string     `json:"task_id"`
	Until  *time.Time `json:"until,omitempty"`
	// since counts the events folded since the key's last snapshot (see
	// UniqueSnapshotEvery).
	since int
}

// keyHash is the subject token of a key: 32 hex of its SHA-256, so any key
// text fits a token.
func keyHash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:16])
}

// GateID is the aggregate id of a queue's gate.
func GateID(queue string) string { return queue + "._gate" }

// KeyGateID is the aggregate id of a concurrency key's gate.
func KeyGateID(queue, key string) string { return queue + "._key." + keyHash(key) }

// UniqueID is the aggregate id of a unique key.
func UniqueID(queue, key string) string { return queue + "._unique." + keyHash(key) }

// infraFilter is the subject filter of a queue-stream aggregate whose id
// is its subject's middle part (gates, keys, unique keys).
func infraFilter(id string) string { return "trellis.queue." + id + ".>" }

func infraSubject(id, typ string) string { return "trellis.queue." + id + "." + typ }

var gateKind = command.Kind[*Gate]{
	Name:   "gate",
	Stream: events.StreamQueue,
	Filter: infraFilter,
	Fold: func(g *Gate, rec events.Recorded) (*Gate, error) {
		if rec.Type == Snapshot {
			return foldGateSnapshot(rec)
		}
		if g == nil {
			g = &Gate{}
		}
		g.since++
		if rec.Type != Admitted {
			return g, nil
		}
		var p AdmittedPayload
		if err := rec.DecodePayload(&p); err != nil {
			return g, err
		}
		if len(p.Freed) > 0 {
			kept := g.Holders[:0:0]
			for _, h := range g.Holders {
				if !slices.Contains(p.Freed, h.TaskID) {
					kept = append(kept, h)
				}
			}
			g.Holders = kept
		}
		if p.Slot {
			g.Holders = append(g.Holders, Holder{TaskID: p.TaskID, ClaimedAt: p.ClaimedAt.UTC()})
		}
		if p.TAT != nil {
			tat := p.TAT.UTC()
			g.TAT = &tat
		}
		return g, nil
	},
	Clone:    cloneGate,
	Schema:   Schema,
	Snapshot: gateSnapshotSubject,
}

var uniqueKind = command.Kind[*UniqueHold]{
	Name:   "unique key",
	Stream: events.StreamQueue,
	Filter: infraFilter,
	Fold:   foldUniqueEvent,
	Clone: func(u *UniqueHold) *UniqueHold {
		if u == nil {
			return nil
		}
		c := *u
		c.Until = utcPtr(u.Until)
		return &c
	},
	Schema:   Schema,
	Snapshot: uniqueSnapshotSubject,
}

// flowCache keeps each queue's controls as this process last read them.
type flowCache struct {
	mu      sync.Mutex
	entries map[string]flowEntry
}

type flowEntry struct {
	c  *trellis.QueueControls
	at time.Time
}

// flow returns the queue's controls, read at most FlowCacheTTL ago.
func (q *Handler) flow(ctx context.Context, queue string) (*trellis.QueueControls, error) {
	now := time.Now()
	q.flows.mu.Lock()
	e, ok := q.flows.entries[queue]
	q.flows.mu.Unlock()
	if ok && now.Sub(e.at) < FlowCacheTTL {
		return e.c, nil
	}
	c, _, err := q.Controls(ctx, queue)
	if err != nil {
		return nil, err
	}
	q.flows.mu.Lock()
	q.flows.entries[queue] = flowEntry{c: c, at: now}
	q.flows.mu.Unlock()
	return c, nil
}

// forgetFlow drops the cached controls of a queue (changed here).
func (q *Handler) forgetFlow(queue string) {
	q.flows.mu.Lock()
	delete(q.flows.entries, queue)
	q.flows.mu.Unlock()
}

// gated reports whether a claim of t must pass the queue's gates.
func gated(c *trellis.QueueControls, t *trellis.Task, leased bool) bool {
	return c.RatePerSecond > 0 || (leased && c.MaxInFlight > 0) || (c.PerKey > 0 && t.ConcurrencyKey != "")
}

// errGated tells the claim path that the claim must go through the gates.
var errGated = errors.New("claim must pass the queue's gates")

// slotWait is how long a claim refused for want of a slot waits before its
// dispatch is delivered again: longer the more often it was refused, at
// most 5 s, with jitter.
func slotWait(delivery uint64) time.Duration {
	d := time.Duration(min(delivery, 20)) * 250 * time.Millisecond
	d = min(d, 5*time.Second)
	return d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
}

// claimGated claims task id for worker through the queue's gates (see
// above): it returns the claimed task, or notYet when a gate refuses for
// now, or errNotClaimable when the task is no longer claimable.
func (q *Handler) claimGated(ctx context.Context, id, worker string, m claimMode, dispatch, delivery uint64, c *trellis.QueueControls) (taskState, error) {
	leased := m.leased
	type part struct {
		runner *command.Runner[*Gate]
		st     command.State[*Gate]
	}
	var task taskState
	var parts []part
	var ps []events.Pending
	acks, err := command.Atomic(ctx, q.store, q.cfg.Command, func(ctx context.Context) ([]events.Pending, error) {
		parts, ps = parts[:0], ps[:0]
		var err error
		if task, err = q.loadState(ctx, id); err != nil {
			return nil, err
		}
		t := task.Value
		if t == nil {
			return nil, errNotClaimable
		}
		if t.Status == trellis.StatusClaimed && t.Lease != nil && t.Lease.DispatchSeq == dispatch &&
			ownDelivery(t, worker, delivery, m.ack) {
			return nil, errOwnDispatchClaim // our own claim, stored after its append was given up on
		}
		if t.Status != trellis.StatusQueued || t.CancelRequested != nil {
			return nil, errNotClaimable
		}
		now := q.cfg.Now().UTC()
		if t.RetryAt != nil && t.RetryAt.After(now) {
			return nil, notYet{t.RetryAt.Sub(now)}
		}
		admit := func(gid string, rate bool, slots int) error {
			st, err := q.gates.Load(ctx, gid)
			if err != nil {
				return command.StoreError("load gate", err)
			}
			g := st.Value
			if g == nil {
				g = &Gate{}
			}
			p := AdmittedPayload{TaskID: t.TaskID, Worker: worker, ClaimedAt: now}
			if rate {
				interval := time.Duration(float64(time.Second) / c.RatePerSecond)
				burst := c.Burst
				if burst <= 0 {
					burst = trellis.DefaultBurst(c.RatePerSecond)
				}
				tau := time.Duration(burst-1) * interval
				tat := now
				if g.TAT != nil && g.TAT.After(now) {
					tat = *g.TAT
				}
				if wait := tat.Sub(now) - tau; wait > 0 {
					return notYet{wait}
				}
				next := tat.Add(interval)
				p.TAT = &next
			}
			if slots > 0 {
				if len(g.Holders) >= slots {
					for _, h := range g.Holders {
						live, err := q.holding(ctx, h)
						if err != nil {
							return err
						}
						if !live {
							p.Freed = append(p.Freed, h.TaskID)
						}
					}
				}
				if len(g.Holders)-len(p.Freed) >= slots {
					return notYet{slotWait(delivery)}
				}
				p.Slot = true
			}
			pd, err := q.gates.Pending(ctx, st, worker, command.Decision{Subject: infraSubject(gid, Admitted), Type: Admitted, Payload: p, At: now})
			if err != nil {
				return err
			}
			parts = append(parts, part{q.gates, st})
			ps = append(ps, pd)
			return nil
		}
		limit := 0
		if leased {
			limit = c.MaxInFlight
		}
		if c.RatePerSecond > 0 || limit > 0 {
			if err := admit(GateID(t.Queue), c.RatePerSecond > 0, limit); err != nil {
				return nil, err
			}
		}
		if c.PerKey > 0 && t.ConcurrencyKey != "" {
			if err := admit(KeyGateID(t.Queue, t.ConcurrencyKey), false, c.PerKey); err != nil {
				return nil, err
			}
		}
		claim, err := q.tasks.Pending(ctx, task, worker, command.Decision{Subject: TaskSubject(t, Claimed), Type: Claimed,
			Payload: m.payload(worker, t.Attempts+1, dispatch, delivery),
			Check:   FilterIn(t.Queue, t.TaskID), At: now})
		if err != nil {
			return nil, err
		}
		ps = append(ps, claim)
		return ps, nil
	})
	if errors.Is(err, command.ErrConflict) {
		return task, notYet{slotWait(delivery)} // the gate is busy: try again shortly
	}
	if err != nil {
		var ny notYet
		if errors.As(err, &ny) || errors.Is(err, errNotClaimable) || errors.Is(err, errOwnDispatchClaim) {
			return task, err
		}
		return task, command.StoreError("gated claim", err)
	}
	for i, pt := range parts {
		st, err := pt.runner.Appended(pt.st, ps[i], acks[i].Seq)
		if err != nil {
			pt.runner.Forget(pt.st.ID)
			continue
		}
		q.maybeSnapshotGate(ctx, st)
	}
	last := len(ps) - 1
	return q.tasks.Appended(task, ps[last], acks[last].Seq)
}

// holding reports whether a slot's holder still runs under the claim that
// took the slot.
func (q *Handler) holding(ctx context.Context, h Holder) (bool, error) {
	st, err := q.tasks.Load(ctx, h.TaskID)
	if err != nil {
		return false, command.StoreError("load slot holder", err)
	}
	t := st.Value
	return t != nil && t.Status == trellis.StatusClaimed && t.ClaimedAt != nil && t.ClaimedAt.Equal(h.ClaimedAt), nil
}
