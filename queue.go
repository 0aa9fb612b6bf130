package trellis

import (
	"context"
	"encoding/base64"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/oklog/ulid/v2"
)

// Defaults and limits of the task queue. They are part of the contract and
// documented in the README.
const (
	// DefaultQueue is the queue used when a request names none.
	DefaultQueue = "default"
	// DefaultMaxToolCalls is the tool-call budget of a task added without one
	// (the example packet).
	DefaultMaxToolCalls = 20
	// DefaultMaxSteps is the step budget of a task added without one.
	DefaultMaxSteps = 10
	// DefaultMaxAttempts is how many claims a task gets before a worker pool
	// declares it dead.
	DefaultMaxAttempts = 3

	// MaxTextBytes bounds free-text fields (objective, acceptance, what was
	// done, error, what next).
	MaxTextBytes = 64 << 10
	// MaxListItems bounds list fields (inputs, changed paths, blockers,
	// citations) and metadata entries.
	MaxListItems = 256
	// MaxItemBytes bounds one list item, metadata key or value.
	MaxItemBytes = 4 << 10
	// MaxBudget bounds budgets and usage counters.
	MaxBudget = 1_000_000
	// MaxAttemptsLimit bounds max_attempts.
	MaxAttemptsLimit = 1000
)

var (
	queueNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	workerIDRE  = regexp.MustCompile(`^[A-Za-z0-9_.:@/+-]{1,128}$`)
	metaKeyRE   = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)
)

// QueueService is the task queue as every transport sees it. The in-process
// service and the NATS client both implement it, so the CLI, the HTTP API
// and the MCP server share one code path.
type QueueService interface {
	// Add appends a new task and returns its packet.
	Add(ctx context.Context, req AddTaskRequest) (*Task, error)
	// AddMany adds several tasks in one call (each its own task, with its
	// own outcome).
	AddMany(ctx context.Context, req AddManyRequest) (*AddManyResult, error)
	// Next claims the oldest queued task of a queue; nil when none is queued.
	Next(ctx context.Context, req NextRequest) (*Task, error)
	// Done finishes a claimed task with a checkpoint.
	Done(ctx context.Context, req DoneRequest) (*Task, error)
	// Fail ends a claimed task as failed with a checkpoint.
	Fail(ctx context.Context, req FailRequest) (*Task, error)
	// Show returns one task, folded from the log.
	Show(ctx context.Context, taskID string) (*Task, error)
	// List returns the queue board's rows and counts.
	List(ctx context.Context, req ListRequest) (*TaskList, error)
}

// QueueAdmin is the operator's side of the queue: retry failed or dead
// tasks and the queue's cluster-wide controls. The in-process service and
// the NATS client both implement it.
type QueueAdmin interface {
	// Retry queues a failed or dead task again with fresh attempts.
	Retry(ctx context.Context, req RetryRequest) (*Task, error)
	// Cancel cancels a task: at once when it is not claimed, else it is
	// marked and its pool stops the handler at the next heartbeat.
	Cancel(ctx context.Context, req CancelRequest) (*Task, error)
	// Control pauses or resumes a queue or sets its concurrency limit.
	Control(ctx context.Context, req ControlRequest) (*QueueControls, error)
	// Controls returns a queue's controls.
	Controls(ctx context.Context, queue string) (*QueueControls, error)
}

// RetryRequest names a failed or dead task to queue again.
type RetryRequest struct {
	TaskID string `json:"task_id"`
	Actor  string `json:"actor,omitempty"`
}

// CancelRequest names a task to cancel.
type CancelRequest struct {
	TaskID string `json:"task_id"`
	Reason string `json:"reason,omitempty"`
	Actor  string `json:"actor,omitempty"`
}

// Normalize validates the request.
func (r *CancelRequest) Normalize() error { return checkTaskAction(r.TaskID, r.Actor, r.Reason) }

// checkTaskAction validates what an operator's action on one task names
// (cancel, release): the task, the actor when given, and the reason.
func checkTaskAction(taskID, actor, reason string) error {
	if err := ValidateTaskID("task_id", taskID); err != nil {
		return err
	}
	if actor != "" {
		if err := ValidateWorkerID(actor); err != nil {
			return FieldError("actor", "%v", AsError(err).Message)
		}
	}
	if len(reason) > MaxItemBytes {
		return FieldError("reason", "is %d bytes; at most %d allowed", len(reason), MaxItemBytes)
	}
	return checkText("reason", reason)
}

