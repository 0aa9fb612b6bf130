package taskqueue

import (
	"context"
	"errors"
	"fmt"
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
	Name:   "queue controls",
	Stream: events.StreamQueue,
	Filter: ControlFilter,
	Fold:   foldControls,
	Clone: func(c *trellis.QueueControls) *trellis.QueueControls {
		if c == nil {
			return nil
		}
		cp := *c
		return &cp
	},
	Schema: Schema,
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
	}
	return c, nil
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
	if _, err := q.EnsureConsumer(ctx, queue, 0); err != nil {
		return nil, err
	}
	return st.Value, nil
}

// Consumer returns the durable claim consumer of a queue, creating it with
// the queue's controls when it does not exist. It does not change an
// existing consumer's lease (AckWait).
func (q *Handler) Consumer(ctx context.Context, queue string) (jetstream.Consumer, error) {
	// One lookup or creation at a time per process: concurrent first
	// claims would otherwise race to create the consumer.
	q.consumerMu.Lock()
	defer q.consumerMu.Unlock()
	q.mu.Lock()
	c, ok := q.consumers[queue]
	q.mu.Unlock()
	if ok {
		return c, nil
	}
	c, err := q.store.JetStream().Consumer(ctx, events.StreamQueue, ConsumerName(queue))
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return q.ensureConsumer(ctx, queue, 0)
	}
	if err != nil {
		return nil, command.StoreError("claim consumer for queue "+queue, err)
	}
	q.mu.Lock()
	q.consumers[queue] = c
	q.mu.Unlock()
	return c, nil
}

// EnsureConsumer creates or updates a queue's durable claim consumer so it
// matches the queue's controls (pause, global limit). lease > 0 sets the
// AckWait: how long a worker pool's claim survives without a heartbeat;
// 0 keeps the current lease (30 s for a new consumer).
func (q *Handler) EnsureConsumer(ctx context.Context, queue string, lease time.Duration) (jetstream.Consumer, error) {
	q.consumerMu.Lock()
	defer q.consumerMu.Unlock()
	return q.ensureConsumer(ctx, queue, lease)
}

func (q *Handler) ensureConsumer(ctx context.Context, queue string, lease time.Duration) (jetstream.Consumer, error) {
	controls, _, err := q.Controls(ctx, queue)
	if err != nil {
		return nil, err
	}
	js := q.store.JetStream()
	if lease <= 0 {
		lease = q.cfg.ClaimAckWait
		if cur, err := js.Consumer(ctx, events.StreamQueue, ConsumerName(queue)); err == nil {
			lease = cur.CachedInfo().Config.AckWait
		}
	}
	maxAck := defaultMaxAckPending
	if controls.MaxInFlight > 0 {
		maxAck = controls.MaxInFlight
	}
	cfg := jetstream.ConsumerConfig{
		Durable:        ConsumerName(queue),
		Description:    "Trellis claim dispatch for queue " + queue,
		FilterSubjects: DispatchSubjects(queue),
		DeliverPolicy:  jetstream.DeliverAllPolicy,
		AckPolicy:      jetstream.AckExplicitPolicy,
		AckWait:        lease,
		MaxAckPending:  maxAck,
		MaxWaiting:     4096,
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
		_, err = js.PauseConsumer(ctx, events.StreamQueue, ConsumerName(queue), *cfg.PauseUntil)
	} else if info := c.CachedInfo(); info.Paused {
		_, err = js.ResumeConsumer(ctx, events.StreamQueue, ConsumerName(queue))
	}
	if err != nil {
		return nil, command.StoreError(fmt.Sprintf("pause state of queue %s", queue), err)
	}
	q.mu.Lock()
	q.consumers[queue] = c
	q.mu.Unlock()
	return c, nil
}

// ConsumerName is the durable consumer name of a queue's claim dispatch.
func ConsumerName(queue string) string { return "queue-" + queue }
