package events

import (
	"fmt"
	"strings"
	"time"

	"github.com/trellis/trellis"
)

// Queue event types: the last token of trellis.queue.<queue>.<task_id>.<type>.
const (
	// TaskAdded records queue add: the whole packet as requested.
	TaskAdded = "added"
	// TaskClaimed records a claim by a worker (queue next).
	TaskClaimed = "claimed"
	// TaskCompleted records queue done with its checkpoint.
	TaskCompleted = "completed"
	// TaskFailed records a terminal failure with its checkpoint.
	TaskFailed = "failed"
	// TaskAttemptFailed records a failed attempt that will be retried: the
	// task is queued again, claimable from retry_at on.
	TaskAttemptFailed = "attempt_failed"
	// TaskDead records the dead letter: the task used up its attempts.
	TaskDead = "dead"
	// TaskLeaseExpired records that a worker pool's claimant stopped
	// heartbeating and its lease ran out; the task is queued again.
	TaskLeaseExpired = "lease_expired"
	// TaskReleased records a claimant giving a task back unfinished (a
	// draining worker); the attempt does not count.
	TaskReleased = "released"
	// TaskRequeued records an explicit retry (queue retry): the task is
	// queued again with fresh attempts.
	TaskRequeued = "requeued"
)

// Queue control event types, on trellis.queue.<queue>._control.<type>.
const (
	// QueuePaused stops all claims on a queue, cluster-wide.
	QueuePaused = "paused"
	// QueueResumed lets claims on a paused queue resume.
	QueueResumed = "resumed"
	// QueueLimitSet sets the queue's global concurrency limit.
	QueueLimitSet = "limit_set"
)

// ControlID is the aggregate id (subject token) of a queue's controls.
const ControlID = "_control"

// IsControlSubject reports whether subject belongs to a queue's control
// aggregate rather than to a task.
func IsControlSubject(subject string) bool {
	return strings.Contains(subject, "."+ControlID+".")
}

// ControlSubject is the subject of a queue control event.
func ControlSubject(queue, typ string) string {
	return "trellis.queue." + queue + "." + ControlID + "." + typ
}

// ControlFilter is the subject filter of a queue's control aggregate.
func ControlFilter(queue string) string {
	return "trellis.queue." + queue + "." + ControlID + ".>"
}

// QueueSchema is the current schema version of every queue payload.
const QueueSchema = 1

// QueueSubject is the subject of a queue event.
func QueueSubject(queue, taskID, typ string) string {
	return "trellis.queue." + queue + "." + taskID + "." + typ
}

// TaskFilter is the subject filter of one task aggregate, whatever its
// queue: the concurrency scope of every append to the task.
func TaskFilter(taskID string) string {
	return "trellis.queue.*." + taskID + ".>"
}

// DispatchTypes are the event types that make a task claimable; each is a
// dispatch the queue's claim consumer delivers.
func DispatchTypes() []string {
	return []string{TaskAdded, TaskAttemptFailed, TaskReleased, TaskRequeued}
}

// IsDispatch reports whether events of type typ are dispatches.
func IsDispatch(typ string) bool {
	switch typ {
	case TaskAdded, TaskAttemptFailed, TaskReleased, TaskRequeued:
		return true
	}
	return false
}

// TaskFilterIn is TaskFilter when the task's queue is known: the same
// subjects (task ids are unique across queues), without a wildcard in the
// middle, which the server resolves faster.
func TaskFilterIn(queue, taskID string) string {
	return "trellis.queue." + queue + "." + taskID + ".>"
}

// QueueDispatchSubjects are the subjects a queue's durable claim consumer
// delivers: events that make a task claimable.
func QueueDispatchSubjects(queue string) []string {
	var out []string
	for _, t := range DispatchTypes() {
		out = append(out, "trellis.queue."+queue+".*."+t)
	}
	return out
}

// TaskAddedPayload is the payload of an added event (schema 1).
type TaskAddedPayload struct {
	Queue          string            `json:"queue"`
	ParentID       string            `json:"parent_id,omitempty"`
	Objective      string            `json:"objective"`
	Inputs         []string          `json:"inputs,omitempty"`
	Acceptance     string            `json:"acceptance,omitempty"`
	Budget         trellis.Budget    `json:"budget"`
	MaxAttempts    int               `json:"max_attempts"`
	Metadata       map[string]string `json:"metadata,omitempty"`
	IdempotencyKey string            `json:"idempotency_key,omitempty"`
}

