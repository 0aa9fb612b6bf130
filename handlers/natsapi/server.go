package natsapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/auth"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/handlers"
	"github.com/trellis/trellis/taskqueue"
	"github.com/trellis/trellis/vinegraph"
	"github.com/trellis/trellis/workflow"
)

// Responder answers API requests for one Service until Stop.
type Responder struct {
	nc   *nats.Conn
	subs []*nats.Subscription
	sem  chan struct{}
	// stopped are the subscriptions Stop ended (see Drained).
	stopped []*nats.Subscription
}

// ServeConfig configures Serve.
type ServeConfig struct {
	// Info is returned by ping.
	Info PingInfo
	// Concurrency bounds requests handled at once (default 256).
	Concurrency int
	// Timeout bounds one request (default 30 s).
	Timeout time.Duration
	// Logger receives internal errors.
	Logger *slog.Logger
	// Auth, when set, turns authentication on: every request must carry
	// a token in its Authorization header ("Bearer <token>"), the caller's
	// role must cover the operation (auth.Required), and the request acts
	// as the token's name (auth.Bind). Nil: every request is let in.
	Auth auth.Verifier
	// Tokens serves the token operations (token.create, token.list,
	// token.revoke); nil: they answer unavailable.
	Tokens *auth.Service
}

// Service is what the API calls: the domains behind the root package's
// interfaces, and the glue beside them (Composition). The server passes
// its *handlers.Service, which composes them all.
type Service interface {
	trellis.Domains
	trellis.ProjectionStatus
	Composition
}

// Composition is what the API needs of the composed service beyond the
// domains: the log (export, ingest, leases), an aggregate's events, the
// rebuild, the queue's and VINE's command handlers (leased claims, the
// workspace roots) and the workflows.
type Composition interface {
	Store() *events.Store
	Audit(ctx context.Context, id string) ([]events.Recorded, error)
	Replay(ctx context.Context) (*handlers.ReplayResult, error)
	QueueHandler() *taskqueue.Handler
	VineHandler() *vinegraph.Handler
	Workflows() *workflow.Engine
}

// Serve subscribes the API subjects on nc and answers them with svc.
func Serve(nc *nats.Conn, svc Service, cfg ServeConfig) (*Responder, error) {
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 256
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	r := &Responder{nc: nc, sem: make(chan struct{}, cfg.Concurrency)}
	for op, fn := range operations(nc, svc, cfg) {
		op, fn := op, fn
		if op == OpQueueExport {
			continue // streamed: see serveExport
		}
		sub, err := nc.QueueSubscribe(Prefix+op, QueueGroup, func(m *nats.Msg) {
			if refused(m, cfg.Logger) {
				return
			}
			r.sem <- struct{}{}
			go func() {
				defer func() { <-r.sem }()
				timeout := cfg.Timeout
				switch m.Subject {
				case Prefix + OpReplay, Prefix + OpIngest:
					timeout = 10 * time.Minute
				case Prefix + OpSearch, Prefix + OpChunk:
					timeout = 150 * time.Second // the index may be catching up with a large ingest
				case Prefix + OpExplain:
					timeout = 5 * time.Minute // retrieval, then a chat model
				}
				ctx, cancel := context.WithTimeout(context.Background(), timeout)
				defer cancel()
				ctx, stop, err := withDeadline(ctx, m)
				defer stop()
				if err != nil {
					cfg.Logger.Info("api request past its deadline: not applied", "subject", m.Subject, "err", err)
					respond(m, nil, err, cfg.Logger)
					return
				}
				ctx, err = authorize(ctx, cfg.Auth, m, op)
				if err != nil {
					respond(m, nil, err, cfg.Logger)
					return
				}
				res, err := fn(ctx, m.Data)
				respond(m, res, err, cfg.Logger)
			}()
		})
		if err != nil {
			r.Stop()
			return nil, fmt.Errorf("subscribe %s: %w", Prefix+op, err)
		}
		r.subs = append(r.subs, sub)
	}
	sub, err := nc.QueueSubscribe(Prefix+OpQueueExport, QueueGroup, func(m *nats.Msg) {
		if refused(m, cfg.Logger) {
			return
		}
		r.sem <- struct{}{}
		go func() {
			defer func() { <-r.sem }()
			serveExport(nc, svc, cfg, m)
		}()
	})
	if err != nil {
		r.Stop()
		return nil, fmt.Errorf("subscribe %s: %w", Prefix+OpQueueExport, err)
	}
	r.subs = append(r.subs, sub)
	// Make sure the server has the subscriptions before anyone is told the
	// API is up: a request sent earlier would find no responders.
	if err := nc.FlushTimeout(10 * time.Second); err != nil {
		r.Stop()
		return nil, fmt.Errorf("register API subscriptions: %w", err)
	}
	return r, nil
}

