package taskqueue

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
)

// Queue event types: the last token of trellis.queue.<queue>.<task_id>.<type>.
const (
	// Added records queue add: the whole packet as requested.
	Added = "added"
	// Claimed records a claim by a worker (queue next).
	Claimed = "claimed"
	// Completed records queue done with its checkpoint.
	Completed = "completed"
	// Failed records a terminal failure with its checkpoint.
	Failed = "failed"
	// AttemptFailed records a failed attempt that will be retried: the
	// task is queued again, claimable from retry_at on.
	AttemptFailed = "attempt_failed"
	// Dead records the dead letter: the task used up its attempts.
	Dead = "dead"
	// LeaseExpired records that a worker pool's claimant stopped
	// heartbeating and its lease ran out; the task is queued again.
	LeaseExpired = "lease_expired"
	// Released records a claimant giving a task back unfinished (a
	// draining worker); the attempt does not count.
	Released = "released"
	// Requeued records an explicit retry (queue retry): the task is
	// queued again with fresh attempts.
	Requeued = "requeued"
	// Due records that a delayed task's time has come: the server
	// publishes it from the task's timer (a JetStream message schedule).
	Due = "due"
	// PrerequisiteDone records that one prerequisite of a waiting task is
	// done, with its checkpoint summary.
	PrerequisiteDone = "prerequisite_done"
	// Ready records that the last prerequisite of a waiting task is done:
	// the task is queued (or scheduled, when not due yet).
	Ready = "ready"
	// Linked records, on a prerequisite, a task added after it.
	Linked = "linked"
	// CancelRequested marks a claimed task for cancellation: its pool stops
	// the handler at the next heartbeat.
	CancelRequested = "cancel_requested"
	// Cancelled ends a task that will never run (again).
	Cancelled = "cancelled"
	// LeaseExtended records an agent's heartbeat on a task it claimed with
	// queue next: its lease now ends later.
	LeaseExtended = "lease_extended"
)

// Queue control event types, on trellis.queue.<queue>._control.<type>.
const (
	// Paused stops all claims on a queue, cluster-wide.
	Paused = "paused"
	// Resumed lets claims on a paused queue resume.
	Resumed = "resumed"
	// LimitSet sets the queue's global concurrency limit.
	LimitSet = "limit_set"
	// LeaseSet sets the queue's lease (the claim consumer's AckWait).
	LeaseSet = "lease_set"
	// RateSet sets (or removes) the queue's cluster-wide claim rate.
	RateSet = "rate_set"
	// PerKeySet sets the queue's per-concurrency-key limit.
	PerKeySet = "per_key_set"
)

// ControlID is the aggregate id (subject token) of a queue's controls.
const ControlID = "_control"

// IsControlSubject reports whether subject belongs to a queue's control
// aggregate rather than to a task.
func IsControlSubject(subject string) bool {
	return strings.Contains(subject, "."+ControlID+".")
}

// IsTaskSubject reports whether subject holds an event of a task:
// trellis.queue.<queue>.<task id>.<type>[.<route>]. The queue stream's
// other subjects (controls, unique keys, concurrency gates, schedules,
// timers) have a token starting with "_" in the task id's place.
func IsTaskSubject(subject string) bool {
	parts := strings.SplitN(subject, ".", 6)
	return len(parts) >= 5 && parts[0] == "trellis" && parts[1] == "queue" && !strings.HasPrefix(parts[3], "_")
}

// ControlSubject is the subject of a queue control event.
func ControlSubject(queue, typ string) string {
	return "trellis.queue." + queue + "." + ControlID + "." + typ
}

// ControlFilter is the subject filter of a queue's control aggregate.
func ControlFilter(queue string) string {
	return "trellis.queue." + queue + "." + ControlID + ".>"
}

// Schema is the current schema version of every queue payload.
const Schema = 1

// Subject is the subject of a queue event.
func Subject(queue, taskID, typ string) string {
	return "trellis.queue." + queue + "." + taskID + "." + typ
}

