package natsapi

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/auth"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/taskqueue"
)

// A remote worker pool works through the server: the server fetches the
// queue's dispatch, decides and appends the claim, and hands the worker
// the lease, which is the dispatch message's acknowledgement subject
// ($JS.ACK.TRELLIS_QUEUE.queue-<q>....). Heartbeats and the final
// acknowledgement go back through any server, which checks that the lease
// is the dispatch the worker's claim holds before it touches it. So a
// worker never appends events nor talks to JetStream, and a server that
// dies takes no lease with it (another one answers the next heartbeat).

// maxClaimWait bounds how long one claim request waits for a dispatch.
const maxClaimWait = 5 * time.Second

// claimMargin is the time a claim request keeps, out of what its deadline
// leaves, to claim the task that came and answer.
const claimMargin = time.Second

func leaseOps(svc Service, nc *nats.Conn) map[string]func(context.Context, []byte) (any, error) {
	q := svc.QueueHandler()
	return map[string]func(context.Context, []byte) (any, error){
		OpQueuePrepare: handler(func(ctx context.Context, r PrepareRequest) (any, error) {
			queue, err := workQueue(ctx, r.Queue)
			if err != nil {
				return nil, err
			}
			if r.LeaseMS < 0 || r.LeaseMS > int64(24*time.Hour/time.Millisecond) {
				return nil, trellis.FieldError("lease_ms", "must be between 0 and one day, got %d", r.LeaseMS)
			}
			if _, err := q.EnsureConsumer(ctx, queue, time.Duration(r.LeaseMS)*time.Millisecond); err != nil {
				return nil, err
			}
			lease, err := q.PoolLease(ctx, queue)
			if err != nil {
				return nil, err
			}
			return LeaseResult{LeaseMS: lease.Milliseconds()}, nil
		}),
		OpQueueClaim: handler(func(ctx context.Context, r ClaimRequest) (any, error) {
			queue, err := workQueue(ctx, r.Queue)
			if err != nil {
				return nil, err
			}
			worker, err := actingWorker(ctx, r.Worker)
			if err != nil {
				return nil, err
			}
			wait := time.Duration(r.WaitMS) * time.Millisecond
			if wait <= 0 || wait > maxClaimWait {
				wait = time.Second
			}
			return claimLeased(ctx, q, queue, worker, wait)
		}),
		OpQueueHeartbeat: handler(func(ctx context.Context, r LeaseRequest) (any, error) {
			if r.Lease == "" {
				// An agent's heartbeat on a claim made by queue next,
				// whose lease is on the log.
				req := trellis.HeartbeatRequest{TaskID: r.TaskID, Worker: r.Worker}
				if err := auth.Bind(ctx, &req); err != nil {
					return nil, err
				}
				return svc.Heartbeat(ctx, req)
			}
			task, _, err := checkLease(ctx, svc, r, true)
			if err != nil {
				return nil, err
			}
			if err := nc.Publish(r.Lease, []byte("+WPI")); err != nil {
				return nil, trellis.Errorf(trellis.CodeUnavailable, "heartbeat of task %s: %w", task.TaskID, err)
			}
			lease, err := q.PoolLease(ctx, task.Queue)
			if err != nil {
				return LeaseResult{}, nil // extended; the pool keeps the lease it knows
			}
			return LeaseResult{LeaseMS: lease.Milliseconds()}, nil
		}),
		OpQueueAck: handler(func(ctx context.Context, r LeaseRequest) (any, error) {
			task, _, err := checkLease(ctx, svc, r, false)
			if err != nil {
				return nil, err
			}
			if err := nc.Publish(r.Lease, []byte("+ACK")); err != nil {
				return nil, trellis.Errorf(trellis.CodeUnavailable, "acknowledge the lease of task %s: %w", task.TaskID, err)
			}
			return struct{}{}, nc.Flush()
		}),
		OpQueueRelease: handler(func(ctx context.Context, r ReleaseRequest) (*trellis.Task, error) {
			worker, err := actingWorker(ctx, r.Worker)
			if err != nil {
				return nil, err
			}
			if err := trellis.ValidateWorkerID(worker); err != nil {
				return nil, err
			}
			return q.Release(ctx, r.TaskID, worker, r.Reason)
		}),
	}
}

// workQueue returns the queue a pool request names (default "default")
// after checking the caller may work it.
func workQueue(ctx context.Context, queue string) (string, error) {
	if queue == "" {
		queue = trellis.DefaultQueue
	}
	if err := trellis.ValidateQueueName(queue); err != nil {
		return "", err
	}
	return queue, auth.MayWork(ctx, queue)
}

