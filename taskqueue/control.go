package taskqueue

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/command"
	"github.com/trellis/trellis/events"
)

// defaultMaxAckPending is the claim consumer's cap when no limit is set.
const defaultMaxAckPending = 100000

// controlKind is a queue's control aggregate (pause, resume, limit) on
// trellis.queue.<queue>._control.>; its id is the queue name.
var controlKind = command.Kind[*trellis.QueueControls]{
	Name:     "queue controls",
	Stream:   events.StreamQueue,
	Filter:   ControlFilter,
	Fold:     foldControlEvent,
	Snapshot: controlSnapshotSubject,
	Clone:    cloneControls,
	Schema:   Schema,
}

// foldControls applies one control event.
func foldControls(c *trellis.QueueControls, rec events.Recorded) (*trellis.QueueControls, error) {
	if c == nil {
		c = &trellis.QueueControls{Queue: rec.AggregateID}
	}
	switch rec.Type {
	case Paused:
		c.Paused = true
	case Resumed:
		c.Paused = false
	case LimitSet:
		var p LimitPayload
		if err := rec.DecodePayload(&p); err != nil {
			return c, err
		}
		c.MaxInFlight = p.MaxInFlight
	case RateSet:
		var p RatePayload
		if err := rec.DecodePayload(&p); err != nil {
			return c, err
		}
		c.Rate, c.RatePerSecond, c.Burst = p.Rate, p.PerSecond, p.Burst
		if p.PerSecond == 0 {
			c.Rate, c.Burst = "", 0
		}
	case PerKeySet:
		var p PerKeyPayload
		if err := rec.DecodePayload(&p); err != nil {
			return c, err
		}
		c.PerKey = p.PerKey
	case AgentLeaseSet:
		var p AgentLeasePayload
		if err := rec.DecodePayload(&p); err != nil {
			return c, err
		}
		c.AgentLeaseSeconds = float64(p.LeaseMillis) / 1000
	case LeaseSet:
		var p LeasePayload
		if err := rec.DecodePayload(&p); err != nil {
			return c, err
		}
		c.LeaseSeconds = float64(p.LeaseMillis) / 1000
		c.PreviousLeaseSeconds, c.LeaseFrom = 0, nil
		if p.From != nil {
			from := p.From.UTC()
			c.PreviousLeaseSeconds, c.LeaseFrom = float64(p.PreviousLeaseMillis)/1000, &from
		}
	}
	return c, nil
}

// LeaseWatchEvery is how often worker pools read their queue's lease (the
// controls and the claim consumer): a shortened lease reaches the claim
// consumer only after every pool has had time to heartbeat for it.
const LeaseWatchEvery = 2 * time.Second

// PoolLease is the lease a queue's pools must heartbeat for now: the
// shorter of a lease being switched to and the one it replaces, else the
// claim consumer's (see SetLease). A remote pool learns it from the
// server with each claim and heartbeat. The controls are read at most
// FlowCacheTTL ago.
func (q *Handler) PoolLease(ctx context.Context, queue string) (time.Duration, error) {
	c, err := q.flow(ctx, queue)
	if err != nil {
		return 0, err
	}
	if l := c.HeartbeatLease(); l > 0 {
		return l, nil
	}
	lanes, err := q.Lanes(ctx, queue)
	if err != nil {
		return 0, err
	}
	if l := lanes[trellis.DefaultPriority-1].CachedInfo().Config.AckWait; l > 0 {
		return l, nil
	}
	return q.cfg.ClaimAckWait, nil
}

// SetLease sets the queue's lease: how long a worker pool's claim survives
// without a heartbeat (the claim consumer's AckWait), for every pool of
// the queue. A longer lease applies at once, and so does a shorter one
// while no claim is held. Otherwise the shorter lease is recorded at once,
// so pools heartbeat for it, and reaches the claim consumer only after two
// lease readings and one heartbeat of the new lease: a claim in flight
// never finds its lease cut below the time since its last heartbeat. The
// call returns when the consumer holds the new lease.
func (q *Handler) SetLease(ctx context.Context, queue, actor string, lease time.Duration) (*trellis.QueueControls, error) {
	if lease < time.Second || lease > 24*time.Hour {
		return nil, trellis.FieldError("lease", "must be between 1s and 24h, got %s", lease)
	}
	if err := trellis.ValidateQueueName(queue); err != nil {
		return nil, err
	}
	cur, held, err := q.currentLease(ctx, queue)
	if err != nil {
		return nil, err
	}
	p := LeasePayload{LeaseMillis: lease.Milliseconds()}
	var from time.Time
	if lease < cur && held > 0 {
		from = q.cfg.Now().Add(2*LeaseWatchEvery + lease/3 + time.Second).UTC()
		p.PreviousLeaseMillis, p.From = cur.Milliseconds(), &from
	}
	c, err := q.control(ctx, queue, actor, LeaseSet, p)
	if err != nil || p.From == nil {
		return c, err
	}
	if err := sleepUntil(ctx, from); err != nil {
		return nil, command.StoreError("wait for the pools to heartbeat for the new lease", err)
	}
	if _, err := q.EnsureConsumer(ctx, queue, 0); err != nil {
		return nil, err
	}
	c, _, err = q.Controls(ctx, queue)
	return c, err
}

