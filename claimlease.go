package trellis

import (
	"context"
	"time"
)

// Claim leases of queue next (agents). A task claimed by queue next (CLI,
// MCP, HTTP, NATS) is held under a lease like a worker pool's: the agent
// keeps it by heartbeating (QueueLeases.Heartbeat) before the lease runs
// out; when it does not, the claim expires (a lease_expired event, which
// counts as an attempt) and the task is claimable again, or dead once its
// attempts are used up.
const (
	// DefaultAgentLease is the lease of a queue next claim made without
	// one (NextRequest.LeaseSeconds 0): long, as an agent's step may take
	// minutes between two heartbeats.
	DefaultAgentLease = 10 * time.Minute
	// MinAgentLease and MaxAgentLease bound NextRequest.LeaseSeconds.
	MinAgentLease = time.Second
	MaxAgentLease = 24 * time.Hour
)

// QueueLeases is the claim-lease side of the queue: an agent's heartbeat
// and an operator's release. The in-process service and the NATS client
// both implement it.
type QueueLeases interface {
	// Heartbeat extends the lease of a task the worker claimed with queue
	// next by the claim's lease, from now.
	Heartbeat(ctx context.Context, req HeartbeatRequest) (*Task, error)
	// ReleaseClaim gives a claimed task back to its queue (an operator's
	// act): it is queued again at once and the attempt does not count.
	ReleaseClaim(ctx context.Context, req ReleaseRequest) (*Task, error)
}

// HeartbeatRequest is queue_heartbeat's input: the claimant of a task
// keeps its claim.
type HeartbeatRequest struct {
	TaskID string `json:"task_id"`
	Worker string `json:"worker"`
}

// Normalize validates the request.
func (r *HeartbeatRequest) Normalize() error {
	if err := ValidateTaskID("task_id", r.TaskID); err != nil {
		return err
	}
	return ValidateWorkerID(r.Worker)
}

// ReleaseRequest names a claimed task an operator gives back to its
// queue.
type ReleaseRequest struct {
	TaskID string `json:"task_id"`
	Reason string `json:"reason,omitempty"`
	Actor  string `json:"actor,omitempty"`
}

// Normalize validates the request.
func (r *ReleaseRequest) Normalize() error { return checkTaskAction(r.TaskID, r.Actor, r.Reason) }

// AgentLease returns the lease a queue next request asks for: its
// LeaseSeconds, else DefaultAgentLease (the queue's own default, when it
// has one, is QueueControls.AgentLease).
func (r *NextRequest) AgentLease() time.Duration {
	if r.LeaseSeconds > 0 {
		return time.Duration(r.LeaseSeconds * float64(time.Second))
	}
	return DefaultAgentLease
}

// AgentLease returns the lease of the queue's queue next claims made
// without one: its agent lease when set, else DefaultAgentLease.
func (c *QueueControls) AgentLease() time.Duration {
	if c != nil && c.AgentLeaseSeconds > 0 {
		return time.Duration(c.AgentLeaseSeconds * float64(time.Second))
	}
	return DefaultAgentLease
}

// checkAgentLeaseSeconds validates a queue's default agent lease: 0 (the
// default, DefaultAgentLease) or between MinAgentLease and MaxAgentLease.
func checkAgentLeaseSeconds(s float64) error {
	if s == 0 || (s >= MinAgentLease.Seconds() && s <= MaxAgentLease.Seconds()) {
		return nil
	}
	return FieldError("lease_seconds", "must be 0 (the default, %s) or between %g and %g seconds, got %g",
		DefaultAgentLease, MinAgentLease.Seconds(), MaxAgentLease.Seconds(), s)
}
