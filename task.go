package trellis

import (
	"slices"
	"time"
)

// Status is a task's place in its lifecycle.
type Status string

// Task statuses. Queued tasks can be claimed; claimed tasks are finished by
// their claimant with done (StatusDone) or fail (StatusFailed). StatusDead is
// used by worker pools once a task has used up its attempts. A task added
// with a delay is scheduled until it is due; one added after other tasks is
// waiting until they are done; a cancelled task never runs (again).
const (
	StatusScheduled Status = "scheduled"
	StatusWaiting   Status = "waiting"
	StatusQueued    Status = "queued"
	StatusClaimed   Status = "claimed"
	StatusDone      Status = "done"
	StatusFailed    Status = "failed"
	StatusDead      Status = "dead"
	StatusCancelled Status = "cancelled"
)

// Statuses lists every task status in lifecycle order.
func Statuses() []Status {
	return []Status{StatusScheduled, StatusWaiting, StatusQueued, StatusClaimed, StatusDone, StatusFailed, StatusDead, StatusCancelled}
}

// Valid reports whether s is a known status.
func (s Status) Valid() bool {
	switch s {
	case StatusScheduled, StatusWaiting, StatusQueued, StatusClaimed, StatusDone, StatusFailed, StatusDead, StatusCancelled:
		return true
	}
	return false
}

// Terminal reports whether no worker will act on a task in this status
// again without an explicit retry.
func (s Status) Terminal() bool {
	return s == StatusDone || s == StatusFailed || s == StatusDead || s == StatusCancelled
}

// Ended reports whether a task in this status can never become done
// without an explicit retry: its dependants are cancelled.
func (s Status) Ended() bool {
	return s == StatusFailed || s == StatusDead || s == StatusCancelled
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
// or fails a task (the checkpoint format).
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

// Task is the task packet: the packet's fields plus what a distributed queue
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

	// Priority orders claims within the queue: 1 first, 4 last (default 2).
	Priority int `json:"priority"`
	// RunAt is when a delayed task becomes claimable (its status is
	// scheduled until then); Due is set once that time has come.
	RunAt *time.Time `json:"run_at,omitempty"`
	Due   bool       `json:"due,omitempty"`
	// After lists the prerequisites: tasks that must be done before this
	// one is queued (it is waiting until then). WaitingFor lists those not
	// done yet; Prerequisites holds the checkpoint summary of each one
	// done, so an agent reads what the steps before it did.
	After         []string       `json:"after,omitempty"`
	WaitingFor    []string       `json:"waiting_for,omitempty"`
	Prerequisites []Prerequisite `json:"prerequisites,omitempty"`
	// Dependants lists the tasks added after this one (queued when it is
	// done, cancelled when it fails, dies or is cancelled).
	Dependants []string `json:"dependants,omitempty"`
	// UniqueKey holds the task's queue-wide unique key: an add with the
	// same key returns this task while it holds the key (UniqueUntil, or
	// while the task is not finished when that is unset).
	UniqueKey   string     `json:"unique_key,omitempty"`
	UniqueUntil *time.Time `json:"unique_until,omitempty"`
	// ConcurrencyKey caps the tasks running at once with the same key
	// (the queue's per-key limit).
	ConcurrencyKey string `json:"concurrency_key,omitempty"`
	// TimeoutMS bounds one attempt's run time in milliseconds (0: none
	// of its own): see AddTaskRequest.Timeout.
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
	// CancelRequested is set when a claimed task is asked to stop: its
	// pool stops the handler at the next heartbeat and records cancelled.
	CancelRequested *Cancellation `json:"cancel_requested,omitempty"`
	// Cancellation says who cancelled the task and why (status cancelled).
	Cancellation *Cancellation `json:"cancellation,omitempty"`
	// Schedule names the periodic schedule whose tick added the task.
	Schedule string `json:"schedule,omitempty"`
	// Duplicate is set on the answer of an add whose unique key was held:
	// the task returned is the one holding it, and nothing was added.
	Duplicate bool `json:"duplicate,omitempty"`
}

// Prerequisite is the checkpoint summary of a prerequisite that is done.
type Prerequisite struct {
	TaskID      string   `json:"task_id"`
	Objective   string   `json:"objective"`
	WhatWasDone string   `json:"what_was_done"`
	WhatChanged []string `json:"what_changed,omitempty"`
	WhatNext    string   `json:"what_next,omitempty"`
	Citations   []string `json:"citations,omitempty"`
}

// Cancellation records a cancellation: why, by whom, when.
type Cancellation struct {
	Reason string    `json:"reason,omitempty"`
	By     string    `json:"by,omitempty"`
	At     time.Time `json:"at"`
}

// Lease identifies the dispatch a worker pool holds while it works on a
// task: the JetStream message (by stream sequence) and its delivery count.
// A redelivery of the same dispatch means the lease expired.
//
// A claim by queue next (an agent's) carries its own lease: LeaseMS, and
// ExpiresAt, when it ends unless the claimant heartbeats (each heartbeat
// moves it to LeaseMS from then). A redelivery of its dispatch before
// ExpiresAt is put off until then; one after it records the expiry.
type Lease struct {
	DispatchSeq uint64     `json:"dispatch_seq"`
	Delivery    uint64     `json:"delivery"`
	LeaseMS     int64      `json:"lease_ms,omitempty"`
	ExpiresAt   *time.Time `json:"expires_at,omitempty"`
	// Ack is the acknowledgement subject of an agent's claim's dispatch:
	// the server acknowledges it when the claim ends (only Trellis's own
	// NATS user may publish to it).
	Ack string `json:"ack,omitempty"`
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
		l.ExpiresAt = clonePtr(t.Lease.ExpiresAt)
		c.Lease = &l
	}
	c.RunAt = clonePtr(t.RunAt)
	c.UniqueUntil = clonePtr(t.UniqueUntil)
	c.CancelRequested = clonePtr(t.CancelRequested)
	c.Cancellation = clonePtr(t.Cancellation)
	c.After = slices.Clone(t.After)
	c.WaitingFor = slices.Clone(t.WaitingFor)
	c.Dependants = slices.Clone(t.Dependants)
	if t.Prerequisites != nil {
		c.Prerequisites = make([]Prerequisite, len(t.Prerequisites))
		for i, p := range t.Prerequisites {
			p.WhatChanged = slices.Clone(p.WhatChanged)
			p.Citations = slices.Clone(p.Citations)
			c.Prerequisites[i] = p
		}
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

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