// ControlRequest changes a queue's controls. Action is pause, resume,
// limit (with MaxInFlight; 0 removes the limit), lease, agent_lease (with
// LeaseSeconds; 0 restores DefaultAgentLease), rate (with Rate and Burst)
// or per_key (with PerKey; 0 removes the limit).
type ControlRequest struct {
	Queue       string `json:"queue"`
	Action      string `json:"action"`
	MaxInFlight int    `json:"max_in_flight,omitempty"`
	// Rate caps claims per unit of time for the whole cluster: "10/s",
	// "100/m", "1000/h"; "off" removes it. Burst is how many claims may go
	// at once (default: one second's worth, at least 1).
	Rate  string `json:"rate,omitempty"`
	Burst int    `json:"burst,omitempty"`
	// PerKey caps the tasks running at once per concurrency key.
	PerKey int `json:"per_key,omitempty"`
	// LeaseSeconds is the lease of action "lease": how long a pool's claim
	// survives without a heartbeat (1 s to 24 h); of action
	// "agent_lease": the lease of a queue next claim made without one
	// (1 s to 24 h; 0 restores DefaultAgentLease).
	LeaseSeconds float64 `json:"lease_seconds,omitempty"`
	Reason       string  `json:"reason,omitempty"`
	Actor        string  `json:"actor,omitempty"`
}

// Normalize validates the request.
func (r *ControlRequest) Normalize() error {
	if r.Queue == "" {
		r.Queue = DefaultQueue
	}
	if err := ValidateQueueName(r.Queue); err != nil {
		return err
	}
	switch r.Action {
	case "pause", "resume", "limit":
	case "lease":
		if r.LeaseSeconds < 1 || r.LeaseSeconds > 24*3600 {
			return FieldError("lease_seconds", "must be between 1 and 86400 seconds, got %g", r.LeaseSeconds)
		}
	case "agent_lease":
		if err := checkAgentLeaseSeconds(r.LeaseSeconds); err != nil {
			return err
		}
	case "rate":
		perSec, err := ParseRate(r.Rate)
		if err != nil {
			return err
		}
		if r.Burst < 0 || r.Burst > MaxBurst {
			return FieldError("burst", "must be between 1 and %d, got %d", MaxBurst, r.Burst)
		}
		if perSec == 0 && r.Burst != 0 {
			return FieldError("burst", "needs a rate")
		}
	case "per_key":
		if r.PerKey < 0 || r.PerKey > MaxPerKey {
			return FieldError("per_key", "must be between 0 (unlimited) and %d, got %d", MaxPerKey, r.PerKey)
		}
	default:
		return FieldError("action", "%q is not an action: use pause, resume, limit, lease, agent_lease, rate or per_key", r.Action)
	}
	if r.MaxInFlight < 0 {
		return FieldError("max_in_flight", "must not be negative (got %d)", r.MaxInFlight)
	}
	return checkText("reason", r.Reason)
}

// Flow-control limits.
const (
	// MaxRatePerSecond bounds a queue's claim rate.
	MaxRatePerSecond = 100000
	// MaxBurst bounds a rate's burst.
	MaxBurst = 100000
	// MaxPerKey bounds the per-key concurrency limit.
	MaxPerKey = 100000
)

// ParseRate parses a claim rate: a positive number of claims per second,
// minute or hour ("10/s", "2.5/s", "100/m", "1000/h"), or "off" (0). A rate
// of 0 is refused: use "off" to remove a rate.
func ParseRate(s string) (float64, error) {
	s = strings.TrimSpace(s)
	if s == "off" {
		return 0, nil
	}
	num, unit, ok := strings.Cut(s, "/")
	var per float64
	switch unit {
	case "s", "sec", "second":
		per = 1
	case "m", "min", "minute":
		per = 60
	case "h", "hour":
		per = 3600
	}
	n, err := strconv.ParseFloat(num, 64)
	if !ok || per == 0 || err != nil || math.IsNaN(n) || math.IsInf(n, 0) {
		return 0, FieldError("rate", "%q is not a rate: use N/s, N/m or N/h (e.g. 10/s), or off", truncate(s, 64))
	}
	if n <= 0 {
		return 0, FieldError("rate", "must be positive, got %q (use off to remove the rate)", s)
	}
	perSec := n / per
	if perSec > MaxRatePerSecond {
		return 0, FieldError("rate", "is %g per second; at most %d allowed", perSec, MaxRatePerSecond)
	}
	if perSec < 1.0/86400 {
		return 0, FieldError("rate", "is below one claim a day (%q)", s)
	}
	return perSec, nil
}

