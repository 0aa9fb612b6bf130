package handlers

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/agentmemory"
	"github.com/trellis/trellis/audit"
	"github.com/trellis/trellis/codememory"
	"github.com/trellis/trellis/command"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/projections"
	"github.com/trellis/trellis/taskqueue"
	"github.com/trellis/trellis/vinegraph"
	"github.com/trellis/trellis/workflow"
)

// ServiceConfig configures a Service.
type ServiceConfig struct {
	// DataDir holds the projections' files: <data>/projections/ and
	// <data>/checkpoints/, and the audit anchors (<data>/audit/).
	DataDir string
	// AnchorInterval > 0 records the log's heads as a keyed anchor in
	// DataDir at start, every interval and at close (see
	// audit.RecordAnchor; a server uses audit.AnchorInterval). Zero: never (a replay's directory).
	AnchorInterval time.Duration
	// Queue configures the queue handler.
	Queue taskqueue.Config
	// Vine configures the VINE domain (workspace roots); its Dir,
	// ReadTimeout and Logger are set from this configuration.
	Vine vinegraph.Config
	// ReadTimeout bounds how long a read waits for a projection to catch up
	// with the log (default 10 s).
	ReadTimeout time.Duration
	// SearchTimeout bounds how long a code search waits for the search
	// index to catch up (default 2 min: indexing a large ingest takes a
	// while).
	SearchTimeout time.Duration
	// Logger receives projection warnings (default slog.Default()).
	Logger *slog.Logger
	// Metrics, when set, receives the queue and workflow metrics derived
	// from the log (events since start, latency histograms, board gauges,
	// runs in flight).
	Metrics prometheus.Registerer
	// Code configures code memory's hybrid search and explain.
	// Its Dir, SearchTimeout and Logger are set from this configuration.
	Code codememory.Config
	// NoReactor leaves the ends of tasks with dependants and the ticks of
	// schedules to other servers (see taskqueue.Reactor); by default every
	// service takes its share.
	NoReactor bool
}

// Service is Trellis's API: the command handlers plus the projections
// behind reads. It implements trellis.QueueService; every transport (CLI,
// HTTP, MCP, NATS) calls it.
type Service struct {
	store  *events.Store
	cfg    ServiceConfig
	queue  *taskqueue.Handler
	vine   *vinegraph.Service
	memory *agentmemory.Service
	code   *codememory.Service
	// search is code memory's search index (RebuildAt closes it).
	search      *projections.Search
	board       *projections.Board
	checkpoints *projections.Checkpoints
	runners     []*projections.Runner
	boardRunner *projections.Runner
	metrics     *projections.Runner
	wfMetrics   *projections.Runner
	reactor     *taskqueue.Reactor
	workflows   *workflow.Engine
	// activity is the recent-activity fold, started by the first read
	// that needs it (see Activity).
	activity activityFold
	// audit answers audit queries and as-of reads, and records the
	// log's anchors.
	audit *audit.Service
}

var _ trellis.Domains = (*Service)(nil)