// TaskClaimedPayload is the payload of a claimed event (schema 1). Leased
// claims (worker pools) name the dispatch message they hold.
type TaskClaimedPayload struct {
	Worker      string `json:"worker"`
	Attempt     int    `json:"attempt"`
	Leased      bool   `json:"leased,omitempty"`
	DispatchSeq uint64 `json:"dispatch_seq,omitempty"`
	Delivery    uint64 `json:"delivery,omitempty"`
}

// TaskAttemptFailedPayload is the payload of attempt_failed and dead
// events (schema 1).
type TaskAttemptFailedPayload struct {
	Worker          string        `json:"worker,omitempty"`
	Attempt         int           `json:"attempt"`
	Error           string        `json:"error"`
	WhatWasDone     string        `json:"what_was_done,omitempty"`
	Blockers        []string      `json:"blockers,omitempty"`
	Usage           trellis.Usage `json:"usage"`
	BudgetExhausted bool          `json:"budget_exhausted"`
	RetryAt         *time.Time    `json:"retry_at,omitempty"`
}

// TaskLeaseExpiredPayload is the payload of a lease_expired event.
type TaskLeaseExpiredPayload struct {
	// Worker is the claimant whose lease expired.
	Worker  string `json:"worker"`
	Attempt int    `json:"attempt"`
	// Delivery is the redelivery that revealed the expiry.
	Delivery uint64 `json:"delivery"`
}

// TaskReleasedPayload is the payload of a released event.
type TaskReleasedPayload struct {
	Worker string `json:"worker"`
	Reason string `json:"reason"`
}

// TaskRequeuedPayload is the payload of a requeued event.
type TaskRequeuedPayload struct {
	Reason string `json:"reason"`
}

// QueueLimitPayload is the payload of a limit_set event: the maximum number
// of leased tasks in flight across all workers (0 = unlimited).
type QueueLimitPayload struct {
	MaxInFlight int `json:"max_in_flight"`
}

// QueueControlPayload is the payload of paused and resumed events.
type QueueControlPayload struct {
	Reason string `json:"reason,omitempty"`
}

// TaskCompletedPayload is the payload of a completed event (schema 1).
type TaskCompletedPayload struct {
	Worker          string        `json:"worker"`
	WhatWasDone     string        `json:"what_was_done"`
	WhatChanged     []string      `json:"what_changed,omitempty"`
	WhatNext        string        `json:"what_next,omitempty"`
	Blockers        []string      `json:"blockers,omitempty"`
	Citations       []string      `json:"citations,omitempty"`
	Usage           trellis.Usage `json:"usage"`
	BudgetExhausted bool          `json:"budget_exhausted"`
}

// TaskFailedPayload is the payload of a failed event (schema 1).
type TaskFailedPayload struct {
	Worker          string        `json:"worker"`
	Error           string        `json:"error"`
	WhatWasDone     string        `json:"what_was_done,omitempty"`
	Blockers        []string      `json:"blockers,omitempty"`
	Usage           trellis.Usage `json:"usage"`
	BudgetExhausted bool          `json:"budget_exhausted"`
}