// Filter is the subject filter of one task aggregate, whatever its
// queue: the concurrency scope of every append to the task.
func Filter(taskID string) string {
	return "trellis.queue.*." + taskID + ".>"
}

// DispatchTypes are the event types that make a task claimable; each is a
// dispatch the queue's claim consumer delivers.
func DispatchTypes() []string {
	return []string{Added, AttemptFailed, Released, Requeued, Due, Ready}
}

// IsDispatch reports whether events of type typ are dispatches.
func IsDispatch(typ string) bool {
	switch typ {
	case Added, AttemptFailed, Released, Requeued, Due, Ready:
		return true
	}
	return false
}

// EndTypes are the event types that end a task for its dependants: done
// (they may be queued) or never done (they are cancelled).
func EndTypes() []string { return []string{Completed, Failed, Dead, Cancelled} }

func isEnd(typ string) bool {
	switch typ {
	case Completed, Failed, Dead, Cancelled:
		return true
	}
	return false
}

// Subject routes. A dispatch of a task whose priority is not the default
// carries ".p<priority>" (its priority lane's claim consumer delivers it);
// an end of a task with dependants carries ".d" (the dependency resolver
// takes it up). Events of other tasks keep the plain subject.
const dependantsRoute = "d"

// TaskSubject is the subject of an event of type typ on task t: Subject
// plus the route its priority or its dependants give it.
func TaskSubject(t *trellis.Task, typ string) string {
	s := Subject(t.Queue, t.TaskID, typ)
	if IsDispatch(typ) && t.Priority != 0 && t.Priority != trellis.DefaultPriority {
		s += ".p" + strconv.Itoa(t.Priority)
	}
	if isEnd(typ) && len(t.Dependants) > 0 {
		s += "." + dependantsRoute
	}
	return s
}

// LaneSubjects are the dispatch subjects of one priority lane of a queue.
func LaneSubjects(queue string, priority int) []string {
	if priority == trellis.DefaultPriority {
		return DispatchSubjects(queue)
	}
	var out []string
	for _, t := range DispatchTypes() {
		out = append(out, "trellis.queue."+queue+".*."+t+".p"+strconv.Itoa(priority))
	}
	return out
}

// DependantSubjects are the subjects the dependency resolver takes up:
// the ends of tasks with dependants, in every queue.
func DependantSubjects() []string {
	var out []string
	for _, t := range EndTypes() {
		out = append(out, "trellis.queue.*.*."+t+"."+dependantsRoute)
	}
	return out
}

// FilterIn is Filter when the task's queue is known: the same
// subjects (task ids are unique across queues), without a wildcard in the
// middle, which the server resolves faster.
func FilterIn(queue, taskID string) string {
	return "trellis.queue." + queue + "." + taskID + ".>"
}

// DispatchSubjects are the subjects a queue's durable claim consumer
// delivers: events that make a task claimable.
func DispatchSubjects(queue string) []string {
	var out []string
	for _, t := range DispatchTypes() {
		out = append(out, "trellis.queue."+queue+".*."+t)
	}
	return out
}