// operations returns every operation of the API but the streamed export,
// by name.
func operations(nc *nats.Conn, svc Service, cfg ServeConfig) map[string]func(context.Context, []byte) (any, error) {
	ops := map[string]func(ctx context.Context, data []byte) (any, error){
		OpPing:         func(context.Context, []byte) (any, error) { return cfg.Info, nil },
		OpQueueAdd:     handler(svc.Add),
		OpQueueAddMany: handler(svc.AddMany),
		OpQueueNext:    handler(svc.Next),
		OpQueueDone:    handler(svc.Done),
		OpQueueFail:    handler(svc.Fail),
		OpQueueShow: handler(func(ctx context.Context, r ShowRequest) (*trellis.Task, error) {
			return svc.Show(ctx, r.TaskID)
		}),
		OpQueueList:         handler(svc.List),
		OpReplay:            func(ctx context.Context, _ []byte) (any, error) { return svc.Replay(ctx) },
		OpRetry:             handler(svc.Retry),
		OpControl:           handler(svc.Control),
		OpCancel:            handler(svc.Cancel),
		OpQueueReleaseClaim: handler(svc.ReleaseClaim),
		OpScheduleAdd:       handler(svc.AddSchedule),
		OpScheduleRemove:    handler(svc.RemoveSchedule),
		OpScheduleList: handler(func(ctx context.Context, _ struct{}) ([]*trellis.Schedule, error) {
			return svc.Schedules(ctx)
		}),
		OpControls: handler(func(ctx context.Context, r ControlsRequest) (*trellis.QueueControls, error) {
			return svc.Controls(ctx, r.Queue)
		}),
	}
	for op, fn := range vineOps(svc) {
		ops[op] = fn
	}
	for op, fn := range memoryOps(svc) {
		ops[op] = fn
	}
	ops[OpSearch] = handler(svc.Search)
	ops[OpExplain] = handler(svc.Explain)
	ops[OpAuditQuery] = handler(svc.AuditQuery)
	ops[OpAuditProjections] = func(ctx context.Context, _ []byte) (any, error) { return svc.Projections(ctx) }
	ops[OpChunk] = handler(func(ctx context.Context, r ChunkRequest) (*trellis.ChunkHit, error) {
		return svc.Chunk(ctx, r.ChunkID)
	})
	for op, fn := range leaseOps(svc, nc) {
		ops[op] = fn
	}
	for op, fn := range tokenOps(cfg.Tokens) {
		ops[op] = fn
	}
	for op, fn := range workflowOps(svc.Workflows()) {
		ops[op] = fn
	}
	for op, fn := range logOps(svc) {
		ops[op] = fn
	}
	return ops
}

// refused reports (and logs) a request the API neither runs nor answers
// because of its reply subject (see replyRefusal). It is decided before
// the request is run, in the subscription's own order.
func refused(m *nats.Msg, log *slog.Logger) bool {
	why := replyRefusal(m)
	if why == "" {
		return false
	}
	log.Warn("api request refused: not answered", "subject", m.Subject, "reply", m.Reply, "reason", why)
	return true
}

// respond answers m (only ever on a reply subject replyRefusal accepts).
func respond(m *nats.Msg, res any, err error, log *slog.Logger) {
	if why := replyRefusal(m); why != "" {
		log.Warn("api reply refused", "subject", m.Subject, "reply", m.Reply, "reason", why)
		return
	}
	var body reply
	if err != nil {
		te := trellis.PublicError(log, err, "transport", "nats", "subject", m.Subject)
		body.Error = &ReplyError{Code: string(te.Code), Field: te.Field, Message: te.Message}
	} else {
		body.Result = res
	}
	data, mErr := json.Marshal(body)
	if mErr != nil {
		te := trellis.PublicError(log, fmt.Errorf("encode reply: %w", mErr), "transport", "nats", "subject", m.Subject)
		data, _ = json.Marshal(reply{Error: &ReplyError{Code: string(te.Code), Message: te.Message}})
	}
	err = m.Respond(data)
	if errors.Is(err, nats.ErrMaxPayload) {
		// Tell the caller, who would otherwise wait out its timeout.
		data, _ = json.Marshal(reply{Error: &ReplyError{Code: string(trellis.CodeInternal),
			Message: fmt.Sprintf("the reply (%d bytes) is larger than the NATS server's max_payload: ask for less (a page, a filter) or raise max_payload", len(data))}})
		err = m.Respond(data)
	}
	if err != nil {
		log.Warn("api respond", "subject", m.Subject, "err", err)
	}
}