// currentLease is the lease the queue's claim consumers hold now (the
// default for a queue without them) and how many leased claims they hold,
// every priority lane counted.
func (q *Handler) currentLease(ctx context.Context, queue string) (time.Duration, int, error) {
	js := q.store.JetStream()
	var lease time.Duration
	held := 0
	for p := 1; p <= trellis.MaxPriority; p++ {
		cons, err := js.Consumer(ctx, events.StreamQueue, LaneName(queue, p))
		if errors.Is(err, jetstream.ErrConsumerNotFound) {
			continue
		}
		if err != nil {
			return 0, 0, command.StoreError("claim consumer for queue "+queue, err)
		}
		info := cons.CachedInfo()
		if p == trellis.DefaultPriority {
			lease = info.Config.AckWait
		}
		held += info.NumAckPending
	}
	if lease == 0 {
		lease = q.cfg.ClaimAckWait
	}
	return lease, held, nil
}

func sleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// Controls returns a queue's controls and the control aggregate's last
// sequence.
func (q *Handler) Controls(ctx context.Context, queue string) (*trellis.QueueControls, uint64, error) {
	if err := trellis.ValidateQueueName(queue); err != nil {
		return nil, 0, err
	}
	st, err := q.controls.Load(ctx, queue)
	if err != nil {
		return nil, 0, command.StoreError("load queue controls", err)
	}
	if st.Value == nil {
		return &trellis.QueueControls{Queue: queue}, 0, nil
	}
	return st.Value, st.Seq, nil
}

// Pause stops every claim on a queue across the cluster (an event; the
// claim consumer is paused by the server).
func (q *Handler) Pause(ctx context.Context, queue, actor, reason string) (*trellis.QueueControls, error) {
	return q.control(ctx, queue, actor, Paused, ControlPayload{Reason: reason})
}

// Resume lets claims on a paused queue resume.
func (q *Handler) Resume(ctx context.Context, queue, actor string) (*trellis.QueueControls, error) {
	return q.control(ctx, queue, actor, Resumed, ControlPayload{})
}

// SetLimit sets the queue's global concurrency limit: the maximum number of
// leased tasks in flight across all workers (0 removes the limit).
func (q *Handler) SetLimit(ctx context.Context, queue, actor string, maxInFlight int) (*trellis.QueueControls, error) {
	if maxInFlight < 0 || maxInFlight > defaultMaxAckPending {
		return nil, trellis.FieldError("max_in_flight", "must be between 0 (unlimited) and %d, got %d", defaultMaxAckPending, maxInFlight)
	}
	return q.control(ctx, queue, actor, LimitSet, LimitPayload{MaxInFlight: maxInFlight})
}

// SetRate sets the queue's claim rate for the whole cluster (rate as
// trellis.ParseRate reads it; "off" removes it) with its burst (0: one
// second's worth). It returns once every process's claims honour it.
func (q *Handler) SetRate(ctx context.Context, queue, actor, rate string, burst int) (*trellis.QueueControls, error) {
	perSec, err := trellis.ParseRate(rate)
	if err != nil {
		return nil, err
	}
	if burst < 0 || burst > trellis.MaxBurst {
		return nil, trellis.FieldError("burst", "must be between 1 and %d, got %d", trellis.MaxBurst, burst)
	}
	p := RatePayload{Rate: strings.TrimSpace(rate), PerSecond: perSec, Burst: burst}
	if perSec == 0 {
		if burst != 0 {
			return nil, trellis.FieldError("burst", "needs a rate")
		}
		p.Rate = ""
	} else if burst == 0 {
		p.Burst = trellis.DefaultBurst(perSec)
	}
	return q.control(ctx, queue, actor, RateSet, p)
}

