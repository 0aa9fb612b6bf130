package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/handlers"
	"github.com/trellis/trellis/handlers/natsapi"
)

// API calls a running Trellis server over NATS. It implements
// trellis.QueueService.
type API struct {
	nc      *nats.Conn
	timeout time.Duration
	token   string // sent as "Authorization: Bearer <token>" on every request
	// watch is how often a call in flight checks that a server is still
	// there to answer it.
	watch time.Duration
}

// lostGrace is how long a call in flight tolerates a lost NATS connection
// (a reconnect to another cluster node) before it gives up.
const lostGrace = 2 * time.Second

var (
	_ trellis.QueueService  = (*API)(nil)
	_ trellis.QueueAdmin    = (*API)(nil)
	_ trellis.VineService   = (*API)(nil)
	_ trellis.MemoryService = (*API)(nil)
	_ trellis.CodeService   = (*API)(nil)
	_ trellis.Domains       = (*API)(nil)
)

// NewAPI returns a client with the given per-request timeout (default
// 30 s).
func NewAPI(nc *nats.Conn, timeout time.Duration) *API {
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	return &API{nc: nc, timeout: timeout, watch: 500 * time.Millisecond}
}

// WithToken returns the client presenting token on every request (a
// server with authentication on refuses requests without one).
func (c *API) WithToken(token string) *API {
	cp := *c
	cp.token = token
	return &cp
}

// request builds the message of a request on subject, with the token.
func (c *API) request(subject string, data []byte, deadline time.Time) *nats.Msg {
	m := nats.NewMsg(subject)
	m.Data = data
	if c.token != "" {
		m.Header.Set(natsapi.HeaderAuthorization, "Bearer "+c.token)
	}
	if !deadline.IsZero() {
		m.Header.Set(natsapi.HeaderDeadline, deadline.UTC().Format(time.RFC3339Nano))
	}
	return m
}

// errServerGone is the cause of a call abandoned because nothing can
// answer it any more.
var errServerGone = errors.New("server gone")

// watchCall cancels ctx when the call in flight can no longer be answered:
// the NATS connection stays lost for lostGrace, or no Trellis server
// answers pings any more (the one holding the request died). A server that
// is alive but slow keeps the call waiting until its timeout.
func (c *API) watchCall(ctx context.Context, op string) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	stop := make(chan struct{})
	go func() {
		t := time.NewTicker(c.watch)
		defer t.Stop()
		var lostSince time.Time
		for {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if !c.nc.IsConnected() {
				if lostSince.IsZero() {
					lostSince = time.Now()
				} else if time.Since(lostSince) >= lostGrace {
					cancel(fmt.Errorf("%w: lost the connection to NATS while waiting for the %s reply", errServerGone, op))
					return
				}
				continue
			}
			lostSince = time.Time{}
			pctx, pcancel := context.WithTimeout(ctx, c.watch)
			_, err := c.nc.RequestMsgWithContext(pctx, c.request(natsapi.Prefix+natsapi.OpPing, []byte("{}"), time.Time{}))
			pcancel()
			if errors.Is(err, nats.ErrNoResponders) {
				cancel(fmt.Errorf("%w: no trellis server answers any more (the one handling %s stopped)", errServerGone, op))
				return
			}
		}
	}()
	return ctx, func() { close(stop); cancel(nil) }
}

