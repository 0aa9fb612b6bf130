package natsapi

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
)

// Client calls a running Trellis server over NATS. It implements
// trellis.QueueService.
type Client struct {
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
	_ trellis.QueueService  = (*Client)(nil)
	_ trellis.QueueAdmin    = (*Client)(nil)
	_ trellis.VineService   = (*Client)(nil)
	_ trellis.MemoryService = (*Client)(nil)
	_ trellis.CodeService   = (*Client)(nil)
)

// NewClient returns a client with the given per-request timeout (default
// 30 s).
func NewClient(nc *nats.Conn, timeout time.Duration) *Client {
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	return &Client{nc: nc, timeout: timeout, watch: 500 * time.Millisecond}
}

// WithToken returns the client presenting token on every request (a
// server with authentication on refuses requests without one).
func (c *Client) WithToken(token string) *Client {
	cp := *c
	cp.token = token
	return &cp
}

// request builds the message of a request on subject, with the token.
func (c *Client) request(subject string, data []byte, deadline time.Time) *nats.Msg {
	m := nats.NewMsg(subject)
	m.Data = data
	if c.token != "" {
		m.Header.Set(HeaderAuthorization, "Bearer "+c.token)
	}
	if !deadline.IsZero() {
		m.Header.Set(HeaderDeadline, deadline.UTC().Format(time.RFC3339Nano))
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
func (c *Client) watchCall(ctx context.Context, op string) (context.Context, func()) {
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
			_, err := c.nc.RequestMsgWithContext(pctx, c.request(Prefix+OpPing, []byte("{}"), time.Time{}))
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
func (c *Client) call(ctx context.Context, op string, req, out any) error {
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
	msg, err := c.nc.RequestMsgWithContext(wctx, c.request(Prefix+op, data, deadline))
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
			return &trellis.Error{Code: trellis.CodeUnavailable, Message: "no trellis server answers on " + Prefix + op, Err: err}
		}
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) {
			return &trellis.Error{Code: trellis.CodeUnavailable, Message: "trellis server did not answer " + op + " in time", Err: err}
		}
		return &trellis.Error{Code: trellis.CodeUnavailable, Message: op + ": " + err.Error(), Err: err}
	}
	var body struct {
		Result json.RawMessage `json:"result"`
		Error  *replyError     `json:"error"`
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
func (c *Client) Ping(ctx context.Context) (*PingInfo, error) {
	var info PingInfo
	if err := c.call(ctx, OpPing, struct{}{}, &info); err != nil {
		return nil, err
	}
	return &info, nil
}

// Add implements trellis.QueueService.
func (c *Client) Add(ctx context.Context, req trellis.AddTaskRequest) (*trellis.Task, error) {
	return c.task(ctx, OpQueueAdd, req)
}

// AddMany implements trellis.QueueService.
func (c *Client) AddMany(ctx context.Context, req trellis.AddManyRequest) (*trellis.AddManyResult, error) {
	var out trellis.AddManyResult
	if err := c.call(ctx, OpQueueAddMany, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Next implements trellis.QueueService.
func (c *Client) Next(ctx context.Context, req trellis.NextRequest) (*trellis.Task, error) {
	return c.task(ctx, OpQueueNext, req)
}

// Done implements trellis.QueueService.
func (c *Client) Done(ctx context.Context, req trellis.DoneRequest) (*trellis.Task, error) {
	return c.task(ctx, OpQueueDone, req)
}

// Fail implements trellis.QueueService.
func (c *Client) Fail(ctx context.Context, req trellis.FailRequest) (*trellis.Task, error) {
	return c.task(ctx, OpQueueFail, req)
}

// Show implements trellis.QueueService.
func (c *Client) Show(ctx context.Context, taskID string) (*trellis.Task, error) {
	return c.task(ctx, OpQueueShow, showRequest{TaskID: taskID})
}

// List implements trellis.QueueService.
func (c *Client) List(ctx context.Context, req trellis.ListRequest) (*trellis.TaskList, error) {
	var out trellis.TaskList
	if err := c.call(ctx, OpQueueList, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Replay asks the server to rebuild its projections.
func (c *Client) Replay(ctx context.Context) (*handlers.ReplayResult, error) {
	var out handlers.ReplayResult
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	if err := c.call(ctx, OpReplay, struct{}{}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func (c *Client) task(ctx context.Context, op string, req any) (*trellis.Task, error) {
	var out *trellis.Task
	if err := c.call(ctx, op, req, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// Retry implements trellis.QueueAdmin.
func (c *Client) Retry(ctx context.Context, req trellis.RetryRequest) (*trellis.Task, error) {
	return c.task(ctx, OpRetry, req)
}

// Cancel implements trellis.QueueAdmin.
func (c *Client) Cancel(ctx context.Context, req trellis.CancelRequest) (*trellis.Task, error) {
	return c.task(ctx, OpCancel, req)
}

var _ trellis.QueueLeases = (*Client)(nil)

// Heartbeat implements trellis.QueueLeases.
func (c *Client) Heartbeat(ctx context.Context, req trellis.HeartbeatRequest) (*trellis.Task, error) {
	return c.task(ctx, OpQueueHeartbeat, req)
}

// ReleaseClaim implements trellis.QueueLeases.
func (c *Client) ReleaseClaim(ctx context.Context, req trellis.ReleaseRequest) (*trellis.Task, error) {
	return c.task(ctx, OpQueueReleaseClaim, req)
}

var _ trellis.ScheduleService = (*Client)(nil)

// AddSchedule implements trellis.ScheduleService.
func (c *Client) AddSchedule(ctx context.Context, req trellis.ScheduleRequest) (*trellis.Schedule, error) {
	return callInto[trellis.Schedule](ctx, c, OpScheduleAdd, req)
}

// Schedules implements trellis.ScheduleService.
func (c *Client) Schedules(ctx context.Context) ([]*trellis.Schedule, error) {
	var out []*trellis.Schedule
	if err := c.call(ctx, OpScheduleList, struct{}{}, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// RemoveSchedule implements trellis.ScheduleService.
func (c *Client) RemoveSchedule(ctx context.Context, req trellis.RemoveScheduleRequest) (*trellis.Schedule, error) {
	return callInto[trellis.Schedule](ctx, c, OpScheduleRemove, req)
}

// Control implements trellis.QueueAdmin.
func (c *Client) Control(ctx context.Context, req trellis.ControlRequest) (*trellis.QueueControls, error) {
	var out trellis.QueueControls
	if err := c.call(ctx, OpControl, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Controls implements trellis.QueueAdmin.
func (c *Client) Controls(ctx context.Context, queue string) (*trellis.QueueControls, error) {
	var out trellis.QueueControls
	if err := c.call(ctx, OpControls, controlsRequest{Queue: queue}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// callInto sends req to op and decodes the result into a new T.
func callInto[T any](ctx context.Context, c *Client, op string, req any) (*T, error) {
	var out T
	if err := c.call(ctx, op, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// VineNext implements trellis.VineService.
func (c *Client) VineNext(ctx context.Context, req trellis.VineFileRequest) (*trellis.VineFrontier, error) {
	return callInto[trellis.VineFrontier](ctx, c, OpVineNext, req)
}

// VineRead implements trellis.VineService.
func (c *Client) VineRead(ctx context.Context, req trellis.VineReadRequest) (*trellis.VineReadResult, error) {
	return callInto[trellis.VineReadResult](ctx, c, OpVineRead, req)
}

// VineWrite implements trellis.VineService.
func (c *Client) VineWrite(ctx context.Context, req trellis.VineWriteRequest) (*trellis.VineWriteResult, error) {
	return callInto[trellis.VineWriteResult](ctx, c, OpVineWrite, req)
}

// VineClaim implements trellis.VineService.
func (c *Client) VineClaim(ctx context.Context, req trellis.VineClaimRequest) (*trellis.VineClaimResult, error) {
	return callInto[trellis.VineClaimResult](ctx, c, OpVineClaim, req)
}

// VineExpand implements trellis.VineService.
func (c *Client) VineExpand(ctx context.Context, req trellis.VineExpandRequest) (*trellis.VineWriteResult, error) {
	return callInto[trellis.VineWriteResult](ctx, c, OpVineExpand, req)
}

// VineImport implements trellis.VineService.
func (c *Client) VineImport(ctx context.Context, req trellis.VineFileRequest) (*trellis.VineGraphInfo, error) {
	return callInto[trellis.VineGraphInfo](ctx, c, OpVineImport, req)
}

// VineExport implements trellis.VineService.
func (c *Client) VineExport(ctx context.Context, req trellis.VineExportRequest) (*trellis.VineExportResult, error) {
	return callInto[trellis.VineExportResult](ctx, c, OpVineExport, req)
}

// TaskCreate implements trellis.MemoryService.
func (c *Client) TaskCreate(ctx context.Context, req trellis.TaskCreateRequest) (*trellis.AgentTaskView, error) {
	return callInto[trellis.AgentTaskView](ctx, c, OpTaskCreate, req)
}

// TaskJoin implements trellis.MemoryService.
func (c *Client) TaskJoin(ctx context.Context, req trellis.TaskJoinRequest) (*trellis.TaskJoinResult, error) {
	return callInto[trellis.TaskJoinResult](ctx, c, OpTaskJoin, req)
}

// TaskObjective implements trellis.MemoryService.
func (c *Client) TaskObjective(ctx context.Context, req trellis.TaskObjectiveRequest) (*trellis.AgentTaskView, error) {
	return callInto[trellis.AgentTaskView](ctx, c, OpTaskObjective, req)
}

// TaskCompleteAgent implements trellis.MemoryService.
func (c *Client) TaskCompleteAgent(ctx context.Context, req trellis.TaskAgentRequest) (*trellis.ConsolidationReport, error) {
	return callInto[trellis.ConsolidationReport](ctx, c, OpTaskCompleteAgent, req)
}

// TaskComplete implements trellis.MemoryService.
func (c *Client) TaskComplete(ctx context.Context, req trellis.TaskCompleteRequest) (*trellis.ConsolidationReport, error) {
	return callInto[trellis.ConsolidationReport](ctx, c, OpTaskComplete, req)
}

// TaskShow implements trellis.MemoryService.
func (c *Client) TaskShow(ctx context.Context, task string) (*trellis.AgentTaskView, error) {
	return callInto[trellis.AgentTaskView](ctx, c, OpTaskShow, taskRequest{Task: task})
}

// TaskList implements trellis.MemoryService.
func (c *Client) TaskList(ctx context.Context, req trellis.TaskListRequest) ([]trellis.AgentTaskView, error) {
	out, err := callInto[[]trellis.AgentTaskView](ctx, c, OpTaskList, req)
	if err != nil {
		return nil, err
	}
	return *out, nil
}

// TaskContext implements trellis.MemoryService.
func (c *Client) TaskContext(ctx context.Context, task string) (*trellis.TaskContextView, error) {
	return callInto[trellis.TaskContextView](ctx, c, OpTaskContext, taskRequest{Task: task})
}

// Observe implements trellis.MemoryService.
func (c *Client) Observe(ctx context.Context, req trellis.ObserveRequest) (*trellis.ObservationView, error) {
	return callInto[trellis.ObservationView](ctx, c, OpObserve, req)
}

// Consolidate implements trellis.MemoryService.
func (c *Client) Consolidate(ctx context.Context, req trellis.ConsolidateRequest) (*trellis.ConsolidationReport, error) {
	return callInto[trellis.ConsolidationReport](ctx, c, OpConsolidate, req)
}

// Facts implements trellis.MemoryService.
func (c *Client) Facts(ctx context.Context, req trellis.FactsRequest) ([]trellis.FactView, error) {
	out, err := callInto[[]trellis.FactView](ctx, c, OpFacts, req)
	if err != nil {
		return nil, err
	}
	return *out, nil
}

// History implements trellis.MemoryService.
func (c *Client) History(ctx context.Context, req trellis.HistoryRequest) ([]trellis.ConsolidationReport, error) {
	out, err := callInto[[]trellis.ConsolidationReport](ctx, c, OpHistory, req)
	if err != nil {
		return nil, err
	}
	return *out, nil
}

// Search implements trellis.CodeService. It waits longer than other
// calls: right after a large ingest the server waits for its index.
func (c *Client) Search(ctx context.Context, req trellis.SearchRequest) (*trellis.SearchResult, error) {
	ctx, cancel := context.WithTimeout(ctx, 150*time.Second)
	defer cancel()
	return callInto[trellis.SearchResult](ctx, c, OpSearch, req)
}

// Explain implements trellis.CodeService. It waits as long as the chat
// model may take (the server's own limit is 5 minutes).
func (c *Client) Explain(ctx context.Context, req trellis.ExplainRequest) (*trellis.ExplainResult, error) {
	ctx, cancel := context.WithTimeout(ctx, 310*time.Second)
	defer cancel()
	return callInto[trellis.ExplainResult](ctx, c, OpExplain, req)
}

// Chunk implements trellis.CodeService.
func (c *Client) Chunk(ctx context.Context, chunkID string) (*trellis.ChunkHit, error) {
	return callInto[trellis.ChunkHit](ctx, c, OpChunk, chunkRequest{ChunkID: chunkID})
}