// SetPerKey sets how many tasks with one concurrency key may run at once
// (0: no limit). It returns once every process's claims honour it.
func (q *Handler) SetPerKey(ctx context.Context, queue, actor string, perKey int) (*trellis.QueueControls, error) {
	if perKey < 0 || perKey > trellis.MaxPerKey {
		return nil, trellis.FieldError("per_key", "must be between 0 (unlimited) and %d, got %d", trellis.MaxPerKey, perKey)
	}
	return q.control(ctx, queue, actor, PerKeySet, PerKeyPayload{PerKey: perKey})
}

func (q *Handler) control(ctx context.Context, queue, actor, typ string, payload any) (*trellis.QueueControls, error) {
	if err := trellis.ValidateQueueName(queue); err != nil {
		return nil, err
	}
	st, err := q.controls.Load(ctx, queue)
	if err != nil {
		return nil, command.StoreError("load queue controls", err)
	}
	st, err = q.controls.Run(ctx, st, actor, func(*trellis.QueueControls) (command.Decision, error) {
		return command.Decision{Subject: ControlSubject(queue, typ), Type: typ, Payload: payload}, nil
	})
	if errors.Is(err, command.ErrConflict) {
		return nil, trellis.Errorf(trellis.CodeConflict, "queue %s controls keep changing concurrently; try again", queue)
	}
	if err != nil {
		return nil, command.StoreError("append "+typ, err)
	}
	q.maybeSnapshotControls(ctx, st)
	if _, err := q.EnsureConsumer(ctx, queue, 0); err != nil {
		return nil, err
	}
	q.forgetFlow(queue)
	switch typ {
	case LimitSet, RateSet, PerKeySet, AgentLeaseSet:
		// Other processes decide claims on controls read at most
		// FlowCacheTTL ago: once it has passed, every claim honours these.
		if err := sleepUntil(ctx, time.Now().Add(FlowCacheTTL)); err != nil {
			return nil, command.StoreError("wait for the claimants to read the new limit", err)
		}
	}
	return st.Value, nil
}

// Consumer returns the durable claim consumer of a queue's default
// priority lane (see Lanes), creating the lanes with the queue's controls
// when they do not exist. It does not change an existing consumer's lease
// (AckWait).
func (q *Handler) Consumer(ctx context.Context, queue string) (jetstream.Consumer, error) {
	lanes, err := q.Lanes(ctx, queue)
	if err != nil {
		return nil, err
	}
	return lanes[trellis.DefaultPriority-1], nil
}

// Lanes returns the claim consumers of a queue's priority lanes, best
// first: lane p delivers the dispatches of the queue's priority-p tasks in
// stream order (oldest first). A claimant takes from the best lane that
// has a dispatch, so a priority-1 task waits for no priority-4 task. Lanes
// are created with the queue's controls when they do not exist.
func (q *Handler) Lanes(ctx context.Context, queue string) ([]jetstream.Consumer, error) {
	// One lookup or creation at a time per process: concurrent first
	// claims would otherwise race to create the consumers.
	q.mu.Lock()
	lanes, ok := q.lanes[queue]
	q.mu.Unlock()
	if ok {
		return lanes, nil // the claim path: no wait behind a consumer update
	}
	q.consumerMu.Lock()
	defer q.consumerMu.Unlock()
	q.mu.Lock()
	lanes, ok = q.lanes[queue]
	q.mu.Unlock()
	if ok {
		return lanes, nil
	}
	js := q.store.JetStream()
	lanes = make([]jetstream.Consumer, trellis.MaxPriority)
	for p := 1; p <= trellis.MaxPriority; p++ {
		c, err := js.Consumer(ctx, events.StreamQueue, LaneName(queue, p))
		if errors.Is(err, jetstream.ErrConsumerNotFound) {
			if _, err := q.ensureConsumer(ctx, queue); err != nil {
				return nil, err
			}
			q.mu.Lock()
			lanes = q.lanes[queue]
			q.mu.Unlock()
			return lanes, nil
		}
		if err != nil {
			return nil, command.StoreError("claim consumer for queue "+queue, err)
		}
		lanes[p-1] = c
	}
	q.mu.Lock()
	q.lanes[queue] = lanes
	q.mu.Unlock()
	return lanes, nil
}

