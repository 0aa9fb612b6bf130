package workers

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/handlers"
)

// Source is where a pool claims tasks and records their outcomes: the
// queue handler in this process (QueueSource, a pool trusted to append
// events itself), or a Trellis server over its NATS API (a remote worker
// with a token: natsapi.Client.WorkerSource), which decides and appends
// for it.
type Source interface {
	// Prepare readies the queue's claim dispatch for a pool whose claims
	// survive lease without a heartbeat.
	Prepare(ctx context.Context, queue string, lease time.Duration) error
	// Claim waits up to wait for a task of queue and claims it for worker
	// with a lease; nil (and no error) when none came. A claim must not
	// be made once ctx has ended.
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
	// Task is the claimed task.
	Task *trellis.Task
	// Heartbeat extends the lease.
	Heartbeat func(ctx context.Context) error
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

// QueueSource returns the Source of a pool running beside the queue
// handler (same process or a trusted Trellis process): claims come from
// the queue's durable consumer, and the lease is the dispatch message
// held unacknowledged.
func QueueSource(q *handlers.Queue) Source { return &queueSource{q: q} }

type queueSource struct {
	q    *handlers.Queue
	mu   sync.Mutex
	cons map[string]jetstream.Consumer
}

func (s *queueSource) Prepare(ctx context.Context, queue string, lease time.Duration) error {
	cons, err := s.q.EnsureConsumer(ctx, queue, lease)
	if err != nil {
		return err
	}
	s.mu.Lock()
	if s.cons == nil {
		s.cons = map[string]jetstream.Consumer{}
	}
	s.cons[queue] = cons
	s.mu.Unlock()
	return nil
}

func (s *queueSource) Claim(ctx context.Context, queue, worker string, wait time.Duration) (*Claim, error) {
	s.mu.Lock()
	cons := s.cons[queue]
	s.mu.Unlock()
	if cons == nil {
		return nil, fmt.Errorf("queue %s: not prepared", queue)
	}
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(wait))
	if err != nil {
		return nil, err
	}
	for msg := range batch.Messages() {
		if ctx.Err() != nil {
			// Draining: give the dispatch back untouched.
			_ = msg.Nak()
			continue
		}
		task, err := s.q.ClaimDispatched(context.WithoutCancel(ctx), msg, worker, true)
		if err != nil {
			return nil, &ClaimError{err} // the dispatch stays unacknowledged and comes back
		}
		if task == nil {
			return nil, nil
		}
		return &Claim{
			Task:      task,
			Heartbeat: func(context.Context) error { return msg.InProgress() },
			Ack:       func(context.Context) error { return msg.Ack() },
		}, nil
	}
	return nil, nil // nothing came (a fetch that ends empty is not a failure)
}

func (s *queueSource) Done(ctx context.Context, req trellis.DoneRequest) (*trellis.Task, error) {
	return s.q.Done(ctx, req)
}

func (s *queueSource) Fail(ctx context.Context, req trellis.FailRequest) (*trellis.Task, error) {
	return s.q.Fail(ctx, req)
}

func (s *queueSource) Release(ctx context.Context, taskID, worker, reason string) (*trellis.Task, error) {
	return s.q.Release(ctx, taskID, worker, reason)
}
