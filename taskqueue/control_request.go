package taskqueue

import (
	"context"
	"time"

	"github.com/trellis/trellis"
)

// Control applies an operator's control request (trellis.QueueAdmin's
// Control), chosen by its action: pause, resume, lease, agent_lease, rate, per_key, or
// the in-flight limit (the default). The actor defaults to "operator".
func (q *Handler) Control(ctx context.Context, req trellis.ControlRequest) (*trellis.QueueControls, error) {
	if err := req.Normalize(); err != nil {
		return nil, err
	}
	actor := req.Actor
	if actor == "" {
		actor = "operator"
	}
	switch req.Action {
	case "pause":
		return q.Pause(ctx, req.Queue, actor, req.Reason)
	case "resume":
		return q.Resume(ctx, req.Queue, actor)
	case "lease":
		return q.SetLease(ctx, req.Queue, actor, time.Duration(req.LeaseSeconds*float64(time.Second)))
	case "agent_lease":
		return q.SetAgentLease(ctx, req.Queue, actor, time.Duration(req.LeaseSeconds*float64(time.Second)))
	case "rate":
		return q.SetRate(ctx, req.Queue, actor, req.Rate, req.Burst)
	case "per_key":
		return q.SetPerKey(ctx, req.Queue, actor, req.PerKey)
	default:
		return q.SetLimit(ctx, req.Queue, actor, req.MaxInFlight)
	}
}