// EnsureConsumer creates or updates a queue's durable claim consumers (its
// priority lanes) so they match the queue's controls (pause, global limit,
// lease), and returns the default lane's. lease > 0 is the lease a worker
// pool asks for: when it differs from the queue's, it becomes the queue's
// lease for every pool (SetLease: an event, and a shorter lease is
// switched to safely); 0 keeps the queue's lease (30 s for a new queue).
func (q *Handler) EnsureConsumer(ctx context.Context, queue string, lease time.Duration) (jetstream.Consumer, error) {
	if lease > 0 {
		cur, _, err := q.currentLease(ctx, queue)
		if err != nil {
			return nil, err
		}
		if controls, _, err := q.Controls(ctx, queue); err != nil {
			return nil, err
		} else if l := controls.Lease(q.cfg.Now()); l > 0 {
			cur = l
		}
		if lease != cur {
			if _, err := q.SetLease(ctx, queue, "trellis", lease); err != nil {
				return nil, err
			}
		}
	}
	q.consumerMu.Lock()
	defer q.consumerMu.Unlock()
	return q.ensureConsumer(ctx, queue)
}

// ensureConsumer creates or updates the queue's lanes from its controls
// (the lease the controls set, else the default lane's current one, else
// the default). q.consumerMu is held.
func (q *Handler) ensureConsumer(ctx context.Context, queue string) (jetstream.Consumer, error) {
	controls, _, err := q.Controls(ctx, queue)
	if err != nil {
		return nil, err
	}
	js := q.store.JetStream()
	lease := controls.Lease(q.cfg.Now())
	if lease <= 0 {
		lease = q.cfg.ClaimAckWait
		if cur, err := js.Consumer(ctx, events.StreamQueue, ConsumerName(queue)); err == nil {
			lease = cur.CachedInfo().Config.AckWait
		}
	}
	maxAck := defaultMaxAckPending
	if controls.MaxInFlight > 0 {
		// Each lane holds at most the limit; the queue's gate makes the
		// limit exact across lanes (see gate.go).
		maxAck = controls.MaxInFlight
	}
	lanes := make([]jetstream.Consumer, trellis.MaxPriority)
	for p := 1; p <= trellis.MaxPriority; p++ {
		cfg := jetstream.ConsumerConfig{
			Durable:        LaneName(queue, p),
			Description:    fmt.Sprintf("Trellis claim dispatch for queue %s, priority %d", queue, p),
			FilterSubjects: LaneSubjects(queue, p),
			DeliverPolicy:  jetstream.DeliverAllPolicy,
			AckPolicy:      jetstream.AckExplicitPolicy,
			AckWait:        lease,
			MaxAckPending:  maxAck,
			MaxWaiting:     4096,
		}
		if p == trellis.DefaultPriority {
			cfg.Description = "Trellis claim dispatch for queue " + queue
		}
		if controls.Paused {
			forever := time.Now().Add(100 * 365 * 24 * time.Hour)
			cfg.PauseUntil = &forever
		}
		c, err := js.CreateOrUpdateConsumer(ctx, events.StreamQueue, cfg)
		if err != nil {
			return nil, command.StoreError("claim consumer for queue "+queue, err)
		}
		// PauseUntil in an update is not applied to a running consumer; use
		// the pause API so the state always matches the events.
		if controls.Paused {
			_, err = js.PauseConsumer(ctx, events.StreamQueue, cfg.Durable, *cfg.PauseUntil)
		} else if info := c.CachedInfo(); info.Paused {
			_, err = js.ResumeConsumer(ctx, events.StreamQueue, cfg.Durable)
		}
		if err != nil {
			return nil, command.StoreError(fmt.Sprintf("pause state of queue %s", queue), err)
		}
		lanes[p-1] = c
	}
	q.mu.Lock()
	q.lanes[queue] = lanes
	q.mu.Unlock()
	return lanes[trellis.DefaultPriority-1], nil
}

// ConsumerName is the durable consumer name of a queue's claim dispatch
// (its default priority lane).
func ConsumerName(queue string) string { return "queue-" + queue }

// IsLane reports whether consumer is one of the queue's priority lanes.
func IsLane(consumer, queue string) bool {
	for p := 1; p <= trellis.MaxPriority; p++ {
		if consumer == LaneName(queue, p) {
			return true
		}
	}
	return false
}

// LaneName is the durable consumer name of a queue's priority lane: the
// default lane keeps ConsumerName.
func LaneName(queue string, priority int) string {
	if priority == trellis.DefaultPriority {
		return ConsumerName(queue)
	}
	return fmt.Sprintf("queue-%s-p%d", queue, priority)
}
