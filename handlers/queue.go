package handlers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
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
	// RetryBackoff is the wait before the next attempt after a failed
	// attempt number n (default DefaultRetryBackoff: 1 s doubling to 5 min,
	// with jitter).
	RetryBackoff func(attempt int) time.Duration
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
	if c.RetryBackoff == nil {
		c.RetryBackoff = DefaultRetryBackoff
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

	consumerMu sync.Mutex // serializes consumer lookup and creation
	mu         sync.Mutex
	consumers  map[string]jetstream.Consumer
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
		msgID = idempotencyMsgID(req.Queue, req.IdempotencyKey)
	}
	subject := events.QueueSubject(req.Queue, id, events.TaskAdded)
	ack, err := q.store.Append(ctx, subject, env, events.Expect{Filter: events.TaskFilterIn(req.Queue, id)}, msgID)
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

// idempotencyMsgID is the message id an add with an idempotency key is
// stored under. The key is hashed: a NATS header value loses trailing
// spaces and turns CR and LF into spaces, so keys that differ only there
// would otherwise share an id and the second add would silently return
// the first task.
func idempotencyMsgID(queue, key string) string {
	sum := sha256.Sum256([]byte(key))
	return "idem:" + queue + ":" + hex.EncodeToString(sum[:])
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
func (q *Queue) loadCached(ctx context.Context, taskID string) (taskState, error) {
	if t, seq, ok := q.cache.get(taskID); ok {
		return taskState{task: t, seq: seq}, nil
	}
	t, seq, err := q.load(ctx, taskID)
	return taskState{task: t, seq: seq, fresh: true}, err
}

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
	if events.IsUnavailable(err) {
		code = trellis.CodeUnavailable
	}
	return &trellis.Error{Code: code, Message: fmt.Sprintf("%s: %v", what, err), Err: err}
}