// withDeadline bounds ctx by the request's deadline (HeaderDeadline), or
// refuses a request received after it: its caller has given up, so
// applying it now would act for nobody (a claim holding a task for a whole
// lease, an outcome the worker reported as not recorded).
func withDeadline(ctx context.Context, m *nats.Msg) (context.Context, func(), error) {
	if m.Header == nil || m.Header.Get(HeaderDeadline) == "" {
		return ctx, func() {}, nil
	}
	deadline, err := time.Parse(time.RFC3339Nano, m.Header.Get(HeaderDeadline))
	if err != nil {
		return ctx, func() {}, trellis.FieldError(HeaderDeadline, "is not an RFC 3339 time: %q", m.Header.Get(HeaderDeadline))
	}
	if late := time.Since(deadline); late >= 0 {
		return ctx, func() {}, trellis.Errorf(trellis.CodeUnavailable, "the request arrived %s after its deadline (%s): not applied", late.Round(time.Millisecond), deadline.Format(time.RFC3339Nano))
	}
	ctx, cancel := context.WithDeadline(ctx, deadline)
	return ctx, cancel, nil
}

// Stop unsubscribes; requests in flight finish. While the connection is
// down (serve's quorum watch stops the responder when its node is gone)
// it unsubscribes at once instead of draining: nats.go sends no UNSUB for
// a subscription drained while reconnecting and keeps it until a flush
// answers, so a reconnect within that flush's 10 s subscribed it again on
// the server, where it stayed a dead member of the API's queue group that
// swallowed its share of the requests (TestStopWhileReconnectingLeavesNoGhost).
// A connection that is down holds no interest on any server and receives
// nothing more; a request received before and not yet handled is dropped
// (its caller sees no answer, as with any server that went away).
func (r *Responder) Stop() {
	drain := r.nc == nil || r.nc.IsConnected()
	for _, s := range r.subs {
		if drain {
			_ = s.Drain()
		} else {
			_ = s.Unsubscribe()
		}
	}
	r.stopped, r.subs = r.subs, nil
}

// Drained reports whether every subscription Stop ended is gone from the
// connection: a drain keeps them until the requests received are handled,
// and a reconnect before then (serve's quorum watch moving its
// connection to another node) would subscribe them again on the new
// server, dead members of the API's queue group.
func (r *Responder) Drained() bool {
	for _, s := range r.stopped {
		if s.IsValid() {
			return false
		}
	}
	return true
}

// handler decodes a request of type R and calls fn.
func handler[R any, T any](fn func(context.Context, R) (T, error)) func(context.Context, []byte) (any, error) {
	return func(ctx context.Context, data []byte) (any, error) {
		var req R
		if err := decode(ctx, data, &req); err != nil {
			return nil, err
		}
		return fn(ctx, req)
	}
}

// vineOps are the VINE operations of the API.
func vineOps(svc trellis.VineService) map[string]func(context.Context, []byte) (any, error) {
	return map[string]func(context.Context, []byte) (any, error){
		OpVineNext:   handler(svc.VineNext),
		OpVineRead:   handler(svc.VineRead),
		OpVineWrite:  handler(svc.VineWrite),
		OpVineClaim:  handler(svc.VineClaim),
		OpVineExpand: handler(svc.VineExpand),
		OpVineImport: handler(svc.VineImport),
		OpVineExport: handler(svc.VineExport),
	}
}

// memoryOps are the agent-task and memory operations of the API.
func memoryOps(svc trellis.MemoryService) map[string]func(context.Context, []byte) (any, error) {
	byTask := func(fn func(context.Context, string) (any, error)) func(context.Context, AgentTaskRequest) (any, error) {
		return func(ctx context.Context, r AgentTaskRequest) (any, error) { return fn(ctx, r.Task) }
	}
	return map[string]func(context.Context, []byte) (any, error){
		OpTaskCreate:        handler(svc.TaskCreate),
		OpTaskJoin:          handler(svc.TaskJoin),
		OpTaskObjective:     handler(svc.TaskObjective),
		OpTaskCompleteAgent: handler(svc.TaskCompleteAgent),
		OpTaskComplete:      handler(svc.TaskComplete),
		OpTaskShow:          handler(byTask(func(ctx context.Context, t string) (any, error) { return svc.TaskShow(ctx, t) })),
		OpTaskList:          handler(svc.TaskList),
		OpTaskContext:       handler(byTask(func(ctx context.Context, t string) (any, error) { return svc.TaskContext(ctx, t) })),
		OpObserve:           handler(svc.Observe),
		OpConsolidate:       handler(svc.Consolidate),
		OpFacts:             handler(svc.Facts),
		OpHistory:           handler(svc.History),
	}
}

// Operations lists every operation the API serves (the streamed export
// included), as registered: a suite that must cover each one enumerates
// them here.
func Operations() []string {
	out := []string{OpQueueExport}
	for op := range operations(nil, &handlers.Service{}, ServeConfig{}) {
		out = append(out, op)
	}
	return out
}