// call sends req to op and decodes the result into out (which may be a
// pointer to a pointer, left nil for a null result).
func (c *API) call(ctx context.Context, op string, req, out any) error {
	data, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("encode %s request: %w", op, err)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	deadline, _ := ctx.Deadline()
	wctx, stopWatch := c.watchCall(ctx, op)
	msg, err := c.nc.RequestMsgWithContext(wctx, c.request(natsapi.Prefix+op, data, deadline))
	cause := context.Cause(wctx)
	stopWatch()
	if err != nil && errors.Is(cause, errServerGone) {
		return &trellis.Error{Code: trellis.CodeUnavailable, Err: cause, Message: fmt.Sprintf(
			"%v; the request may or may not have been applied: check before repeating it", cause)}
	}
	if err != nil {
		if errors.Is(err, nats.ErrConnectionClosed) && authRefused(c.nc.LastError()) {
			return &trellis.Error{Code: trellis.CodeUnauthorized, Err: err,
				Message: "the NATS server closed the connection and refuses its token: the token was revoked or has expired"}
		}
		if errors.Is(err, nats.ErrMaxPayload) {
			return &trellis.Error{Code: trellis.CodeInvalid, Field: "body", Err: err,
				Message: fmt.Sprintf("request is %d bytes; the NATS server accepts at most %d", len(data), c.nc.MaxPayload())}
		}
		if errors.Is(err, nats.ErrNoResponders) {
			return &trellis.Error{Code: trellis.CodeUnavailable, Message: "no trellis server answers on " + natsapi.Prefix + op, Err: err}
		}
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) {
			return &trellis.Error{Code: trellis.CodeUnavailable, Message: "trellis server did not answer " + op + " in time", Err: err}
		}
		return &trellis.Error{Code: trellis.CodeUnavailable, Message: op + ": " + err.Error(), Err: err}
	}
	var body struct {
		Result json.RawMessage     `json:"result"`
		Error  *natsapi.ReplyError `json:"error"`
	}
	if err := json.Unmarshal(msg.Data, &body); err != nil {
		return trellis.Errorf(trellis.CodeInternal, "decode %s reply: %w", op, err)
	}
	if body.Error != nil {
		return &trellis.Error{Code: trellis.Code(body.Error.Code), Field: body.Error.Field, Message: body.Error.Message}
	}
	if out == nil || len(body.Result) == 0 {
		return nil
	}
	if err := json.Unmarshal(body.Result, out); err != nil {
		return trellis.Errorf(trellis.CodeInternal, "decode %s result: %w", op, err)
	}
	return nil
}

// authRefused reports whether a connection's last error is the NATS
// server refusing its credentials.
func authRefused(err error) bool {
	return err != nil && (errors.Is(err, nats.ErrAuthorization) || errors.Is(err, nats.ErrAuthExpired) || errors.Is(err, nats.ErrAuthRevoked) ||
		strings.Contains(strings.ToLower(err.Error()), "authorization violation"))
}

// Ping asks a server who it is.
func (c *API) Ping(ctx context.Context) (*natsapi.PingInfo, error) {
	var info natsapi.PingInfo
	if err := c.call(ctx, natsapi.OpPing, struct{}{}, &info); err != nil {
		return nil, err
	}
	return &info, nil
}

// Add implements trellis.QueueService.
func (c *API) Add(ctx context.Context, req trellis.AddTaskRequest) (*trellis.Task, error) {
	return c.task(ctx, natsapi.OpQueueAdd, req)
}

