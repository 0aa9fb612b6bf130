package handlers

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
)

// QueueConfig configures the queue command handler. The zero value is usable.
type QueueConfig struct {
	// ClaimAckWait is the AckWait of each queue's claim consumer: how long a
	// dispatched-but-unacknowledged add stays invisible to other claimants
	// if its claimant dies between fetch and ack (default 30 s).
	ClaimAckWait time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// NextWait is how long queue next waits for a dispatch before answering
	// "nothing queued" (default 100 ms). A claimable task is returned as
	// soon as it is there; the wait covers the moment between an add being
	// acknowledged and the consumer learning of it, so a next right after
	// an add always sees the task.
	NextWait time.Duration
	// CacheSize bounds the per-process cache of recently touched tasks used
	// to skip a load before an append (default 65,536; the cache is only a
	// hint: a stale entry costs one rejected append and a reload).
	CacheSize int
}

func (c QueueConfig) withDefaults() QueueConfig {
	if c.ClaimAckWait <= 0 {
		c.ClaimAckWait = 30 * time.Second
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.CacheSize <= 0 {
		c.CacheSize = 65536
	}
	if c.NextWait <= 0 {
		c.NextWait = 100 * time.Millisecond
	}
	return c
}

// maxDecideAttempts bounds how often a command reloads and re-decides
// after losing a race before it reports a conflict.
const maxDecideAttempts = 8

// Queue is the task queue's command handler. It needs only the event store:
// any process with a NATS connection (a server, a CLI, a worker on another
// machine) can run it.
type Queue struct {
	store *events.Store
	cfg   QueueConfig
	cache *taskCache

	mu        sync.Mutex
	consumers map[string]jetstream.Consumer
}

// NewQueue returns the queue command handler.
func NewQueue(store *events.Store, cfg QueueConfig) *Queue {
	cfg = cfg.withDefaults()
	return &Queue{store: store, cfg: cfg, cache: newTaskCache(cfg.CacheSize), consumers: map[string]jetstream.Consumer{}}
}

// Add appends an added event and returns the new task. With an idempotency
// key, a repeated add within the store's duplicate window returns the task
// the first add created.
func (q *Queue) Add(ctx context.Context, req trellis.AddTaskRequest) (*trellis.Task, error) {
	if err := req.Normalize(); err != nil {
		return nil, err
	}
	if req.ParentID != "" {
		if _, _, err := q.load(ctx, req.ParentID); err != nil {
			if trellis.ErrorCode(err) == trellis.CodeNotFound {
				return nil, trellis.FieldError("parent_id", "task %s does not exist", req.ParentID)
			}
			return nil, err
		}
	}
	now := q.cfg.Now()
	id := events.NewID(now)
	env, err := events.NewEnvelope(now, events.TaskAdded, id, "", events.QueueSchema, events.TaskAddedPayload{
		Queue:          req.Queue,
		ParentID:       req.ParentID,
		Objective:      req.Objective,
		Inputs:         req.Inputs,
		Acceptance:     req.Acceptance,
		Budget:         trellis.Budget{MaxToolCalls: req.MaxToolCalls, MaxSteps: req.MaxSteps},
		MaxAttempts:    req.MaxAttempts,
		Metadata:       req.Metadata,
		IdempotencyKey: req.IdempotencyKey,
	})
	if err != nil {
		return nil, err
	}
	msgID := ""
	if req.IdempotencyKey != "" {
		msgID = "idem:" + req.Queue + ":" + req.IdempotencyKey
	}
	subject := events.QueueSubject(req.Queue, id, events.TaskAdded)
	ack, err := q.store.Append(ctx, subject, env, events.Expect{Filter: events.TaskFilter(id)}, msgID)
	if err != nil {
		return nil, storeError("add task", err)
	}
	if ack.Duplicate {
		orig, err := q.store.Get(ctx, events.StreamQueue, ack.Seq)
		if err != nil {
			return nil, storeError("load task of idempotency key", err)
		}
		return q.Show(ctx, orig.AggregateID)
	}
	task, err := events.ApplyTask(nil, events.Recorded{Envelope: env, Stream: events.StreamQueue, Subject: subject, Seq: ack.Seq})
	if err != nil {
		return nil, err
	}
	q.cache.put(task, ack.Seq)
	return task.Clone(), nil
}

// Next claims the oldest claimable task of the queue for the worker, or
// returns nil when none is queued. Tasks are dispatched by the queue's
// durable JetStream consumer, so concurrent callers receive distinct tasks;
// the claim itself is a checked append, so a task is claimed exactly once
// even if a dispatch is delivered twice.
func (q *Queue) Next(ctx context.Context, req trellis.NextRequest) (*trellis.Task, error) {
	if err := req.Normalize(); err != nil {
		return nil, err
	}
	cons, err := q.Consumer(ctx, req.Queue)
	if err != nil {
		return nil, err
	}
	for {
		msg, err := fetchOne(cons, q.cfg.NextWait)
		if err != nil {
			return nil, storeError("fetch from queue "+req.Queue, err)
		}
		if msg == nil {
			return nil, nil
		}
		task, err := q.ClaimDispatched(ctx, msg, req.Worker)
		if err != nil {
			return nil, err
		}
		if task == nil {
			continue // stale dispatch: the task was claimed already
		}
		if err := msg.Ack(); err != nil {
			// The claim is recorded; a lost ack only means the dispatch is
			// delivered again later and skipped as stale.
			_ = err
		}
		return task, nil
	}
}

// fetchOne returns one dispatch message, waiting at most wait for one, or
// nil. (A no-wait fetch is not enough: the server answers it from the
// consumer's pending count, which learns of a just-stored message
// asynchronously.)
func fetchOne(cons jetstream.Consumer, wait time.Duration) (jetstream.Msg, error) {
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(wait))
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

// ClaimDispatched claims the task a dispatch message names for worker. It
// returns nil (and acknowledges the message) when the task is no longer
// claimable. The caller acknowledges the message after a successful claim,
// or holds it as a lease.
func (q *Queue) ClaimDispatched(ctx context.Context, msg jetstream.Msg, worker string) (*trellis.Task, error) {
	meta, err := msg.Metadata()
	if err != nil {
		return nil, storeError("dispatch metadata", err)
	}
	rec, err := events.Decode(events.StreamQueue, msg.Subject(), meta.Sequence.Stream, msg.Data())
	if err != nil {
		_ = msg.Term() // not an event: never deliver it again
		return nil, trellis.Errorf(trellis.CodeInternal, "undecodable dispatch %s: %w", msg.Subject(), err)
	}
	// Optimistic: a dispatched add is usually the task's only event, so its
	// sequence is the aggregate's last sequence and no load is needed.
	var task *trellis.Task
	seq := rec.Seq
	if cached, cseq, ok := q.cache.get(rec.AggregateID); ok && cseq >= seq {
		task, seq = cached, cseq
	} else if task, err = events.ApplyTask(nil, rec); err != nil {
		_ = msg.Term()
		return nil, trellis.Errorf(trellis.CodeInternal, "dispatch %s: %w", msg.Subject(), err)
	}
	claimed, err := q.decideAndAppend(ctx, task, seq, func(t *trellis.Task) (string, any, error) {
		if t.Status != trellis.StatusQueued {
			return "", nil, errNotClaimable
		}
		return events.TaskClaimed, events.TaskClaimedPayload{Worker: worker, Attempt: t.Attempts + 1}, nil
	}, worker)
	if errors.Is(err, errNotClaimable) {
		_ = msg.Ack()
		return nil, nil
	}
	return claimed, err
}

var errNotClaimable = errors.New("task is not claimable")

// Done finishes a claimed task with a checkpoint. Only the claimant may
// finish it; finishing twice is a conflict. Usage beyond the budget is
// recorded as budget_exhausted.
func (q *Queue) Done(ctx context.Context, req trellis.DoneRequest) (*trellis.Task, error) {
	if err := req.Normalize(); err != nil {
		return nil, err
	}
	usage := trellis.Usage{StepsUsed: req.StepsUsed, ToolCallsUsed: req.ToolCallsUsed}
	return q.finish(ctx, req.TaskID, req.Worker, func(t *trellis.Task) (string, any, error) {
		return events.TaskCompleted, events.TaskCompletedPayload{
			Worker:          req.Worker,
			WhatWasDone:     req.WhatWasDone,
			WhatChanged:     req.WhatChanged,
			WhatNext:        req.WhatNext,
			Blockers:        req.Blockers,
			Citations:       req.Citations,
			Usage:           usage,
			BudgetExhausted: usage.Exceeds(t.Budget),
		}, nil
	})
}

// Fail ends a claimed task as failed with a checkpoint. Only the claimant
// may fail it.
func (q *Queue) Fail(ctx context.Context, req trellis.FailRequest) (*trellis.Task, error) {
	if err := req.Normalize(); err != nil {
		return nil, err
	}
	usage := trellis.Usage{StepsUsed: req.StepsUsed, ToolCallsUsed: req.ToolCallsUsed}
	return q.finish(ctx, req.TaskID, req.Worker, func(t *trellis.Task) (string, any, error) {
		return events.TaskFailed, events.TaskFailedPayload{
			Worker:          req.Worker,
			Error:           req.Error,
			WhatWasDone:     req.WhatWasDone,
			Blockers:        req.Blockers,
			Usage:           usage,
			BudgetExhausted: usage.Exceeds(t.Budget),
		}, nil
	})
}

// finish loads the task and appends the event build returns after checking
// that worker holds the claim.
func (q *Queue) finish(ctx context.Context, taskID, worker string, build func(*trellis.Task) (string, any, error)) (*trellis.Task, error) {
	task, seq, err := q.loadCached(ctx, taskID)
	if err != nil {
		return nil, err
	}
	t, err := q.decideAndAppend(ctx, task, seq, func(t *trellis.Task) (string, any, error) {
		switch {
		case t.Status == trellis.StatusQueued:
			return "", nil, trellis.Errorf(trellis.CodeConflict, "task %s is queued, not claimed: claim it with queue next first", t.TaskID)
		case t.Status != trellis.StatusClaimed:
			return "", nil, trellis.Errorf(trellis.CodeConflict, "task %s is already %s", t.TaskID, t.Status)
		case t.ClaimedBy != worker:
			return "", nil, trellis.Errorf(trellis.CodeConflict, "task %s is claimed by worker %q, not %q", t.TaskID, t.ClaimedBy, worker)
		}
		return build(t)
	}, worker)
	if err == nil {
		q.cache.drop(taskID)
	}
	return t, err
}

// decideAndAppend runs decide against the task and appends the event it
// returns with the aggregate's expected last sequence. When another writer
// got there first it reloads the task and decides again.
func (q *Queue) decideAndAppend(ctx context.Context, task *trellis.Task, seq uint64, decide func(*trellis.Task) (string, any, error), actor string) (*trellis.Task, error) {
	for attempt := 0; ; attempt++ {
		typ, payload, err := decide(task)
		if err != nil {
			return nil, err
		}
		now := q.cfg.Now()
		env, err := events.NewEnvelope(now, typ, task.TaskID, actor, events.QueueSchema, payload)
		if err != nil {
			return nil, err
		}
		subject := events.QueueSubject(task.Queue, task.TaskID, typ)
		ack, err := q.store.Append(ctx, subject, env, events.Expect{Filter: events.TaskFilter(task.TaskID), LastSeq: seq}, "")
		if errors.Is(err, events.ErrWrongLastSequence) {
			q.cache.drop(task.TaskID)
			if attempt+1 >= maxDecideAttempts {
				return nil, trellis.Errorf(trellis.CodeConflict, "task %s keeps changing concurrently; try again", task.TaskID)
			}
			if task, seq, err = q.load(ctx, task.TaskID); err != nil {
				return nil, err
			}
			continue
		}
		if err != nil {
			return nil, storeError("append "+typ, err)
		}
		next, err := events.ApplyTask(task.Clone(), events.Recorded{Envelope: env, Stream: events.StreamQueue, Subject: subject, Seq: ack.Seq})
		if err != nil {
			return nil, err
		}
		q.cache.put(next, ack.Seq)
		return next.Clone(), nil
	}
}

// Show returns the task folded from its events in the log.
func (q *Queue) Show(ctx context.Context, taskID string) (*trellis.Task, error) {
	if err := trellis.ValidateTaskID("task_id", taskID); err != nil {
		return nil, err
	}
	t, _, err := q.load(ctx, taskID)
	return t, err
}

// History returns every event of a task in order.
func (q *Queue) History(ctx context.Context, taskID string) ([]events.Recorded, error) {
	if err := trellis.ValidateTaskID("task_id", taskID); err != nil {
		return nil, err
	}
	recs, _, err := q.store.Load(ctx, events.StreamQueue, events.TaskFilter(taskID))
	if err != nil {
		return nil, storeError("load task", err)
	}
	if len(recs) == 0 {
		return nil, trellis.Errorf(trellis.CodeNotFound, "task %s does not exist", taskID)
	}
	return recs, nil
}

// load folds a task from the log.
func (q *Queue) load(ctx context.Context, taskID string) (*trellis.Task, uint64, error) {
	recs, last, err := q.store.Load(ctx, events.StreamQueue, events.TaskFilter(taskID))
	if err != nil {
		return nil, 0, storeError("load task", err)
	}
	if len(recs) == 0 {
		return nil, 0, trellis.Errorf(trellis.CodeNotFound, "task %s does not exist", taskID)
	}
	t, err := events.FoldTask(recs)
	if err != nil {
		return nil, 0, trellis.Errorf(trellis.CodeInternal, "fold task %s: %w", taskID, err)
	}
	q.cache.put(t, last)
	return t.Clone(), last, nil
}

// loadCached returns the cached task when this process touched it last,
// else loads it.
func (q *Queue) loadCached(ctx context.Context, taskID string) (*trellis.Task, uint64, error) {
	if t, seq, ok := q.cache.get(taskID); ok {
		return t, seq, nil
	}
	return q.load(ctx, taskID)
}

// Consumer returns (creating it on first use) the durable claim consumer of
// a queue: it delivers the queue's added events in stream order, each to
// one claimant at a time.
func (q *Queue) Consumer(ctx context.Context, queue string) (jetstream.Consumer, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if c, ok := q.consumers[queue]; ok {
		return c, nil
	}
	c, err := q.store.JetStream().CreateOrUpdateConsumer(ctx, events.StreamQueue, jetstream.ConsumerConfig{
		Durable:        ConsumerName(queue),
		Description:    "Trellis claim dispatch for queue " + queue,
		FilterSubjects: events.QueueDispatchSubjects(queue),
		DeliverPolicy:  jetstream.DeliverAllPolicy,
		AckPolicy:      jetstream.AckExplicitPolicy,
		AckWait:        q.cfg.ClaimAckWait,
		MaxAckPending:  100000,
		MaxWaiting:     4096,
		Replicas:       q.store.Config().Replicas,
	})
	if err != nil {
		return nil, storeError("claim consumer for queue "+queue, err)
	}
	q.consumers[queue] = c
	return c, nil
}

// ConsumerName is the durable consumer name of a queue's claim dispatch.
func ConsumerName(queue string) string { return "queue-" + queue }

// storeError wraps an infrastructure error with a stable code.
func storeError(what string, err error) error {
	if err == nil {
		return nil
	}
	var te *trellis.Error
	if errors.As(err, &te) {
		return err
	}
	code := trellis.CodeInternal
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, context.Canceled) {
		code = trellis.CodeUnavailable
	}
	return &trellis.Error{Code: code, Message: fmt.Sprintf("%s: %v", what, err), Err: err}
}
