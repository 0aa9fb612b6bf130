package client

import (
	"context"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/handlers/natsapi"
	"github.com/trellis/trellis/workers"
)

// WorkerSource returns the Source of a worker pool that works through
// this client's server: claims, heartbeats, outcomes and the lease's end
// are API calls, so the worker needs nothing but a token with the worker
// role (and its queue).
func (c *API) WorkerSource() workers.Source { return &remoteSource{c: c} }

type remoteSource struct{ c *API }

func (s *remoteSource) Prepare(ctx context.Context, queue string, lease time.Duration) (time.Duration, error) {
	var res natsapi.LeaseResult
	err := s.c.call(ctx, natsapi.OpQueuePrepare, natsapi.PrepareRequest{Queue: queue, LeaseMS: lease.Milliseconds()}, &res)
	return time.Duration(res.LeaseMS) * time.Millisecond, err
}

func (s *remoteSource) Claim(ctx context.Context, queue, worker string, wait time.Duration) (*workers.Claim, error) {
	if ctx.Err() != nil {
		return nil, nil
	}
	var res natsapi.ClaimResult
	// The claim is not cancelled by the drain once sent: a claim the
	// server made would otherwise be left to its lease. It keeps ctx's
	// deadline, which the server honours.
	timeout := wait + 30*time.Second
	if d, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(d))
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	if err := s.c.call(cctx, natsapi.OpQueueClaim, natsapi.ClaimRequest{Queue: queue, Worker: worker, WaitMS: wait.Milliseconds()}, &res); err != nil {
		if trellis.ErrorCode(err) == trellis.CodeConflict {
			return nil, &workers.ClaimError{Err: err} // a lost race: go on at once
		}
		return nil, err
	}
	lease := time.Duration(res.LeaseMS) * time.Millisecond
	if res.Task == nil {
		if lease > 0 {
			return &workers.Claim{Lease: lease}, nil
		}
		return nil, nil
	}
	req := natsapi.LeaseRequest{TaskID: res.Task.TaskID, Worker: worker, Lease: res.Lease}
	return &workers.Claim{
		Task:  res.Task,
		Lease: lease,
		Heartbeat: func(ctx context.Context) (time.Duration, error) {
			var res natsapi.LeaseResult
			err := s.c.call(ctx, natsapi.OpQueueHeartbeat, req, &res)
			return time.Duration(res.LeaseMS) * time.Millisecond, err
		},
		Ack: func(ctx context.Context) error { return s.c.call(ctx, natsapi.OpQueueAck, req, nil) },
	}, nil
}

func (s *remoteSource) Done(ctx context.Context, req trellis.DoneRequest) (*trellis.Task, error) {
	return s.c.Done(ctx, req)
}

func (s *remoteSource) Fail(ctx context.Context, req trellis.FailRequest) (*trellis.Task, error) {
	return s.c.Fail(ctx, req)
}

func (s *remoteSource) Release(ctx context.Context, taskID, worker, reason string) (*trellis.Task, error) {
	return s.c.task(ctx, natsapi.OpQueueRelease, natsapi.ReleaseRequest{TaskID: taskID, Worker: worker, Reason: reason})
}