// AddedPayload is the payload of an added event (schema 1).
type AddedPayload struct {
	Queue          string            `json:"queue"`
	ParentID       string            `json:"parent_id,omitempty"`
	Objective      string            `json:"objective"`
	Inputs         []string          `json:"inputs,omitempty"`
	Acceptance     string            `json:"acceptance,omitempty"`
	Budget         trellis.Budget    `json:"budget"`
	MaxAttempts    int               `json:"max_attempts"`
	Metadata       map[string]string `json:"metadata,omitempty"`
	IdempotencyKey string            `json:"idempotency_key,omitempty"`
	// Priority is the task's priority (absent: the default, 2).
	Priority int `json:"priority,omitempty"`
	// RunAt is set when the task was added with a timer: it is scheduled
	// until the timer's due event.
	RunAt *time.Time `json:"run_at,omitempty"`
	// After lists the prerequisites; WaitingFor those not done when the
	// task was added; Prerequisites the summaries of those done then.
	After         []string               `json:"after,omitempty"`
	WaitingFor    []string               `json:"waiting_for,omitempty"`
	Prerequisites []trellis.Prerequisite `json:"prerequisites,omitempty"`
	// UniqueKey is held by the task (until UniqueUntil, or while it is not
	// finished).
	UniqueKey   string     `json:"unique_key,omitempty"`
	UniqueUntil *time.Time `json:"unique_until,omitempty"`
	// ConcurrencyKey subjects the task to the queue's per-key limit.
	ConcurrencyKey string `json:"concurrency_key,omitempty"`
	// TimeoutMS bounds one attempt's run time (0: none of its own).
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
	// Schedule names the periodic schedule whose tick added the task.
	Schedule string `json:"schedule,omitempty"`
}

// DuePayload is the payload of a due event: the time the task was due.
type DuePayload struct {
	RunAt time.Time `json:"run_at"`
}

// PrerequisitePayload is the payload of prerequisite_done and ready
// events: the summary of the prerequisite that is done.
type PrerequisitePayload struct {
	Prerequisite trellis.Prerequisite `json:"prerequisite"`
}

// LinkedPayload is the payload of a linked event: the dependant added.
type LinkedPayload struct {
	Dependant string `json:"dependant"`
}

// CancelPayload is the payload of cancel_requested and cancelled events.
// Worker is the claimant that stopped the task (a cancellation its pool
// carried out).
type CancelPayload struct {
	Reason string `json:"reason,omitempty"`
	Worker string `json:"worker,omitempty"`
}

// RatePayload is the payload of a rate_set event (PerSecond 0: no rate).
type RatePayload struct {
	Rate      string  `json:"rate,omitempty"`
	PerSecond float64 `json:"per_second"`
	Burst     int     `json:"burst,omitempty"`
}

// PerKeyPayload is the payload of a per_key_set event (0: no limit).
type PerKeyPayload struct {
	PerKey int `json:"per_key"`
}

// ClaimedPayload is the payload of a claimed event (schema 1). Leased
// claims (worker pools) name the dispatch message they hold.
type ClaimedPayload struct {
	Worker      string `json:"worker"`
	Attempt     int    `json:"attempt"`
	Leased      bool   `json:"leased,omitempty"`
	DispatchSeq uint64 `json:"dispatch_seq,omitempty"`
	Delivery    uint64 `json:"delivery,omitempty"`
	// At is when a worker pool's claim was made, when it is recorded
	// later (see Hold): carried by the outcome that ends it, or recorded
	// once its window passed. The event's own time is when it was
	// recorded.
	At *time.Time `json:"at,omitempty"`
	// LeaseMS is the lease of a claim by queue next (an agent's): it
	// expires LeaseMS after the claim unless the claimant heartbeats
	// (lease_extended). Its dispatch is left pending until then, so that
	// its redelivery reveals the expiry. 0 for a worker pool's claim,
	// whose lease is the dispatch it holds.
	LeaseMS int64 `json:"lease_ms,omitempty"`
	// Ack is the acknowledgement subject of an agent's claim's dispatch:
	// the server acknowledges it when the claim ends (an outcome, a
	// release, a cancel), so that the dispatch stops counting against
	// the queue's pending limit.
	Ack string `json:"ack,omitempty"`
}

// LeaseExtendedPayload is the payload of a lease_extended event: the
// claimant heartbeat, and its lease now ends at ExpiresAt.
type LeaseExtendedPayload struct {
	Worker    string    `json:"worker"`
	ExpiresAt time.Time `json:"expires_at"`
}