// QueueControls is the state of a queue's cluster-wide controls, folded
// from its control events.
type QueueControls struct {
	Queue string `json:"queue"`
	// Paused stops every claim on the queue.
	Paused bool `json:"paused"`
	// MaxInFlight caps the leased tasks in flight across all workers
	// (0 = unlimited).
	MaxInFlight int `json:"max_in_flight"`
	// LeaseSeconds is the queue's lease: how long a worker pool's claim
	// survives without a heartbeat (0: never set, the default 30 s or the
	// claim consumer's own).
	LeaseSeconds float64 `json:"lease_seconds,omitempty"`
	// AgentLeaseSeconds is the lease of a queue next claim made without
	// one (0: never set, DefaultAgentLease; see AgentLease).
	AgentLeaseSeconds float64 `json:"agent_lease_seconds,omitempty"`
	// PreviousLeaseSeconds and LeaseFrom describe a lease being shortened:
	// pools heartbeat for the shorter lease at once, and the claim
	// consumer takes it from LeaseFrom on (until then the previous lease
	// holds), so no claim in flight expires in between.
	PreviousLeaseSeconds float64    `json:"previous_lease_seconds,omitempty"`
	LeaseFrom            *time.Time `json:"lease_from,omitempty"`
	// Rate caps claims for the whole cluster (as given: "10/s"; empty: no
	// rate), RatePerSecond is the same per second, and Burst is how many
	// claims may go at once.
	Rate          string  `json:"rate,omitempty"`
	RatePerSecond float64 `json:"rate_per_second,omitempty"`
	Burst         int     `json:"burst,omitempty"`
	// PerKey caps the tasks running at once per concurrency key (0: no
	// limit).
	PerKey int `json:"per_key,omitempty"`
	// Folded counts the events folded into this state since the
	// controls' last snapshot (or their first event): when it reaches a
	// bound, the controls snapshot themselves. Not part of the controls as
	// the API shows them.
	Folded int `json:"-"`
}

// DefaultBurst is the burst of a rate set without one: one second's worth
// of claims, at least 1.
func DefaultBurst(perSecond float64) int {
	return max(1, int(math.Ceil(perSecond)))
}

// Lease returns the queue's lease at time now (0: never set).
func (c *QueueControls) Lease(now time.Time) time.Duration {
	if c.LeaseFrom != nil && now.Before(*c.LeaseFrom) {
		return time.Duration(c.PreviousLeaseSeconds * float64(time.Second))
	}
	return time.Duration(c.LeaseSeconds * float64(time.Second))
}

// HeartbeatLease is the lease pools must heartbeat for: the shorter of a
// lease being switched to and the one it replaces.
func (c *QueueControls) HeartbeatLease() time.Duration {
	l := c.LeaseSeconds
	if c.LeaseFrom != nil && c.PreviousLeaseSeconds > 0 && c.PreviousLeaseSeconds < l {
		l = c.PreviousLeaseSeconds
	}
	return time.Duration(l * float64(time.Second))
}

// AddTaskRequest is queue_add's input.
type AddTaskRequest struct {
	Queue          string            `json:"queue,omitempty"`
	Objective      string            `json:"objective"`
	Inputs         []string          `json:"inputs,omitempty"`
	Acceptance     string            `json:"acceptance,omitempty"`
	MaxToolCalls   int               `json:"max_tool_calls,omitempty"`
	MaxSteps       int               `json:"max_steps,omitempty"`
	ParentID       string            `json:"parent_id,omitempty"`
	MaxAttempts    int               `json:"max_attempts,omitempty"`
	Metadata       map[string]string `json:"metadata,omitempty"`
	IdempotencyKey string            `json:"idempotency_key,omitempty"`
	// Priority orders claims within the queue: 1 first, 4 last (0 means
	// DefaultPriority).
	Priority int `json:"priority,omitempty"`
	// Delay (a Go duration: "30s", "2h") or RunAt (RFC 3339) makes the task
	// scheduled until then; at most one of them.
	Delay string `json:"delay,omitempty"`
	RunAt string `json:"run_at,omitempty"`
	// UniqueKey makes an add whose key is held (by a task added with it)
	// return that task instead of adding one; UniqueFor (a Go duration)
	// holds the key that long after the add, else while the task is not
	// finished.
	UniqueKey string `json:"unique_key,omitempty"`
	UniqueFor string `json:"unique_for,omitempty"`
	// After lists prerequisites: existing tasks that must be done before
	// this one is queued.
	After []string `json:"after,omitempty"`
	// ConcurrencyKey subjects the task to the queue's per-key limit.
	ConcurrencyKey string `json:"concurrency_key,omitempty"`
	// Timeout (a Go duration, 1s to 24h) bounds one attempt: a worker
	// pool cancels the handler when it passes and fails the attempt with
	// a timeout error (retried per max_attempts).
	Timeout string `json:"timeout,omitempty"`
}