// NewService builds the service; Start runs its projections.
func NewService(store *events.Store, cfg ServiceConfig) *Service {
	if cfg.ReadTimeout <= 0 {
		cfg.ReadTimeout = 10 * time.Second
	}
	if cfg.SearchTimeout <= 0 {
		cfg.SearchTimeout = 2 * time.Minute
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	projDir := filepath.Join(cfg.DataDir, "projections")
	s := &Service{
		store:       store,
		cfg:         cfg,
		queue:       taskqueue.New(store, cfg.Queue),
		board:       projections.NewBoard(projDir),
		checkpoints: projections.NewCheckpoints(filepath.Join(cfg.DataDir, "checkpoints"), projDir),
	}
	s.audit = audit.New(store, audit.Config{DataDir: cfg.DataDir, AnchorInterval: cfg.AnchorInterval, Logger: cfg.Logger})
	vcfg := cfg.Vine
	vcfg.Dir, vcfg.ReadTimeout, vcfg.Logger = projDir, cfg.ReadTimeout, cfg.Logger
	s.vine = vinegraph.New(store, vcfg)
	s.workflows = workflow.New(store, workflow.Config{Logger: cfg.Logger, Queue: cfg.Queue})
	s.boardRunner = projections.NewRunner(store, s.board, cfg.Logger)
	s.memory = agentmemory.New(store, agentmemory.Config{Dir: projDir, ReadTimeout: cfg.ReadTimeout, Logger: cfg.Logger})
	s.runners = []*projections.Runner{s.boardRunner, projections.NewRunner(store, s.checkpoints, cfg.Logger), s.vine.Runner()}
	s.runners = append(s.runners, s.memory.Runners()...)
	ccfg := cfg.Code
	ccfg.Dir, ccfg.SearchTimeout, ccfg.Logger = filepath.Join(cfg.DataDir, "index"), cfg.SearchTimeout, cfg.Logger
	s.code = codememory.New(store, ccfg)
	s.search = s.code.SearchIndex()
	s.runners = append(s.runners, s.code.Runners()...)
	return s
}

// Workflows returns the durable workflow API (start runs, signals,
// cancels): runs are advanced by the pools hosting their workflows.
func (s *Service) Workflows() *workflow.Engine { return s.workflows }

// Start resumes every projection after its last applied sequence.
func (s *Service) Start(ctx context.Context) error {
	for _, r := range s.runners {
		if err := r.Start(ctx); err != nil {
			return err
		}
	}
	if s.cfg.Metrics != nil {
		last, err := s.store.LastSeq(ctx, events.StreamQueue)
		if err != nil {
			return err
		}
		s.metrics = projections.NewRunner(s.store, projections.NewQueueMetrics(s.board, last, s.cfg.Metrics), s.cfg.Logger)
		if err := s.metrics.Start(ctx); err != nil {
			return err
		}
		wlast, err := s.store.LastSeq(ctx, events.StreamWorkflows)
		if err != nil {
			return err
		}
		s.wfMetrics = projections.NewRunner(s.store, workflow.NewMetrics(wlast, s.cfg.Metrics), s.cfg.Logger)
		if err := s.wfMetrics.Start(ctx); err != nil {
			return err
		}
	}
	s.code.StartEmbedding()
	s.audit.Start()
	if !s.cfg.NoReactor {
		r, err := s.queue.StartReactor(ctx, taskqueue.ReactorConfig{Logger: s.cfg.Logger})
		if err != nil {
			return err
		}
		s.reactor = r
	}
	return nil
}

// Close stops the projections and saves their state.
func (s *Service) Close() error {
	var first error
	s.code.StopEmbedding()
	s.audit.Close()
	if s.reactor != nil {
		s.reactor.Stop()
	}
	if s.metrics != nil {
		_ = s.metrics.Stop()
	}
	if s.wfMetrics != nil {
		_ = s.wfMetrics.Stop()
	}
	s.activity.stop()
	s.vine.Close()
	for _, r := range s.runners {
		if err := r.Stop(); err != nil && first == nil {
			first = err
		}
	}
	if err := s.board.Close(); err != nil && first == nil {
		first = err
	}
	if err := s.code.Close(); err != nil && first == nil {
		first = err
	}
	return first
}

// Store returns the event store.
func (s *Service) Store() *events.Store { return s.store }

// QueueHandler returns the queue command handler.
func (s *Service) QueueHandler() *taskqueue.Handler { return s.queue }

// Board returns the queue board projection.
func (s *Service) Board() *projections.Board { return s.board }

// Checkpoints returns the checkpoint projection.
func (s *Service) Checkpoints() *projections.Checkpoints { return s.checkpoints }

// Add implements trellis.QueueService.
func (s *Service) Add(ctx context.Context, req trellis.AddTaskRequest) (*trellis.Task, error) {
	return s.queue.Add(ctx, req)
}

// AddMany implements trellis.QueueService.
func (s *Service) AddMany(ctx context.Context, req trellis.AddManyRequest) (*trellis.AddManyResult, error) {
	return s.queue.AddMany(ctx, req)
}

// Next implements trellis.QueueService.
func (s *Service) Next(ctx context.Context, req trellis.NextRequest) (*trellis.Task, error) {
	return s.queue.Next(ctx, req)
}

// Done implements trellis.QueueService.
func (s *Service) Done(ctx context.Context, req trellis.DoneRequest) (*trellis.Task, error) {
	return s.queue.Done(ctx, req)
}

// Fail implements trellis.QueueService.
func (s *Service) Fail(ctx context.Context, req trellis.FailRequest) (*trellis.Task, error) {
	return s.queue.Fail(ctx, req)
}

// Show implements trellis.QueueService: the task folded from the log.
func (s *Service) Show(ctx context.Context, taskID string) (*trellis.Task, error) {
	return s.queue.Show(ctx, taskID)
}

// List implements trellis.QueueService. It first waits until the board has
// applied everything the log held when the call began, so a list after an
// add always shows the task.
func (s *Service) List(ctx context.Context, req trellis.ListRequest) (*trellis.TaskList, error) {
	if err := req.Normalize(); err != nil {
		return nil, err
	}
	if err := s.catchUp(ctx, s.boardRunner); err != nil {
		return nil, err
	}
	l, err := s.board.List(req)
	if errors.Is(err, projections.ErrClosed) {
		return nil, trellis.Errorf(trellis.CodeUnavailable, "list: the board is being rebuilt; try again: %w", err)
	}
	if err != nil {
		return nil, trellis.Errorf(trellis.CodeInternal, "list: %w", err)
	}
	return l, nil
}

func (s *Service) catchUp(ctx context.Context, r *projections.Runner) error {
	return s.waitProjection(ctx, r, 0, s.cfg.ReadTimeout)
}

// waitProjection waits, up to timeout, until r has applied sequence seq
// (0: everything its stream holds now).
func (s *Service) waitProjection(ctx context.Context, r *projections.Runner, seq uint64, timeout time.Duration) error {
	return command.StoreError("projection "+r.Projection().Name()+" catch-up", r.Await(ctx, seq, timeout))
}

// Audit returns every event of the aggregate with the given id, in order.
func (s *Service) Audit(ctx context.Context, id string) ([]events.Recorded, error) {
	return audit.AggregateEvents(ctx, s.store, id)
}

// ReplayResult reports a rebuild.
type ReplayResult struct {
	Projections []ReplayedProjection `json:"projections"`
	Millis      int64                `json:"millis"`
}

// ReplayedProjection is one rebuilt projection.
type ReplayedProjection struct {
	Name    string `json:"name"`
	Stream  string `json:"stream"`
	LastSeq uint64 `json:"last_seq"`
}

// Replay drops every projection and rebuilds it from the log.
func (s *Service) Replay(ctx context.Context) (*ReplayResult, error) {
	start := time.Now()
	res := &ReplayResult{Projections: []ReplayedProjection{}}
	for _, r := range s.runners {
		if err := r.Rebuild(ctx); err != nil {
			return nil, command.StoreError("replay "+r.Projection().Name(), err)
		}
		res.Projections = append(res.Projections, ReplayedProjection{Name: r.Projection().Name(), Stream: r.Projection().Stream(), LastSeq: r.Applied()})
	}
	res.Millis = time.Since(start).Milliseconds()
	return res, nil
}

// ProjectionNames returns the names of the projections Replay drops and
// rebuilds, in the order it rebuilds them. It needs no running service.
func (s *Service) ProjectionNames() []string {
	names := make([]string, 0, len(s.runners))
	for _, r := range s.runners {
		names = append(names, r.Projection().Name())
	}
	return names
}

// CatchUp waits until every projection has applied the whole log.
func (s *Service) CatchUp(ctx context.Context) error {
	for _, r := range s.runners {
		if err := s.catchUp(ctx, r); err != nil {
			return err
		}
	}
	return nil
}

var _ trellis.QueueAdmin = (*Service)(nil)

// Retry implements trellis.QueueAdmin.
func (s *Service) Retry(ctx context.Context, req trellis.RetryRequest) (*trellis.Task, error) {
	actor := req.Actor
	if actor == "" {
		actor = "operator"
	}
	if err := trellis.ValidateWorkerID(actor); err != nil {
		return nil, trellis.FieldError("actor", "%v", err)
	}
	return s.queue.Retry(ctx, req.TaskID, actor)
}

// Cancel implements trellis.QueueAdmin.
func (s *Service) Cancel(ctx context.Context, req trellis.CancelRequest) (*trellis.Task, error) {
	return s.queue.Cancel(ctx, req)
}

var _ trellis.QueueLeases = (*Service)(nil)

// Heartbeat implements trellis.QueueLeases.
func (s *Service) Heartbeat(ctx context.Context, req trellis.HeartbeatRequest) (*trellis.Task, error) {
	return s.queue.Heartbeat(ctx, req)
}

// ReleaseClaim implements trellis.QueueLeases.
func (s *Service) ReleaseClaim(ctx context.Context, req trellis.ReleaseRequest) (*trellis.Task, error) {
	return s.queue.ReleaseClaim(ctx, req)
}

var _ trellis.ScheduleService = (*Service)(nil)

// AddSchedule implements trellis.ScheduleService.
func (s *Service) AddSchedule(ctx context.Context, req trellis.ScheduleRequest) (*trellis.Schedule, error) {
	return s.queue.AddSchedule(ctx, req)
}

// Schedules implements trellis.ScheduleService.
func (s *Service) Schedules(ctx context.Context) ([]*trellis.Schedule, error) {
	return s.queue.Schedules(ctx)
}

// RemoveSchedule implements trellis.ScheduleService.
func (s *Service) RemoveSchedule(ctx context.Context, req trellis.RemoveScheduleRequest) (*trellis.Schedule, error) {
	return s.queue.RemoveSchedule(ctx, req)
}

// Control implements trellis.QueueAdmin.
func (s *Service) Control(ctx context.Context, req trellis.ControlRequest) (*trellis.QueueControls, error) {
	return s.queue.Control(ctx, req)
}

// Controls implements trellis.QueueAdmin.
func (s *Service) Controls(ctx context.Context, queue string) (*trellis.QueueControls, error) {
	c, _, err := s.queue.Controls(ctx, queue)
	return c, err
}