// AttemptFailedPayload is the payload of attempt_failed and dead
// events (schema 1).
type AttemptFailedPayload struct {
	Worker          string        `json:"worker,omitempty"`
	Attempt         int           `json:"attempt"`
	Error           string        `json:"error"`
	WhatWasDone     string        `json:"what_was_done,omitempty"`
	Blockers        []string      `json:"blockers,omitempty"`
	Usage           trellis.Usage `json:"usage"`
	BudgetExhausted bool          `json:"budget_exhausted"`
	RetryAt         *time.Time    `json:"retry_at,omitempty"`
	// Claim is the claim this outcome ends, when a worker pool records
	// both in one event (see Hold); nil when the claim has its own event.
	Claim *ClaimedPayload `json:"claim,omitempty"`
}

// LeaseExpiredPayload is the payload of a lease_expired event.
type LeaseExpiredPayload struct {
	// Worker is the claimant whose lease expired.
	Worker  string `json:"worker"`
	Attempt int    `json:"attempt"`
	// Delivery is the redelivery that revealed the expiry.
	Delivery uint64 `json:"delivery"`
}

// ReleasedPayload is the payload of a released event.
// Worker is the claimant; an operator's release has the operator as
// the event's actor.
type ReleasedPayload struct {
	Worker string `json:"worker"`
	Reason string `json:"reason"`
}

// RequeuedPayload is the payload of a requeued event.
type RequeuedPayload struct {
	Reason string `json:"reason"`
}

// LimitPayload is the payload of a limit_set event: the maximum number
// of leased tasks in flight across all workers (0 = unlimited).
type LimitPayload struct {
	MaxInFlight int `json:"max_in_flight"`
}

// LeasePayload is the payload of a lease_set event: the queue's new lease
// and, when it is shorter than the one before, when the claim consumer
// takes it (pools heartbeat for it from the event on).
type LeasePayload struct {
	LeaseMillis         int64      `json:"lease_ms"`
	PreviousLeaseMillis int64      `json:"previous_lease_ms,omitempty"`
	From                *time.Time `json:"from,omitempty"`
}

// ControlPayload is the payload of paused and resumed events.
type ControlPayload struct {
	Reason string `json:"reason,omitempty"`
}

// CompletedPayload is the payload of a completed event (schema 1).
type CompletedPayload struct {
	Worker          string        `json:"worker"`
	WhatWasDone     string        `json:"what_was_done"`
	WhatChanged     []string      `json:"what_changed,omitempty"`
	WhatNext        string        `json:"what_next,omitempty"`
	Blockers        []string      `json:"blockers,omitempty"`
	Citations       []string      `json:"citations,omitempty"`
	Usage           trellis.Usage `json:"usage"`
	BudgetExhausted bool          `json:"budget_exhausted"`
	// Claim is the claim this outcome ends, when a worker pool records
	// both in one event (see Hold); nil when the claim has its own event.
	Claim *ClaimedPayload `json:"claim,omitempty"`
}

// FailedPayload is the payload of a failed event (schema 1).
type FailedPayload struct {
	Worker          string        `json:"worker"`
	Error           string        `json:"error"`
	WhatWasDone     string        `json:"what_was_done,omitempty"`
	Blockers        []string      `json:"blockers,omitempty"`
	Usage           trellis.Usage `json:"usage"`
	BudgetExhausted bool          `json:"budget_exhausted"`
	// Claim is the claim this outcome ends, when a worker pool records
	// both in one event (see Hold); nil when the claim has its own event.
	Claim *ClaimedPayload `json:"claim,omitempty"`
}

