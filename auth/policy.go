package auth

import (
	"context"
	"fmt"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
)

// Operation names: the NATS API's operation names (trellis.api.v1.<op>),
// which the HTTP routes and MCP tools map onto, plus the HTTP-only
// surfaces.
var policy = map[string]Role{
	// Reads.
	"ping": RoleReader, "queue.show": RoleReader, "queue.list": RoleReader, "queue.controls": RoleReader,
	"queue.export": RoleReader, "audit": RoleReader, "vine.next": RoleReader, "vine.read": RoleReader,
	"vine.export": RoleReader, "task.show": RoleReader, "task.list": RoleReader, "task.context": RoleReader,
	"memory.facts": RoleReader, "memory.history": RoleReader, "code.search": RoleReader, "code.chunk": RoleReader,
	"metrics": RoleReader, "mcp": RoleReader, "token.whoami": RoleReader, "schedule.list": RoleReader,
	"code.explain": RoleReader, "audit.query": RoleReader, "audit.projections": RoleReader, "workflow.show": RoleReader, "workflow.list": RoleReader,
	// A worker's work.
	"queue.next": RoleWorker, "queue.done": RoleWorker, "queue.fail": RoleWorker, "queue.claim": RoleWorker,
	"queue.heartbeat": RoleWorker, "queue.release": RoleWorker, "queue.prepare": RoleWorker, "queue.ack": RoleWorker,
	"vine.claim": RoleWorker, "vine.write": RoleWorker, "vine.expand": RoleWorker, "vine.import": RoleWorker,
	"memory.observe": RoleWorker,
	// A signal is a worker's (an agent approves, rejects or sends data).
	"workflow.signal": RoleWorker,
	// Everything else is the admin's: adding tasks, replay, retry, pause,
	// resume and limits, cancels and schedules, agent tasks and consolidation, ingest, tokens.
	"queue.add": RoleAdmin, "queue.add_many": RoleAdmin, "queue.cancel": RoleAdmin, "queue.release_claim": RoleAdmin, "schedule.add": RoleAdmin,
	"schedule.remove": RoleAdmin, "queue.retry": RoleAdmin, "queue.control": RoleAdmin, "replay": RoleAdmin,
	"task.create": RoleAdmin, "task.join": RoleAdmin, "task.objective": RoleAdmin, "task.complete_agent": RoleAdmin,
	"task.complete": RoleAdmin, "memory.consolidate": RoleAdmin, "code.ingest": RoleAdmin,
	"token.create": RoleAdmin, "token.list": RoleAdmin, "token.revoke": RoleAdmin,
	"workflow.start": RoleAdmin, "workflow.cancel": RoleAdmin, "workflow.retry": RoleAdmin,
}

// Required returns the least role that may perform op. An operation the
// policy does not name needs admin (closed by default).
func Required(op string) Role {
	if r, ok := policy[op]; ok {
		return r
	}
	return RoleAdmin
}

// Known reports whether the policy names op.
func Known(op string) bool { _, ok := policy[op]; return ok }

// Allow checks that the caller of ctx may perform op: nil when the call
// was not authenticated (authentication off: the transport let it in) or
// the caller's role covers op, else an unauthorized error naming both.
func Allow(ctx context.Context, op string) error {
	id, ok := FromContext(ctx)
	if !ok {
		return nil
	}
	if need := Required(op); !id.Role.Covers(need) {
		return &trellis.Error{Code: trellis.CodeUnauthorized, Err: ErrForbidden,
			Message: fmt.Sprintf("%s may not %s: it needs the %s role", id, op, need)}
	}
	return nil
}

// ErrForbidden is the cause of a refusal of an authenticated caller whose
// role or name may not do what it asked (HTTP 403), as opposed to a caller
// without a valid token (401).
var ErrForbidden = fmt.Errorf("forbidden")

// Bind makes a decoded request act as the authenticated caller of ctx:
// the fields naming who acts (worker, agent, actor) are filled with the
// caller's name when empty, and must otherwise be the caller's name or one
// of its slots ("<name>/<slot>", how a worker pool names its claimants);
// a worker limited to queues may only claim on those. Without an
// authenticated caller it does nothing.
func Bind(ctx context.Context, req any) error {
	id, ok := FromContext(ctx)
	if !ok {
		return nil
	}
	switch r := req.(type) {
	case *trellis.NextRequest:
		if err := mayWork(id, r.Queue); err != nil {
			return err
		}
		return actAs(id, "worker", &r.Worker)
	case *trellis.DoneRequest:
		return actAs(id, "worker", &r.Worker)
	case *trellis.FailRequest:
		return actAs(id, "worker", &r.Worker)
	case *trellis.RetryRequest:
		return actAs(id, "actor", &r.Actor)
	case *trellis.ControlRequest:
		return actAs(id, "actor", &r.Actor)
	case *trellis.CancelRequest:
		return actAs(id, "actor", &r.Actor)
	case *trellis.ReleaseRequest:
		return actAs(id, "actor", &r.Actor)
	case *trellis.HeartbeatRequest:
		return actAs(id, "worker", &r.Worker)
	case *trellis.ScheduleRequest:
		return actAs(id, "actor", &r.Actor)
	case *trellis.RemoveScheduleRequest:
		return actAs(id, "actor", &r.Actor)
	case *trellis.VineFileRequest:
		return actAs(id, "agent", &r.Agent)
	case *trellis.VineWriteRequest:
		return actAs(id, "agent", &r.Agent)
	case *trellis.VineClaimRequest:
		return actAs(id, "agent", &r.Agent)
	case *trellis.VineExpandRequest:
		return actAs(id, "agent", &r.Agent)
	case *trellis.ObserveRequest:
		if r.Agent == "" {
			return nil // an observation on a branch, by no agent
		}
		return actAs(id, "agent_id", &r.Agent)
	case ActorBound:
		field, actor := r.BoundActor()
		return actAs(id, field, actor)
	}
	return nil
}

// ActorBound is a request of another package (a workflow's start, signal,
// cancel or retry) that names who acts: Bind makes it act as the caller,
// like the root package's requests.
type ActorBound interface {
	// BoundActor returns the JSON name of the field naming who acts and a
	// pointer to it.
	BoundActor() (field string, actor *string)
}

// MayWork checks that the caller of ctx may claim on queue ("" is the
// default queue).
func MayWork(ctx context.Context, queue string) error {
	id, ok := FromContext(ctx)
	if !ok {
		return nil
	}
	return mayWork(id, queue)
}

func mayWork(id Identity, queue string) error {
	if queue == "" {
		queue = trellis.DefaultQueue
	}
	if !id.MayWork(queue) {
		return &trellis.Error{Code: trellis.CodeUnauthorized, Field: "queue", Err: ErrForbidden,
			Message: fmt.Sprintf("%s may work only the queues %v, not %q", id, id.Queues, queue)}
	}
	return nil
}

// actAs fills or checks one who-acts field.
func actAs(id Identity, field string, who *string) error {
	if *who == "" {
		*who = id.Name
		return nil
	}
	if !events.ActsAs(id.Name, *who) {
		return &trellis.Error{Code: trellis.CodeUnauthorized, Field: field, Err: ErrForbidden,
			Message: fmt.Sprintf("%s acts only as %q or %q/<slot>, not as %q", id, id.Name, id.Name, *who)}
	}
	return nil
}