// AddMany implements trellis.QueueService.
func (c *API) AddMany(ctx context.Context, req trellis.AddManyRequest) (*trellis.AddManyResult, error) {
	var out trellis.AddManyResult
	if err := c.call(ctx, natsapi.OpQueueAddMany, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Next implements trellis.QueueService.
func (c *API) Next(ctx context.Context, req trellis.NextRequest) (*trellis.Task, error) {
	return c.task(ctx, natsapi.OpQueueNext, req)
}

// Done implements trellis.QueueService.
func (c *API) Done(ctx context.Context, req trellis.DoneRequest) (*trellis.Task, error) {
	return c.task(ctx, natsapi.OpQueueDone, req)
}

// Fail implements trellis.QueueService.
func (c *API) Fail(ctx context.Context, req trellis.FailRequest) (*trellis.Task, error) {
	return c.task(ctx, natsapi.OpQueueFail, req)
}

// Show implements trellis.QueueService.
func (c *API) Show(ctx context.Context, taskID string) (*trellis.Task, error) {
	return c.task(ctx, natsapi.OpQueueShow, natsapi.ShowRequest{TaskID: taskID})
}

// List implements trellis.QueueService.
func (c *API) List(ctx context.Context, req trellis.ListRequest) (*trellis.TaskList, error) {
	var out trellis.TaskList
	if err := c.call(ctx, natsapi.OpQueueList, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Replay asks the server to rebuild its projections.
func (c *API) Replay(ctx context.Context) (*handlers.ReplayResult, error) {
	var out handlers.ReplayResult
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	if err := c.call(ctx, natsapi.OpReplay, struct{}{}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func (c *API) task(ctx context.Context, op string, req any) (*trellis.Task, error) {
	var out *trellis.Task
	if err := c.call(ctx, op, req, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// Retry implements trellis.QueueAdmin.
func (c *API) Retry(ctx context.Context, req trellis.RetryRequest) (*trellis.Task, error) {
	return c.task(ctx, natsapi.OpRetry, req)
}

// Cancel implements trellis.QueueAdmin.
func (c *API) Cancel(ctx context.Context, req trellis.CancelRequest) (*trellis.Task, error) {
	return c.task(ctx, natsapi.OpCancel, req)
}

var _ trellis.QueueLeases = (*API)(nil)

// Heartbeat implements trellis.QueueLeases.
func (c *API) Heartbeat(ctx context.Context, req trellis.HeartbeatRequest) (*trellis.Task, error) {
	return c.task(ctx, natsapi.OpQueueHeartbeat, req)
}

// ReleaseClaim implements trellis.QueueLeases.
func (c *API) ReleaseClaim(ctx context.Context, req trellis.ReleaseRequest) (*trellis.Task, error) {
	return c.task(ctx, natsapi.OpQueueReleaseClaim, req)
}

var _ trellis.ScheduleService = (*API)(nil)

// AddSchedule implements trellis.ScheduleService.
func (c *API) AddSchedule(ctx context.Context, req trellis.ScheduleRequest) (*trellis.Schedule, error) {
	return callInto[trellis.Schedule](ctx, c, natsapi.OpScheduleAdd, req)
}

// Schedules implements trellis.ScheduleService.
func (c *API) Schedules(ctx context.Context) ([]*trellis.Schedule, error) {
	var out []*trellis.Schedule
	if err := c.call(ctx, natsapi.OpScheduleList, struct{}{}, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// RemoveSchedule implements trellis.ScheduleService.
func (c *API) RemoveSchedule(ctx context.Context, req trellis.RemoveScheduleRequest) (*trellis.Schedule, error) {
	return callInto[trellis.Schedule](ctx, c, natsapi.OpScheduleRemove, req)
}

// Control implements trellis.QueueAdmin.
func (c *API) Control(ctx context.Context, req trellis.ControlRequest) (*trellis.QueueControls, error) {
	var out trellis.QueueControls
	if err := c.call(ctx, natsapi.OpControl, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Controls implements trellis.QueueAdmin.
func (c *API) Controls(ctx context.Context, queue string) (*trellis.QueueControls, error) {
	var out trellis.QueueControls
	if err := c.call(ctx, natsapi.OpControls, natsapi.ControlsRequest{Queue: queue}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// callInto sends req to op and decodes the result into a new T.
func callInto[T any](ctx context.Context, c *API, op string, req any) (*T, error) {
	var out T
	if err := c.call(ctx, op, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// VineNext implements trellis.VineService.
func (c *API) VineNext(ctx context.Context, req trellis.VineFileRequest) (*trellis.VineFrontier, error) {
	return callInto[trellis.VineFrontier](ctx, c, natsapi.OpVineNext, req)
}

// VineRead implements trellis.VineService.
func (c *API) VineRead(ctx context.Context, req trellis.VineReadRequest) (*trellis.VineReadResult, error) {
	return callInto[trellis.VineReadResult](ctx, c, natsapi.OpVineRead, req)
}

// VineWrite implements trellis.VineService.
func (c *API) VineWrite(ctx context.Context, req trellis.VineWriteRequest) (*trellis.VineWriteResult, error) {
	return callInto[trellis.VineWriteResult](ctx, c, natsapi.OpVineWrite, req)
}

// VineClaim implements trellis.VineService.
func (c *API) VineClaim(ctx context.Context, req trellis.VineClaimRequest) (*trellis.VineClaimResult, error) {
	return callInto[trellis.VineClaimResult](ctx, c, natsapi.OpVineClaim, req)
}

// VineExpand implements trellis.VineService.
func (c *API) VineExpand(ctx context.Context, req trellis.VineExpandRequest) (*trellis.VineWriteResult, error) {
	return callInto[trellis.VineWriteResult](ctx, c, natsapi.OpVineExpand, req)
}

// VineImport implements trellis.VineService.
func (c *API) VineImport(ctx context.Context, req trellis.VineFileRequest) (*trellis.VineGraphInfo, error) {
	return callInto[trellis.VineGraphInfo](ctx, c, natsapi.OpVineImport, req)
}

// VineExport implements trellis.VineService.
func (c *API) VineExport(ctx context.Context, req trellis.VineExportRequest) (*trellis.VineExportResult, error) {
	return callInto[trellis.VineExportResult](ctx, c, natsapi.OpVineExport, req)
}

// TaskCreate implements trellis.MemoryService.
func (c *API) TaskCreate(ctx context.Context, req trellis.AgentTaskCreateRequest) (*trellis.AgentTaskView, error) {
	return callInto[trellis.AgentTaskView](ctx, c, natsapi.OpTaskCreate, req)
}

// TaskJoin implements trellis.MemoryService.
func (c *API) TaskJoin(ctx context.Context, req trellis.AgentTaskJoinRequest) (*trellis.AgentTaskJoinResult, error) {
	return callInto[trellis.AgentTaskJoinResult](ctx, c, natsapi.OpTaskJoin, req)
}

// TaskObjective implements trellis.MemoryService.
func (c *API) TaskObjective(ctx context.Context, req trellis.AgentTaskObjectiveRequest) (*trellis.AgentTaskView, error) {
	return callInto[trellis.AgentTaskView](ctx, c, natsapi.OpTaskObjective, req)
}

// TaskCompleteAgent implements trellis.MemoryService.
func (c *API) TaskCompleteAgent(ctx context.Context, req trellis.AgentCompleteRequest) (*trellis.ConsolidationReport, error) {
	return callInto[trellis.ConsolidationReport](ctx, c, natsapi.OpTaskCompleteAgent, req)
}

// TaskComplete implements trellis.MemoryService.
func (c *API) TaskComplete(ctx context.Context, req trellis.AgentTaskCompleteRequest) (*trellis.ConsolidationReport, error) {
	return callInto[trellis.ConsolidationReport](ctx, c, natsapi.OpTaskComplete, req)
}

// TaskShow implements trellis.MemoryService.
func (c *API) TaskShow(ctx context.Context, task string) (*trellis.AgentTaskView, error) {
	return callInto[trellis.AgentTaskView](ctx, c, natsapi.OpTaskShow, natsapi.AgentTaskRequest{Task: task})
}

// TaskList implements trellis.MemoryService.
func (c *API) TaskList(ctx context.Context, req trellis.AgentTaskListRequest) ([]trellis.AgentTaskView, error) {
	out, err := callInto[[]trellis.AgentTaskView](ctx, c, natsapi.OpTaskList, req)
	if err != nil {
		return nil, err
	}
	return *out, nil
}

// TaskContext implements trellis.MemoryService.
func (c *API) TaskContext(ctx context.Context, task string) (*trellis.AgentTaskContextView, error) {
	return callInto[trellis.AgentTaskContextView](ctx, c, natsapi.OpTaskContext, natsapi.AgentTaskRequest{Task: task})
}

// Observe implements trellis.MemoryService.
func (c *API) Observe(ctx context.Context, req trellis.ObserveRequest) (*trellis.ObservationView, error) {
	return callInto[trellis.ObservationView](ctx, c, natsapi.OpObserve, req)
}

// Consolidate implements trellis.MemoryService.
func (c *API) Consolidate(ctx context.Context, req trellis.ConsolidateRequest) (*trellis.ConsolidationReport, error) {
	return callInto[trellis.ConsolidationReport](ctx, c, natsapi.OpConsolidate, req)
}

// Facts implements trellis.MemoryService.
func (c *API) Facts(ctx context.Context, req trellis.FactsRequest) ([]trellis.FactView, error) {
	out, err := callInto[[]trellis.FactView](ctx, c, natsapi.OpFacts, req)
	if err != nil {
		return nil, err
	}
	return *out, nil
}

// History implements trellis.MemoryService.
func (c *API) History(ctx context.Context, req trellis.HistoryRequest) ([]trellis.ConsolidationReport, error) {
	out, err := callInto[[]trellis.ConsolidationReport](ctx, c, natsapi.OpHistory, req)
	if err != nil {
		return nil, err
	}
	return *out, nil
}

// Search implements trellis.CodeService. It waits longer than other
// calls: right after a large ingest the server waits for its index.
func (c *API) Search(ctx context.Context, req trellis.SearchRequest) (*trellis.SearchResult, error) {
	ctx, cancel := context.WithTimeout(ctx, 150*time.Second)
	defer cancel()
	return callInto[trellis.SearchResult](ctx, c, natsapi.OpSearch, req)
}

// Explain implements trellis.CodeService. It waits as long as the chat
// model may take (the server's own limit is 5 minutes).
func (c *API) Explain(ctx context.Context, req trellis.ExplainRequest) (*trellis.ExplainResult, error) {
	ctx, cancel := context.WithTimeout(ctx, 310*time.Second)
	defer cancel()
	return callInto[trellis.ExplainResult](ctx, c, natsapi.OpExplain, req)
}

// Chunk implements trellis.CodeService.
func (c *API) Chunk(ctx context.Context, chunkID string) (*trellis.ChunkHit, error) {
	return callInto[trellis.ChunkHit](ctx, c, natsapi.OpChunk, natsapi.ChunkRequest{ChunkID: chunkID})
}