// Apply folds one queue event into the task packet t (nil before the
// first event) and returns the new state. It is the single definition of
// what each queue event means, used by the command side, the projections
// and the exporters alike. Events of unknown types are ignored so newer
// writers do not break older readers.
func Apply(t *trellis.Task, rec events.Recorded) (*trellis.Task, error) {
	if rec.Schema > Schema {
		return t, fmt.Errorf("event %s: schema %d is newer than this build understands (%d)", rec.ID, rec.Schema, Schema)
	}
	if rec.Subject != "" && !IsTaskSubject(rec.Subject) {
		return t, nil
	}
	if rec.Type == Pruned {
		return nil, nil // removed by a prune: see Pruned
	}
	if rec.Type == Snapshot {
		return taskFromSnapshot(rec)
	}
	at := rec.Time.UTC()
	if rec.Type != Added && t == nil {
		return nil, fmt.Errorf("event %s (%s) precedes its task's added event: %w", rec.ID, rec.Type, events.ErrBadEvent)
	}
	if CarriesClaim(rec.Type) {
		// A worker pool's outcome may carry its claim (see Hold):
		// the claim applies first, then the outcome.
		var c struct {
			Claim *ClaimedPayload `json:"claim"`
		}
		if err := rec.DecodePayload(&c); err != nil {
			return t, err
		}
		if c.Claim != nil {
			claimedAt := at
			if c.Claim.At != nil {
				claimedAt = c.Claim.At.UTC()
			}
			applyClaim(t, *c.Claim, claimedAt)
		}
	}
	switch rec.Type {
	case Added:
		var p AddedPayload
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
			Priority:       p.Priority,
			RunAt:          utcPtr(p.RunAt),
			After:          p.After,
			WaitingFor:     p.WaitingFor,
			Prerequisites:  p.Prerequisites,
			UniqueKey:      p.UniqueKey,
			UniqueUntil:    utcPtr(p.UniqueUntil),
			ConcurrencyKey: p.ConcurrencyKey,
			TimeoutMS:      p.TimeoutMS,
			Schedule:       p.Schedule,
		}
		if nt.Priority == 0 {
			nt.Priority = trellis.DefaultPriority
		}
		switch {
		case len(nt.WaitingFor) > 0:
			nt.Status = trellis.StatusWaiting
		case nt.RunAt != nil:
			nt.Status = trellis.StatusScheduled
		}
		if nt.Metadata == nil {
			nt.Metadata = map[string]string{}
		}
		if p.ParentID != "" {
			parent := p.ParentID
			nt.ParentID = &parent
		}
		return nt, nil
	case Claimed:
		var p ClaimedPayload
		if err := rec.DecodePayload(&p); err != nil {
			return t, err
		}
		claimedAt := at
		if p.At != nil {
			claimedAt = p.At.UTC() // a held claim recorded after its window
		}
		applyClaim(t, p, claimedAt)
	case Completed:
		var p CompletedPayload
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
	case Failed:
		var p FailedPayload
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
	case AttemptFailed, Dead:
		var p AttemptFailedPayload
		if err := rec.DecodePayload(&p); err != nil {
			return t, err
		}
		t.LastError = p.Error
		t.BudgetExhausted = p.BudgetExhausted
		t.Lease = nil
		if rec.Type == Dead {
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
	case LeaseExtended:
		var p LeaseExtendedPayload
		if err := rec.DecodePayload(&p); err != nil {
			return t, err
		}
		if t.Status == trellis.StatusClaimed && t.Lease != nil {
			l := *t.Lease
			until := p.ExpiresAt.UTC()
			l.ExpiresAt = &until
			t.Lease = &l
		}
		return t, nil // the task itself did not change
	case LeaseExpired:
		t.Status = trellis.StatusQueued
		t.ClaimedBy, t.ClaimedAt, t.Lease = "", nil, nil
	case Released:
		t.Status = trellis.StatusQueued
		t.ClaimedBy, t.ClaimedAt, t.Lease = "", nil, nil
		if t.Attempts > 0 {
			t.Attempts-- // a released claim is not an attempt
		}
	case Requeued:
		t.Status = trellis.StatusQueued
		t.ClaimedBy, t.ClaimedAt, t.Lease, t.RetryAt = "", nil, nil, nil
		t.Attempts = 0
		t.BudgetExhausted = false
		t.Checkpoint = nil
	case Due:
		var p DuePayload
		if err := rec.DecodePayload(&p); err != nil {
			return t, err
		}
		if t.Due {
			return t, nil
		}
		t.Due = true
		if t.Status != trellis.StatusScheduled {
			return t, nil // waiting (queued once ready) or cancelled
		}
		t.Status = trellis.StatusQueued
		at = p.RunAt.UTC()
	case PrerequisiteDone, Ready:
		var p PrerequisitePayload
		if err := rec.DecodePayload(&p); err != nil {
			return t, err
		}
		i := slices.Index(t.WaitingFor, p.Prerequisite.TaskID)
		if i < 0 {
			return t, nil
		}
		t.WaitingFor = slices.Delete(slices.Clone(t.WaitingFor), i, i+1)
		if len(t.WaitingFor) == 0 {
			t.WaitingFor = nil
		}
		t.Prerequisites = append(t.Prerequisites, p.Prerequisite)
		if t.Status == trellis.StatusWaiting && len(t.WaitingFor) == 0 {
			t.Status = trellis.StatusQueued
			if t.RunAt != nil && !t.Due {
				t.Status = trellis.StatusScheduled
			}
		}
	case Linked:
		var p LinkedPayload
		if err := rec.DecodePayload(&p); err != nil {
			return t, err
		}
		if !slices.Contains(t.Dependants, p.Dependant) {
			t.Dependants = append(t.Dependants, p.Dependant)
		}
		return t, nil // the task itself did not change
	case CancelRequested:
		var p CancelPayload
		if err := rec.DecodePayload(&p); err != nil {
			return t, err
		}
		t.CancelRequested = &trellis.Cancellation{Reason: p.Reason, By: rec.Actor, At: at}
	case Cancelled:
		var p CancelPayload
		if err := rec.DecodePayload(&p); err != nil {
			return t, err
		}
		t.Status = trellis.StatusCancelled
		t.Cancellation = &trellis.Cancellation{Reason: p.Reason, By: rec.Actor, At: at}
		t.Lease, t.RetryAt = nil, nil
	default:
		return t, nil
	}
	t.UpdatedAt = at
	return t, nil
}

