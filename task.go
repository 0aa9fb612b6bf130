package trellis

import (
	"slices"
	"time"
)

// Status is a task's place in its lifecycle.
type Status string

// Task statuses. Queued tasks can be claimed; claimed tasks are finished by
// their claimant with done (StatusDone) or fail (StatusFailed). StatusDead is
// used by worker pools once a task has used up its attempts.
const (
	StatusQueued  Status = "queued"
	StatusClaimed Status = "claimed"
	StatusDone    Status = "done"
	StatusFailed  Status = "failed"
	StatusDead    Status = "dead"
)

// Statuses lists every task status in lifecycle order.
func Statuses() []Status {
	return []Status{StatusQueued, StatusClaimed, StatusDone, StatusFailed, StatusDead}
}

// Valid reports whether s is a known status.
func (s Status) Valid() bool {
	switch s {
	case StatusQueued, StatusClaimed, StatusDone, StatusFailed, StatusDead:
		return true
	}
	return false
}

// Terminal reports whether no worker will act on a task in this status
// again without an explicit retry.
func (s Status) Terminal() bool {
	return s == StatusDone || s == StatusFailed || s == StatusDead
}

// Budget bounds the work a worker may spend on one task.
type Budget struct {
	MaxToolCalls int `json:"max_tool_calls"`
	MaxSteps     int `json:"max_steps"`
}

// Usage is what a worker reports it spent on a task.
type Usage struct {
	StepsUsed     int `json:"steps_used"`
	ToolCallsUsed int `json:"tool_calls_used"`
}

// Exceeds reports whether u spends more than b allows.
func (u Usage) Exceeds(b Budget) bool {
	return u.StepsUsed > b.MaxSteps || u.ToolCallsUsed > b.MaxToolCalls
}

// Checkpoint is the resume-friendly record a worker leaves when it finishes
// or fails a task (seed 000's checkpoint format).
type Checkpoint struct {
	WhatWasDone     string    `json:"what_was_done"`
	WhatChanged     []string  `json:"what_changed"`
	WhatNext        string    `json:"what_next,omitempty"`
	Blockers        []string  `json:"blockers"`
	Citations       []string  `json:"citations"`
	Error           string    `json:"error,omitempty"`
	BudgetExhausted bool      `json:"budget_exhausted"`
	Usage           Usage     `json:"usage"`
	CreatedAt       time.Time `json:"created_at"`
}

// Task is the task packet: seed 000's fields plus what a distributed queue
// needs (queue, attempts, claimant).
type Task struct {
	TaskID          string            `json:"task_id"`
	Queue           string            `json:"queue"`
	ParentID        *string           `json:"parent_id"`
	Objective       string            `json:"objective"`
	Inputs          []string          `json:"inputs"`
	Acceptance      string            `json:"acceptance"`
	Budget          Budget            `json:"budget"`
	Status          Status            `json:"status"`
	CreatedAt       time.Time         `json:"created_at"`
	UpdatedAt       time.Time         `json:"updated_at"`
	Metadata        map[string]string `json:"metadata"`
	MaxAttempts     int               `json:"max_attempts"`
	Attempts        int               `json:"attempts"`
	ClaimedBy       string            `json:"claimed_by,omitempty"`
	ClaimedAt       *time.Time        `json:"claimed_at,omitempty"`
	IdempotencyKey  string            `json:"idempotency_key,omitempty"`
	BudgetExhausted bool              `json:"budget_exhausted"`
	Checkpoint      *Checkpoint       `json:"checkpoint,omitempty"`
	// LastError is the error of the last failed attempt.
	LastError string `json:"last_error,omitempty"`
	// RetryAt is when a task queued for another attempt may be claimed.
	RetryAt *time.Time `json:"retry_at,omitempty"`
	// Lease is set while a worker pool holds the task under a lease.
	Lease *Lease `json:"lease,omitempty"`
}

// Lease identifies the dispatch a worker pool holds while it works on a
// task: the JetStream message (by stream sequence) and its delivery count.
// A redelivery of the same dispatch means the lease expired.
type Lease struct {
	DispatchSeq uint64 `json:"dispatch_seq"`
	Delivery    uint64 `json:"delivery"`
}

// Clone returns a deep copy of t.
func (t *Task) Clone() *Task {
	if t == nil {
		return nil
	}
	c := *t
	if t.ParentID != nil {
		p := *t.ParentID
		c.ParentID = &p
	}
	c.Inputs = slices.Clone(t.Inputs)
	if t.Metadata != nil {
		c.Metadata = make(map[string]string, len(t.Metadata))
		for k, v := range t.Metadata {
			c.Metadata[k] = v
		}
	}
	if t.ClaimedAt != nil {
		at := *t.ClaimedAt
		c.ClaimedAt = &at
	}
	if t.RetryAt != nil {
		at := *t.RetryAt
		c.RetryAt = &at
	}
	if t.Lease != nil {
		l := *t.Lease
		c.Lease = &l
	}
	if t.Checkpoint != nil {
		cp := *t.Checkpoint
		cp.WhatChanged = slices.Clone(t.Checkpoint.WhatChanged)
		cp.Blockers = slices.Clone(t.Checkpoint.Blockers)
		cp.Citations = slices.Clone(t.Checkpoint.Citations)
		c.Checkpoint = &cp
	}
	return &c
}
