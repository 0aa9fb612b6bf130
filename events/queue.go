package events

import (
	"fmt"

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
	// TaskFailed records queue fail with its checkpoint.
	TaskFailed = "failed"
)

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

// QueueDispatchSubjects are the subjects a queue's durable claim consumer
// delivers: events that make a task claimable.
func QueueDispatchSubjects(queue string) []string {
	return []string{"trellis.queue." + queue + ".*." + TaskAdded}
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

// TaskClaimedPayload is the payload of a claimed event (schema 1).
type TaskClaimedPayload struct {
	Worker  string `json:"worker"`
	Attempt int    `json:"attempt"`
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
	at := rec.Time.UTC()
	if rec.Type != TaskAdded && t == nil {
		return nil, fmt.Errorf("event %s (%s) precedes its task's added event", rec.ID, rec.Type)
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
