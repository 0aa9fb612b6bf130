package workers

import (
	"context"
	"time"

	"github.com/trellis/trellis"
)

// Source is where a remote pool claims tasks and records their outcomes:
// a Trellis server over its NATS API (a worker with a token:
// natsapi.Client.WorkerSource), which decides and appends for it. A pool
// trusted to append events itself works the queue handler directly (New).
type Source interface {
	// Prepare readies the queue's claim dispatch for a pool. lease > 0
	// becomes the queue's lease for every pool (see
	// taskqueue.Handler.SetLease); 0 keeps the queue's. It returns the
	// lease the queue's pools heartbeat for now.
	Prepare(ctx context.Context, queue string, lease time.Duration) (time.Duration, error)
	// Claim waits up to wait for a task of queue and claims it for worker
	// with a lease; nil (and no error) when none came, or a Claim with no
	// Task that only tells the queue's current lease. A claim must not be
	// made once ctx has ended.
	Claim(ctx context.Context, queue, worker string, wait time.Duration) (*Claim, error)
	// Done records a finished task.
	Done(ctx context.Context, req trellis.DoneRequest) (*trellis.Task, error)
	// Fail records a failed attempt.
	Fail(ctx context.Context, req trellis.FailRequest) (*trellis.Task, error)
	// Release gives a claimed task back to the queue.
	Release(ctx context.Context, taskID, worker, reason string) (*trellis.Task, error)
}

// Claim is a task claimed with a lease.
type Claim struct {
	// Task is the claimed task (nil: no task came, Lease alone is news).
	Task *trellis.Task
	// Lease is the lease the queue's pools heartbeat for as of the claim
	// (0 when unknown): any pool of the queue, or an operator, may change
	// it, and the pool follows.
	Lease time.Duration
	// Heartbeat extends the lease and returns the lease the queue's pools
	// heartbeat for now (0 when unknown).
	Heartbeat func(ctx context.Context) (time.Duration, error)
	// Ack ends the lease once the task's outcome is recorded.
	Ack func(ctx context.Context) error
}

// ClaimError reports a claim that was attempted and failed (the dispatch
// stays unacknowledged and comes back): the pool logs it and goes on at
// once, unlike a failure to reach the dispatch at all, after which it
// backs off.
type ClaimError struct{ Err error }

// Error implements error.
func (e *ClaimError) Error() string { return e.Err.Error() }

// Unwrap returns the cause.
func (e *ClaimError) Unwrap() error { return e.Err }