// ApplyTask folds one queue event into the task packet t (nil before the
// first event) and returns the new state. It is the single definition of
// what each queue event means, used by the command side, the projections
// and the exporters alike. Events of unknown types are ignored so newer
// writers do not break older readers.
func ApplyTask(t *trellis.Task, rec Recorded) (*trellis.Task, error) {
	if rec.Schema > QueueSchema {
		return t, fmt.Errorf("event %s: schema %d is newer than this build understands (%d)", rec.ID, rec.Schema, QueueSchema)
	}
	if IsControlSubject(rec.Subject) {
		return t, nil
	}
	at := rec.Time.UTC()
	if rec.Type != TaskAdded && t == nil {
		return nil, fmt.Errorf("event %s (%s) precedes its task's added event: %w", rec.ID, rec.Type, ErrBadEvent)
	}
	switch rec.Type {
	case TaskAdded:
		var p TaskAddedPayload
		if err := rec.DecodePayload(&p); err != nil {
			return t, err
		}
		nt := &trellis.Task{
			TaskID:         rec.AggregateID,
			Queue:          p.Queue,
			Objective:      p.Objective,
			Inputs:         nonNil(p.Inputs),
			Acceptance:     p.Acceptance,
			Budget:         p.Budget,
			Status:         trellis.StatusQueued,
			CreatedAt:      at,
			UpdatedAt:      at,
			Metadata:       p.Metadata,
			MaxAttempts:    p.MaxAttempts,
			IdempotencyKey: p.IdempotencyKey,
		}
		if nt.Metadata == nil {
			nt.Metadata = map[string]string{}
		}
		if p.ParentID != "" {
			parent := p.ParentID
			nt.ParentID = &parent
		}
		return nt, nil
	case TaskClaimed:
		var p TaskClaimedPayload
		if err := rec.DecodePayload(&p); err != nil {
			return t, err
		}
		t.Status = trellis.StatusClaimed
		t.ClaimedBy = p.Worker
		t.ClaimedAt = &at
		t.Attempts = p.Attempt
		t.RetryAt = nil
		t.Lease = nil
		if p.Leased {
			t.Lease = &trellis.Lease{DispatchSeq: p.DispatchSeq, Delivery: p.Delivery}
		}
	case TaskCompleted:
		var p TaskCompletedPayload
		if err := rec.DecodePayload(&p); err != nil {
			return t, err
		}
		t.Status = trellis.StatusDone
		t.BudgetExhausted = p.BudgetExhausted
		t.Checkpoint = &trellis.Checkpoint{
			WhatWasDone:     p.WhatWasDone,
			WhatChanged:     nonNil(p.WhatChanged),
			WhatNext:        p.WhatNext,
			Blockers:        nonNil(p.Blockers),
			Citations:       nonNil(p.Citations),
			BudgetExhausted: p.BudgetExhausted,
			Usage:           p.Usage,
			CreatedAt:       at,
		}
	case TaskFailed:
		var p TaskFailedPayload
		if err := rec.DecodePayload(&p); err != nil {
			return t, err
		}
		t.Status = trellis.StatusFailed
		t.BudgetExhausted = p.BudgetExhausted
		t.Checkpoint = &trellis.Checkpoint{
			WhatWasDone:     p.WhatWasDone,
			WhatChanged:     []string{},
			Blockers:        nonNil(p.Blockers),
			Citations:       []string{},
			Error:           p.Error,
			BudgetExhausted: p.BudgetExhausted,
			Usage:           p.Usage,
			CreatedAt:       at,
		}
	case TaskAttemptFailed, TaskDead:
		var p TaskAttemptFailedPayload
		if err := rec.DecodePayload(&p); err != nil {
			return t, err
		}
		t.LastError = p.Error
		t.BudgetExhausted = p.BudgetExhausted
		t.Lease = nil
		if rec.Type == TaskDead {
			t.Status = trellis.StatusDead
			t.RetryAt = nil
			t.Checkpoint = &trellis.Checkpoint{
				WhatWasDone: p.WhatWasDone, WhatChanged: []string{}, Blockers: nonNil(p.Blockers), Citations: []string{},
				Error: p.Error, BudgetExhausted: p.BudgetExhausted, Usage: p.Usage, CreatedAt: at,
			}
		} else {
			t.Status = trellis.StatusQueued
			t.ClaimedBy, t.ClaimedAt = "", nil
			if p.RetryAt != nil {
				r := p.RetryAt.UTC()
				t.RetryAt = &r
			}
		}
	case TaskLeaseExpired:
		t.Status = trellis.StatusQueued
		t.ClaimedBy, t.ClaimedAt, t.Lease = "", nil, nil
	case TaskReleased:
		t.Status = trellis.StatusQueued
		t.ClaimedBy, t.ClaimedAt, t.Lease = "", nil, nil
		if t.Attempts > 0 {
			t.Attempts-- // a released claim is not an attempt
		}
	case TaskRequeued:
		t.Status = trellis.StatusQueued
		t.ClaimedBy, t.ClaimedAt, t.Lease, t.RetryAt = "", nil, nil, nil
		t.Attempts = 0
		t.BudgetExhausted = false
		t.Checkpoint = nil
	default:
		return t, nil
	}
	t.UpdatedAt = at
	return t, nil
}

// FoldTask folds a task's whole history.
func FoldTask(recs []Recorded) (*trellis.Task, error) {
	var t *trellis.Task
	var err error
	for _, r := range recs {
		if t, err = ApplyTask(t, r); err != nil {
			return nil, err
		}
	}
	return t, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