// actingWorker returns the worker a pool request acts as: the caller's
// name or one of its slots (see auth.Bind).
func actingWorker(ctx context.Context, worker string) (string, error) {
	req := trellis.DoneRequest{Worker: worker}
	if err := auth.Bind(ctx, &req); err != nil {
		return "", err
	}
	if err := trellis.ValidateWorkerID(req.Worker); err != nil {
		return "", err
	}
	return req.Worker, nil
}

// claimLeased claims the next task of queue for worker, best priority
// lane first, holding its dispatch as the lease, or none within wait.
func claimLeased(ctx context.Context, q *taskqueue.Handler, queue, worker string, wait time.Duration) (*ClaimResult, error) {
	if deadline, ok := ctx.Deadline(); ok {
		// Leave the claim itself and the answer time before the caller
		// gives up.
		if wait = min(wait, time.Until(deadline)-claimMargin); wait <= 0 {
			return &ClaimResult{}, nil
		}
	}
	task, msg, err := q.ClaimNext(ctx, queue, worker, true, wait)
	if err != nil {
		return nil, err
	}
	if task != nil && ctx.Err() != nil {
		// Claimed after the caller gave up: nobody will run it, so give
		// it back now rather than hold it for a whole lease.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if _, err := q.Release(rctx, task.TaskID, worker, "claimed after the claim request's deadline"); err == nil {
			_ = msg.Ack()
		}
		return nil, trellis.Errorf(trellis.CodeUnavailable, "claim of task %s made after the request's deadline: released", task.TaskID)
	}
	res := &ClaimResult{}
	if task != nil {
		res.Task, res.Lease = task, msg.Reply()
	}
	if lease, err := q.PoolLease(ctx, queue); err == nil {
		res.LeaseMS = lease.Milliseconds()
	}
	return res, nil
}

// ackLease is a parsed dispatch acknowledgement subject.
type ackLease struct {
	stream, consumer string
	seq              uint64
}

// parseLease parses a JetStream acknowledgement subject in either of its
// forms ($JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<time>.<pending>,
// or with a domain and account hash after ACK).
func parseLease(s string) (ackLease, error) {
	t := strings.Split(s, ".")
	bad := trellis.FieldError("lease", "is not a lease this server handed out")
	if len(t) < 9 || t[0] != "$JS" || t[1] != "ACK" || strings.ContainsAny(s, "*> \t\r\n") {
		return ackLease{}, bad
	}
	i := 2
	if len(t) >= 11 {
		i = 4
	}
	seq, err := strconv.ParseUint(t[i+3], 10, 64)
	if err != nil {
		return ackLease{}, bad
	}
	return ackLease{stream: t[i], consumer: t[i+1], seq: seq}, nil
}

// checkLease checks that r.Lease is a dispatch of r.TaskID's queue
// consumer whose claim r.Worker holds (held) or held and has since ended
// (!held: the outcome is recorded, the lease may be acknowledged).
func checkLease(ctx context.Context, svc Service, r LeaseRequest, held bool) (*trellis.Task, ackLease, error) {
	worker, err := actingWorker(ctx, r.Worker)
	if err != nil {
		return nil, ackLease{}, err
	}
	l, err := parseLease(r.Lease)
	if err != nil {
		return nil, l, err
	}
	task, err := svc.Show(ctx, r.TaskID)
	if err != nil {
		return nil, l, err
	}
	if l.stream != events.StreamQueue || !taskqueue.IsLane(l.consumer, task.Queue) {
		return nil, l, trellis.FieldError("lease", "is not a dispatch of queue %s", task.Queue)
	}
	holds := task.Status == trellis.StatusClaimed && task.Lease != nil && task.Lease.DispatchSeq == l.seq
	switch {
	case held && (!holds || task.ClaimedBy != worker):
		return nil, l, trellis.Errorf(trellis.CodeConflict, "task %s is not claimed by %q under this lease (it is %s, claimed by %q)", task.TaskID, worker, task.Status, task.ClaimedBy)
	case !held && holds:
		return nil, l, trellis.Errorf(trellis.CodeConflict, "task %s is still claimed under this lease: record its outcome first", task.TaskID)
	case !held:
		rec, err := svc.Store().Get(ctx, events.StreamQueue, l.seq)
		if err != nil || rec.AggregateID != task.TaskID {
			return nil, l, trellis.FieldError("lease", "is not a dispatch of task %s", task.TaskID)
		}
	}
	return task, l, nil
}