// Scheduling limits. They are part of the contract and documented in the
// README.
const (
	// DefaultPriority is the priority of a task added without one.
	DefaultPriority = 2
	// MaxPriority is the lowest priority (claimed last).
	MaxPriority = 4
	// MaxTaskTimeout bounds a task's timeout (one attempt's run time).
	MaxTaskTimeout = 24 * time.Hour
	// MaxDelay bounds a task's delay and a unique key's hold.
	MaxDelay = 366 * 24 * time.Hour
	// MaxAfter bounds a task's prerequisites.
	MaxAfter = 32
	// MaxKeyBytes bounds unique and concurrency keys.
	MaxKeyBytes = 256
)

// DelayUntil returns when a (normalized) request's task becomes due: the
// zero time when it has no delay.
func (r *AddTaskRequest) DelayUntil(now time.Time) time.Time {
	if r.RunAt != "" {
		t, _ := time.Parse(time.RFC3339Nano, r.RunAt)
		return t.UTC()
	}
	if r.Delay != "" {
		d, _ := time.ParseDuration(r.Delay)
		return now.Add(d).UTC()
	}
	return time.Time{}
}

// UniqueHold returns how long a (normalized) request's unique key is held
// after the add (0: while the task is not finished).
func (r *AddTaskRequest) UniqueHold() time.Duration {
	d, _ := time.ParseDuration(r.UniqueFor)
	return d
}

// MaxAddMany bounds the tasks of one AddMany call.
const MaxAddMany = 1000

// AddManyRequest is queue_add_many's input: several add requests.
type AddManyRequest struct {
	Tasks []AddTaskRequest `json:"tasks"`
}

// Normalize validates every task; a bad one names its place (tasks[i]).
func (r *AddManyRequest) Normalize() error {
	if len(r.Tasks) == 0 {
		return FieldError("tasks", "must hold at least one task")
	}
	if len(r.Tasks) > MaxAddMany {
		return FieldError("tasks", "holds %d tasks; at most %d per call", len(r.Tasks), MaxAddMany)
	}
	for i := range r.Tasks {
		if err := r.Tasks[i].Normalize(); err != nil {
			te := AsError(err)
			field := fmt.Sprintf("tasks[%d]", i)
			if te.Field != "" {
				field += "." + te.Field
			}
			return &Error{Code: te.Code, Field: field, Message: te.Message, Err: err}
		}
	}
	return nil
}

// AddManyResult is AddMany's output: Tasks[i] is the task of request i
// (nil when it failed, with its error in Errors).
type AddManyResult struct {
	Tasks  []*Task     `json:"tasks"`
	Errors []ItemError `json:"errors,omitempty"`
}