// applyClaim makes t claimed as p says, at time at.
func applyClaim(t *trellis.Task, p ClaimedPayload, at time.Time) {
	t.Status = trellis.StatusClaimed
	t.ClaimedBy = p.Worker
	t.ClaimedAt = &at
	t.Attempts = p.Attempt
	t.RetryAt = nil
	t.Lease = nil
	if p.Leased {
		t.Lease = &trellis.Lease{DispatchSeq: p.DispatchSeq, Delivery: p.Delivery}
		if p.LeaseMS > 0 {
			until := at.Add(time.Duration(p.LeaseMS) * time.Millisecond)
			t.Lease.LeaseMS, t.Lease.ExpiresAt, t.Lease.Ack = p.LeaseMS, &until, p.Ack
		}
	}
}

// CarriesClaim reports whether events of type typ may carry the claim
// they end (a worker pool's outcome recorded with its claim in one event).
func CarriesClaim(typ string) bool {
	switch typ {
	case Completed, Failed, AttemptFailed, Dead:
		return true
	}
	return false
}

// ClaimOf returns the claim an outcome event carries, if any.
func ClaimOf(rec events.Recorded) (*ClaimedPayload, bool) {
	if !CarriesClaim(rec.Type) {
		return nil, false
	}
	var c struct {
		Claim *ClaimedPayload `json:"claim"`
	}
	if rec.DecodePayload(&c) != nil || c.Claim == nil {
		return nil, false
	}
	return c.Claim, true
}

// Fold folds a task's whole history.
func Fold(recs []events.Recorded) (*trellis.Task, error) {
	var t *trellis.Task
	var err error
	for _, r := range recs {
		if t, err = Apply(t, r); err != nil {
			return nil, err
		}
	}
	return t, nil
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