// ItemError is the error of one item of a bulk call.
type ItemError struct {
	Index   int    `json:"index"`
	Code    Code   `json:"code"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
}

// Normalize fills defaults and validates the request.
func (r *AddTaskRequest) Normalize() error {
	if r.Queue == "" {
		r.Queue = DefaultQueue
	}
	if err := ValidateQueueName(r.Queue); err != nil {
		return err
	}
	if strings.TrimSpace(r.Objective) == "" {
		return FieldError("objective", "must not be empty")
	}
	if err := checkText("objective", r.Objective); err != nil {
		return err
	}
	if err := checkText("acceptance", r.Acceptance); err != nil {
		return err
	}
	if err := checkList("inputs", r.Inputs); err != nil {
		return err
	}
	var err error
	if r.MaxToolCalls, err = checkCount("max_tool_calls", r.MaxToolCalls, DefaultMaxToolCalls, MaxBudget); err != nil {
		return err
	}
	if r.MaxSteps, err = checkCount("max_steps", r.MaxSteps, DefaultMaxSteps, MaxBudget); err != nil {
		return err
	}
	if r.MaxAttempts, err = checkCount("max_attempts", r.MaxAttempts, DefaultMaxAttempts, MaxAttemptsLimit); err != nil {
		return err
	}
	if r.ParentID != "" {
		if err := ValidateTaskID("parent_id", r.ParentID); err != nil {
			return err
		}
	}
	if len(r.Metadata) > MaxListItems {
		return FieldError("metadata", "has %d entries; at most %d allowed", len(r.Metadata), MaxListItems)
	}
	for k, v := range r.Metadata {
		if !metaKeyRE.MatchString(k) {
			return FieldError("metadata", "key %q must match %s", k, metaKeyRE)
		}
		if err := checkItem("metadata."+k, v); err != nil {
			return err
		}
	}
	if r.IdempotencyKey != "" {
		if err := checkItem("idempotency_key", r.IdempotencyKey); err != nil {
			return err
		}
		if len(r.IdempotencyKey) > 256 {
			return FieldError("idempotency_key", "is %d bytes; at most 256 allowed", len(r.IdempotencyKey))
		}
	}
	return r.normalizeScheduling()
}

// normalizeScheduling checks the scheduling fields: priority, delay,
// unique key, prerequisites and concurrency key.
func (r *AddTaskRequest) normalizeScheduling() error {
	switch {
	case r.Priority == 0:
		r.Priority = DefaultPriority
	case r.Priority < 1 || r.Priority > MaxPriority:
		return FieldError("priority", "must be 1 (first) to %d (last), got %d", MaxPriority, r.Priority)
	}
	// Stored trimmed: DelayUntil and UniqueHold read them as validated.
	r.Delay, r.RunAt, r.UniqueFor = strings.TrimSpace(r.Delay), strings.TrimSpace(r.RunAt), strings.TrimSpace(r.UniqueFor)
	if r.Delay != "" && r.RunAt != "" {
		return FieldError("run_at", "give delay or run_at, not both")
	}
	if r.Delay != "" {
		if _, err := ParseDuration("delay", r.Delay, 0, MaxDelay); err != nil {
			return err
		}
	}
	if r.RunAt != "" {
		if _, err := time.Parse(time.RFC3339Nano, r.RunAt); err != nil {
			return FieldError("run_at", "%q is not an RFC 3339 time (e.g. 2026-12-01T09:00:00Z)", truncate(r.RunAt, 64))
		}
	}
	if err := checkKey("unique_key", r.UniqueKey); err != nil {
		return err
	}
	if r.UniqueFor != "" {
		if r.UniqueKey == "" {
			return FieldError("unique_for", "needs a unique_key")
		}
		if _, err := ParseDuration("unique_for", r.UniqueFor, time.Second, MaxDelay); err != nil {
			return err
		}
	}
	if err := checkKey("concurrency_key", r.ConcurrencyKey); err != nil {
		return err
	}
	if r.Timeout = strings.TrimSpace(r.Timeout); r.Timeout != "" {
		if _, err := ParseDuration("timeout", r.Timeout, time.Second, MaxTaskTimeout); err != nil {
			return err
		}
	}
	if len(r.After) > MaxAfter {
		return FieldError("after", "lists %d tasks; at most %d allowed", len(r.After), MaxAfter)
	}
	seen := map[string]bool{}
	for _, id := range r.After {
		if err := ValidateTaskID("after", id); err != nil {
			return err
		}
		if seen[id] {
			return FieldError("after", "lists task %s twice", id)
		}
		seen[id] = true
	}
	return nil
}

// ParseDuration parses a Go duration ("30s", "1h30m") for field, which must
// lie in [min, max] (min 0: strictly positive).
func ParseDuration(field, s string, min, max time.Duration) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, FieldError(field, "%q is not a duration (e.g. 30s, 10m, 2h)", truncate(s, 64))
	}
	if d <= 0 || d < min {
		if min <= 0 {
			return 0, FieldError(field, "must be positive, got %s", s)
		}
		return 0, FieldError(field, "must be at least %s, got %s", min, s)
	}
	if d > max {
		return 0, FieldError(field, "is %s; at most %s allowed", d, max)
	}
	return d, nil
}

func checkKey(field, v string) error {
	if v == "" {
		return nil
	}
	if strings.TrimSpace(v) == "" {
		return FieldError(field, "must not be blank")
	}
	if len(v) > MaxKeyBytes {
		return FieldError(field, "is %d bytes; at most %d allowed", len(v), MaxKeyBytes)
	}
	if !utf8.ValidString(v) {
		return FieldError(field, "is not valid UTF-8")
	}
	return nil
}

// NextRequest is queue_next's input.
type NextRequest struct {
	Queue  string `json:"queue,omitempty"`
	Worker string `json:"worker"`
	// LeaseSeconds is the claim's lease: the task stays the worker's while
	// it heartbeats at least this often (0: DefaultAgentLease; 1 s to
	// 24 h).
	LeaseSeconds float64 `json:"lease_seconds,omitempty"`
}

// Normalize fills defaults and validates the request.
func (r *NextRequest) Normalize() error {
	if r.Queue == "" {
		r.Queue = DefaultQueue
	}
	if err := ValidateQueueName(r.Queue); err != nil {
		return err
	}
	if r.LeaseSeconds != 0 && (math.IsNaN(r.LeaseSeconds) || r.LeaseSeconds < MinAgentLease.Seconds() || r.LeaseSeconds > MaxAgentLease.Seconds()) {
		return FieldError("lease_seconds", "must be between %g and %g seconds, got %g", MinAgentLease.Seconds(), MaxAgentLease.Seconds(), r.LeaseSeconds)
	}
	return ValidateWorkerID(r.Worker)
}

// DoneRequest is queue_done's input: the checkpoint of a finished task.
type DoneRequest struct {
	TaskID        string   `json:"task_id"`
	Worker        string   `json:"worker"`
	WhatWasDone   string   `json:"what_was_done"`
	WhatChanged   []string `json:"what_changed,omitempty"`
	WhatNext      string   `json:"what_next,omitempty"`
	Blockers      []string `json:"blockers,omitempty"`
	Citations     []string `json:"citations,omitempty"`
	StepsUsed     int      `json:"steps_used,omitempty"`
	ToolCallsUsed int      `json:"tool_calls_used,omitempty"`
}

// Normalize validates the request.
func (r *DoneRequest) Normalize() error {
	if err := ValidateTaskID("task_id", r.TaskID); err != nil {
		return err
	}
	if err := ValidateWorkerID(r.Worker); err != nil {
		return err
	}
	if strings.TrimSpace(r.WhatWasDone) == "" {
		return FieldError("what_was_done", "must not be empty")
	}
	for _, f := range []struct{ name, v string }{{"what_was_done", r.WhatWasDone}, {"what_next", r.WhatNext}} {
		if err := checkText(f.name, f.v); err != nil {
			return err
		}
	}
	for _, l := range []struct {
		name string
		v    []string
	}{{"what_changed", r.WhatChanged}, {"blockers", r.Blockers}, {"citations", r.Citations}} {
		if err := checkList(l.name, l.v); err != nil {
			return err
		}
	}
	return checkUsage(r.StepsUsed, r.ToolCallsUsed)
}

// FailRequest is queue_fail's input.
type FailRequest struct {
	TaskID        string   `json:"task_id"`
	Worker        string   `json:"worker"`
	Error         string   `json:"error"`
	WhatWasDone   string   `json:"what_was_done,omitempty"`
	Blockers      []string `json:"blockers,omitempty"`
	StepsUsed     int      `json:"steps_used,omitempty"`
	ToolCallsUsed int      `json:"tool_calls_used,omitempty"`
	// Retry asks for another attempt (with backoff) instead of ending the
	// task; once its attempts are used up the task is dead.
	Retry bool `json:"retry,omitempty"`
}

// Normalize validates the request.
func (r *FailRequest) Normalize() error {
	if err := ValidateTaskID("task_id", r.TaskID); err != nil {
		return err
	}
	if err := ValidateWorkerID(r.Worker); err != nil {
		return err
	}
	if strings.TrimSpace(r.Error) == "" {
		return FieldError("error", "must not be empty")
	}
	if err := checkText("error", r.Error); err != nil {
		return err
	}
	if err := checkText("what_was_done", r.WhatWasDone); err != nil {
		return err
	}
	if err := checkList("blockers", r.Blockers); err != nil {
		return err
	}
	return checkUsage(r.StepsUsed, r.ToolCallsUsed)
}

// Paging of list results. They are part of the contract and documented in
// the README.
const (
	// DefaultListLimit is the page size of a list request that sets none.
	DefaultListLimit = 100
	// MaxListLimit is the largest page a list request may ask for.
	MaxListLimit = 1000
	// MaxListBytes bounds a page's rows as JSON: a page whose rows would
	// exceed it ends early, with a next cursor (so a page always fits in
	// one NATS message).
	MaxListBytes = 512 << 10
)

// ListRequest asks for one page of the queue board, oldest task first
// (task ids are ULIDs, so id order is creation order).
type ListRequest struct {
	// Queue keeps only this queue's tasks.
	Queue string `json:"queue,omitempty"`
	// Status keeps only tasks in this status.
	Status Status `json:"status,omitempty"`
	// Since keeps only tasks updated at or after this RFC 3339 time.
	Since string `json:"since,omitempty"`
	// Limit is the page size: 0 means DefaultListLimit; at most
	// MaxListLimit.
	Limit int `json:"limit,omitempty"`
	// Cursor continues a listing: the next_cursor of the previous page.
	Cursor string `json:"cursor,omitempty"`
	// Text keeps only tasks whose objective contains it, ignoring case,
	// or whose id starts with it (at most MaxListTextBytes). Like Since,
	// it costs a scan of the rows it skips.
	Text string `json:"text,omitempty"`
	// Newest lists newest first (descending task id, that is creation
	// order); a cursor continues in the direction that made it.
	Newest bool `json:"newest,omitempty"`
}

// MaxListTextBytes bounds ListRequest.Text.
const MaxListTextBytes = 256

// MatchText reports whether a task with this id and objective passes the
// Text filter.
func (r *ListRequest) MatchText(taskID, objective string) bool {
	if r.Text == "" {
		return true
	}
	return strings.HasPrefix(taskID, strings.ToUpper(r.Text)) ||
		strings.Contains(strings.ToLower(objective), strings.ToLower(r.Text))
}

// Normalize fills the default limit and validates the request.
func (r *ListRequest) Normalize() error {
	if len(r.Text) > MaxListTextBytes {
		return FieldError("text", "is %d bytes; at most %d allowed", len(r.Text), MaxListTextBytes)
	}
	if !utf8.ValidString(r.Text) {
		return FieldError("text", "is not valid UTF-8")
	}
	if r.Queue != "" {
		if err := ValidateQueueName(r.Queue); err != nil {
			return err
		}
	}
	if r.Status != "" && !r.Status.Valid() {
		return FieldError("status", "unknown status %q; one of scheduled, waiting, queued, claimed, done, failed, dead, cancelled", r.Status)
	}
	switch {
	case r.Limit < 0:
		return FieldError("limit", "must not be negative (got %d)", r.Limit)
	case r.Limit == 0:
		r.Limit = DefaultListLimit
	case r.Limit > MaxListLimit:
		return FieldError("limit", "is %d; at most %d allowed", r.Limit, MaxListLimit)
	}
	if _, err := r.SinceTime(); err != nil {
		return err
	}
	_, err := r.CursorID()
	return err
}

// CursorID is the task id the request's cursor continues from: after it
// (oldest first) or before it (Newest). A cursor made by a listing in
// the other direction is refused.
func (r *ListRequest) CursorID() (string, error) {
	if r.Newest {
		return decodeCursor(r.Cursor, newestCursorPrefix, "newest")
	}
	return decodeCursor(r.Cursor, cursorPrefix, "oldest")
}

// NextCursor is the cursor that continues the request's listing after
// (or, Newest, before) the task with this id.
func (r *ListRequest) NextCursor(lastID string) string {
	if r.Newest {
		return base64.RawURLEncoding.EncodeToString([]byte(newestCursorPrefix + lastID))
	}
	return EncodeCursor(lastID)
}

// SinceTime parses Since (the zero time when it is empty).
func (r *ListRequest) SinceTime() (time.Time, error) {
	if r.Since == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, r.Since)
	if err != nil {
		return time.Time{}, FieldError("since", "%q is not an RFC 3339 time (e.g. 2026-01-02T15:04:05Z)", truncate(r.Since, 64))
	}
	return t, nil
}

// cursorPrefix versions the cursor's content; newestCursorPrefix marks a
// cursor of a newest-first listing.
const (
	cursorPrefix       = "t1:"
	newestCursorPrefix = "t1n:"
)

// EncodeCursor returns the opaque cursor that continues a listing after
// the task with this id.
func EncodeCursor(afterID string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(cursorPrefix + afterID))
}

// DecodeCursor returns the task id a cursor continues after ("" for the
// empty cursor). A cursor that no list returned is invalid.
func DecodeCursor(c string) (string, error) {
	return decodeCursor(c, cursorPrefix, "oldest")
}

func decodeCursor(c, prefix, order string) (string, error) {
	if c == "" {
		return "", nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err == nil {
		other := newestCursorPrefix
		if prefix == newestCursorPrefix {
			other = cursorPrefix
		}
		if _, wrong := strings.CutPrefix(string(raw), other); wrong {
			return "", FieldError("cursor", "was made by a listing in the other order: pass newest as on the first page (this page lists %s first)", order)
		}
	}
	id, ok := strings.CutPrefix(string(raw), prefix)
	if err != nil || !ok || ValidateTaskID("cursor", id) != nil {
		return "", FieldError("cursor", "%q is not a cursor: pass the next_cursor of the previous page unchanged", truncate(c, 64))
	}
	return id, nil
}

// TaskRow is one row of the queue board.
type TaskRow struct {
	TaskID          string `json:"task_id"`
	Queue           string `json:"queue"`
	Status          Status `json:"status"`
	Objective       string `json:"objective"`
	ClaimedBy       string `json:"claimed_by,omitempty"`
	Attempts        int    `json:"attempts"`
	BudgetExhausted bool   `json:"budget_exhausted"`
	CreatedAt       string `json:"created_at"`
	UpdatedAt       string `json:"updated_at"`
}

// TaskList is one page of a list request: the matching rows, oldest first
// (at most the request's limit, fewer when they would exceed MaxListBytes);
// the cursor of the next page (absent on the last page); and the counts
// per queue and status (of every queue, or of the requested queue; the
// status and since filters do not narrow the counts).
type TaskList struct {
	Tasks      []TaskRow                 `json:"tasks"`
	NextCursor string                    `json:"next_cursor,omitempty"`
	Counts     map[string]map[Status]int `json:"counts"`
}

// ValidateQueueName checks a queue name: 1–64 of A–Z a–z 0–9 _ -.
func ValidateQueueName(q string) error {
	if !queueNameRE.MatchString(q) {
		return FieldError("queue", "%q is not a queue name: use 1-64 characters of A-Z a-z 0-9 _ -", q)
	}
	return nil
}

// ValidateWorkerID checks a worker id: 1–128 of A–Z a–z 0–9 _ . : @ / + -.
func ValidateWorkerID(w string) error {
	if w == "" {
		return FieldError("worker", "must not be empty")
	}
	if !workerIDRE.MatchString(w) {
		return FieldError("worker", "%q is not a worker id: use 1-128 characters of A-Z a-z 0-9 _ . : @ / + -", w)
	}
	return nil
}

// ValidateTaskID checks that id is a ULID (26 Crockford base32 characters).
func ValidateTaskID(field, id string) error {
	if id == "" {
		return FieldError(field, "must not be empty")
	}
	if _, err := ulid.ParseStrict(id); err != nil || len(id) != ulid.EncodedSize || strings.ToUpper(id) != id {
		return FieldError(field, "%q is not a task id (a 26-character ULID)", truncate(id, 64))
	}
	return nil
}

func checkText(field, v string) error {
	if len(v) > MaxTextBytes {
		return FieldError(field, "is %d bytes; at most %d allowed", len(v), MaxTextBytes)
	}
	if !utf8.ValidString(v) {
		return FieldError(field, "is not valid UTF-8")
	}
	return nil
}

func checkItem(field, v string) error {
	if len(v) > MaxItemBytes {
		return FieldError(field, "is %d bytes; at most %d allowed", len(v), MaxItemBytes)
	}
	if !utf8.ValidString(v) {
		return FieldError(field, "is not valid UTF-8")
	}
	return nil
}

func checkList(field string, vs []string) error {
	if len(vs) > MaxListItems {
		return FieldError(field, "has %d items; at most %d allowed", len(vs), MaxListItems)
	}
	for _, v := range vs {
		if strings.TrimSpace(v) == "" {
			return FieldError(field, "must not contain empty items")
		}
		if err := checkItem(field, v); err != nil {
			return err
		}
	}
	return nil
}

func checkCount(field string, v, def, max int) (int, error) {
	switch {
	case v < 0:
		return 0, FieldError(field, "must not be negative (got %d)", v)
	case v == 0:
		return def, nil
	case v > max:
		return 0, FieldError(field, "is %d; at most %d allowed", v, max)
	}
	return v, nil
}

func checkUsage(steps, calls int) error {
	if _, err := checkCount("steps_used", steps, 0, MaxBudget); err != nil {
		return err
	}
	_, err := checkCount("tool_calls_used", calls, 0, MaxBudget)
	return err
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
