package workers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/taskqueue"
)

// Config configures a Pool. Zero values take the documented defaults.
type Config struct {
	// Queue is the queue the pool works (default "default").
	Queue string
	// Worker identifies this pool in claims and the history (default
	// "<hostname>-<pid>"); each task runs as "<Worker>/<slot>".
	Worker string
	// Concurrency is how many handlers run at once (default 1).
	Concurrency int
	// Lease is how long a claim survives without a heartbeat: the queue's
	// lease (the claim consumer's AckWait), shared by every pool of the
	// queue. 0 keeps the queue's lease (30 s for a new queue); another
	// value becomes the queue's lease for every pool (an event: a shorter
	// lease is switched to only after every pool heartbeats for it; see
	// taskqueue.Handler.SetLease).
	Lease time.Duration
	// Heartbeat is how often a running task's lease is extended at most
	// (default: a third of the queue's current lease, followed as it
	// changes).
	Heartbeat time.Duration
	// TaskTimeout bounds one attempt's run time for tasks without a
	// timeout of their own (a task's own timeout wins when shorter; 0:
	// none). A handler running past it is cancelled and the attempt fails
	// with a timeout error (ErrTimeout), retried per the task's max
	// attempts.
	TaskTimeout time.Duration
	// Grace is how long a draining pool lets running handlers finish before
	// cancelling them and releasing their tasks (default 30 s).
	Grace time.Duration
	// FetchWait is how long one fetch waits for a dispatch (default 1 s).
	FetchWait time.Duration
	// ClaimWindow is how long a task the pool holds may run before its
	// claim is recorded on its own (default DefaultClaimWindow, at most a
	// quarter of the lease): a task whose handler ends sooner is recorded
	// with one event, its outcome carrying its claim (see
	// taskqueue.Hold). Negative: every claim is recorded before its
	// handler starts. A pool working through a Source (remote) always
	// records claims first.
	ClaimWindow time.Duration
	// Logger receives the pool's logs (default slog.Default()): one line
	// per claim and per outcome of a task (task claimed, task done, task
	// failed, task failed, retry scheduled, task dead, task released),
	// each with the task id, the attempt and the claimant ("worker").
	Logger *slog.Logger
	// Metrics records the pool's metrics (default: unregistered metrics).
	Metrics *Metrics
}

// DefaultClaimWindow is Config.ClaimWindow's default.
const DefaultClaimWindow = 50 * time.Millisecond

// outcomeBacklog is how many finished runs may wait for their outcomes to
// be recorded, at least: the more wait, the larger the group commits they
// share (each still holds its dispatch, unacknowledged, until recorded).
// Measured with trellis bench workers at 8 handlers: 256 gave about 1.17x
// the tasks/s of 64; 1024 no more than 256.
const outcomeBacklog = 256

func (c Config) withDefaults() Config {
	if c.Queue == "" {
		c.Queue = trellis.DefaultQueue
	}
	if c.Worker == "" {
		host, _ := os.Hostname()
		if host == "" {
			host = "worker"
		}
		c.Worker = host + "-" + strconv.Itoa(os.Getpid())
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 1
	}
	if c.Lease < 0 {
		c.Lease = 0
	}
	if c.Heartbeat < 0 {
		c.Heartbeat = 0
	}
	if c.Grace <= 0 {
		c.Grace = 30 * time.Second
	}
	if c.FetchWait <= 0 {
		c.FetchWait = time.Second
	}
	if c.ClaimWindow == 0 {
		c.ClaimWindow = DefaultClaimWindow
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Metrics == nil {
		c.Metrics = NewMetrics(nil)
	}
	return c
}

// Pool runs a Handler over one queue with a fixed concurrency. It works
// either beside the queue handler (New: a trusted Trellis process that
// claims from the queue's consumers and appends the events itself) or
// through a Trellis server (NewWithSource: a remote worker with a token,
// for which the server claims and appends).
type Pool struct {
	queue   *taskqueue.Handler // the local path; nil for a remote Source
	src     Source             // the remote path
	handler Handler
	cfg     Config
	log     *slog.Logger
	// ackWait is the queue consumer's current lease (AckWait) in
	// nanoseconds: every pool of a queue shares it, and another pool may
	// change it, so heartbeats follow it rather than cfg.Lease.
	ackWait atomic.Int64
	// recording bounds the outcomes being recorded in the background.
	recording chan struct{}
	// givingBack counts the dispatches waiting for their reads to end
	// before they are given back (see giveBack).
	givingBack sync.WaitGroup
}

// New returns a pool working the queue handler in this process; Run
// starts it.
func New(queue *taskqueue.Handler, h Handler, cfg Config) (*Pool, error) {
	p, err := newPool(h, cfg)
	if err == nil {
		p.queue = queue
	}
	return p, err
}

// NewWithSource returns a pool claiming from src (a remote server's API,
// say); Run starts it. Such a pool follows the queue's lease as the server
// tells it with each claim and heartbeat; it does not see cancellations
// of its running tasks before they end.
func NewWithSource(src Source, h Handler, cfg Config) (*Pool, error) {
	p, err := newPool(h, cfg)
	if err == nil {
		p.src = src
	}
	return p, err
}

func newPool(h Handler, cfg Config) (*Pool, error) {
	cfg = cfg.withDefaults()
	if err := trellis.ValidateQueueName(cfg.Queue); err != nil {
		return nil, err
	}
	if err := trellis.ValidateWorkerID(cfg.Worker + "/" + strconv.Itoa(cfg.Concurrency)); err != nil {
		return nil, err
	}
	if cfg.Lease > 0 && cfg.Lease < time.Second {
		return nil, trellis.FieldError("lease", "must be at least 1s, got %s", cfg.Lease)
	}
	if cfg.Lease > 0 && cfg.Heartbeat >= cfg.Lease {
		return nil, trellis.FieldError("heartbeat", "must be shorter than the lease (%s), got %s", cfg.Lease, cfg.Heartbeat)
	}
	return &Pool{handler: h, cfg: cfg, log: cfg.Logger.With("queue", cfg.Queue, "pool", cfg.Worker),
		recording: make(chan struct{}, max(outcomeBacklog, 4*cfg.Concurrency))}, nil
}

// recorder records a run's outcome: the queue handler, or a Source.
type recorder interface {
	Done(ctx context.Context, req trellis.DoneRequest) (*trellis.Task, error)
	Fail(ctx context.Context, req trellis.FailRequest) (*trellis.Task, error)
	Release(ctx context.Context, taskID, worker, reason string) (*trellis.Task, error)
}

func (p *Pool) recorder() recorder {
	if p.queue != nil {
		return p.queue
	}
	return p.src
}

// lease is a running task's claim: extended by heartbeats, ended by the
// acknowledgement once the outcome is recorded (a dispatch message held
// unacknowledged, or a remote claim).
type lease interface {
	InProgress() error
	Ack() error
}

// remoteLease is a Source's claim as a lease. Each heartbeat tells the
// queue's current lease, which the pool follows.
type remoteLease struct {
	c *Claim
	p *Pool
}

func (l remoteLease) InProgress() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	lease, err := l.c.Heartbeat(ctx)
	l.p.followLease(lease)
	return err
}

// followLease makes lease (when known) the lease a remote pool heartbeats
// for.
func (p *Pool) followLease(lease time.Duration) {
	if lease > 0 {
		p.ackWait.Store(int64(lease))
	}
}

func (l remoteLease) Ack() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return l.c.Ack(ctx)
}

// Run claims and runs tasks until ctx ends, then drains: no new claims,
// running handlers get Grace to finish, the rest are cancelled and their
// tasks released back to the queue. It returns after the drain.
//
// One fetcher pulls as many dispatches as the pool has free slots in one
// round trip; each is claimed and run in its own slot, so the claims of a
// fetch (and the finishes of handlers ending together) reach the store at
// the same time and share its group commits.
func (p *Pool) Run(ctx context.Context) error {
	if p.queue == nil {
		return p.runRemote(ctx)
	}
	var cons jetstream.Consumer
	err := p.setup(ctx, "claim consumer", func(setupCtx context.Context) (err error) {
		cons, err = p.queue.EnsureConsumer(setupCtx, p.cfg.Queue, p.cfg.Lease)
		return err
	})
	if err != nil {
		return fmt.Errorf("worker pool on queue %s: %w", p.cfg.Queue, err)
	}
	p.ackWait.Store(int64(cons.CachedInfo().Config.AckWait))
	var lanes []jetstream.Consumer
	err = p.setup(ctx, "priority lanes", func(setupCtx context.Context) (err error) {
		lanes, err = p.queue.Lanes(setupCtx, p.cfg.Queue)
		return err
	})
	if err != nil {
		return fmt.Errorf("worker pool on queue %s: %w", p.cfg.Queue, err)
	}
	watchCtx, stopWatch := context.WithCancel(context.Background())
	defer stopWatch()
	go p.watchLease(watchCtx, cons)
	// Handlers run under work, which outlives ctx by the grace period.
	work, cancelWork := context.WithCancel(context.Background())
	defer cancelWork()
	var wg sync.WaitGroup
	p.fetch(ctx, work, lanes, &wg)
	p.drain(&wg, cancelWork)
	return nil
}

// setup runs one step of a pool's start (30 s per attempt) until it
// succeeds: a server that is down or restarting when the pool starts (or
// does not answer in time) is waited for, with a warning per attempt, as
// a running pool waits for it; any other error, and ctx ending, stop it.
func (p *Pool) setup(ctx context.Context, what string, step func(context.Context) error) error {
	backoff := 500 * time.Millisecond
	for attempt := 1; ; attempt++ {
		setupCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := step(setupCtx)
		cancel()
		unavailable := trellis.ErrorCode(err) == trellis.CodeUnavailable || errors.Is(err, context.DeadlineExceeded)
		if err == nil || !unavailable || ctx.Err() != nil {
			return err
		}
		p.log.Warn("pool start: the server does not answer yet; trying again", "step", what, "attempt", attempt, "err", err)
		sleepCtx(ctx, backoff)
		backoff = min(2*backoff, 5*time.Second)
	}
}

// drain waits for the running handlers (Grace at most, then cancels them:
// their tasks are released) and the outcomes being recorded.
func (p *Pool) drain(wg *sync.WaitGroup, cancelWork func()) {
	p.log.Info("draining", "grace", p.cfg.Grace)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(p.cfg.Grace):
		p.log.Warn("grace period over: cancelling running handlers and releasing their tasks")
		cancelWork()
		<-done
	}
}

// runRemote runs the pool through a Source: each slot claims a task with a
// lease (the server claims for it), runs it, and claims the next.
func (p *Pool) runRemote(ctx context.Context) error {
	var lease time.Duration
	err := p.setup(ctx, "prepare", func(setupCtx context.Context) (err error) {
		lease, err = p.src.Prepare(setupCtx, p.cfg.Queue, p.cfg.Lease)
		return err
	})
	if err != nil {
		return fmt.Errorf("worker pool on queue %s: %w", p.cfg.Queue, err)
	}
	p.followLease(lease)
	// A refused credential (a revoked token) stops the pool: nothing it
	// asks will be answered again.
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	work, cancelWork := context.WithCancel(context.Background())
	defer cancelWork()
	var wg sync.WaitGroup
	for slot := 0; slot < p.cfg.Concurrency; slot++ {
		wg.Add(1)
		go func(worker string) {
			defer wg.Done()
			p.remoteSlot(ctx, work, worker, &wg, stop)
		}(p.cfg.Worker + "/" + strconv.Itoa(slot))
	}
	<-ctx.Done()
	p.drain(&wg, cancelWork)
	if err := context.Cause(ctx); trellis.ErrorCode(err) == trellis.CodeUnauthorized {
		return fmt.Errorf("worker pool on queue %s: %w", p.cfg.Queue, err)
	}
	return nil
}

// remoteSlot is one slot of a remote pool: claim, run, until ctx ends; a
// claim refused as unauthorized stops the pool (stop).
func (p *Pool) remoteSlot(ctx, work context.Context, worker string, wg *sync.WaitGroup, stop context.CancelCauseFunc) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		start := time.Now()
		claim, err := p.src.Claim(ctx, p.cfg.Queue, worker, p.cfg.FetchWait)
		var claimErr *ClaimError
		if errors.As(err, &claimErr) {
			p.log.Warn("claim", "worker", worker, "err", err)
			continue
		}
		if trellis.ErrorCode(err) == trellis.CodeUnauthorized {
			p.log.Error("claim refused: the pool stops", "worker", worker, "err", err)
			stop(err)
			return
		}
		if err != nil {
			// NATS unreachable, the server restarting: keep trying until
			// it is back.
			p.log.Warn("claim", "worker", worker, "err", err)
			sleepCtx(ctx, backoff)
			backoff = min(2*backoff, 5*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		if claim != nil {
			p.followLease(claim.Lease)
		}
		if claim != nil && claim.Task != nil {
			p.runClaimed(work, remoteLease{claim, p}, claim.Task, nil, worker, start, wg)
		}
	}
}

// watchLease keeps p.ackWait equal to the lease the pool must heartbeat
// for: the claim consumer's AckWait, or a shorter lease the queue is
// switching to (any pool of the queue may change it). It reads them every
// taskqueue.LeaseWatchEvery at most.
func (p *Pool) watchLease(ctx context.Context, cons jetstream.Consumer) {
	for {
		sleepCtx(ctx, min(p.lease()/3, taskqueue.LeaseWatchEvery))
		if ctx.Err() != nil {
			return
		}
		ictx, cancel := context.WithTimeout(ctx, 5*time.Second)
		lease := time.Duration(0)
		if info, err := cons.Info(ictx); err == nil {
			lease = info.Config.AckWait
		}
		if c, _, err := p.queue.Controls(ictx, p.cfg.Queue); err == nil {
			if l := c.HeartbeatLease(); l > 0 && (lease == 0 || l < lease) {
				lease = l
			}
		}
		cancel()
		if lease > 0 {
			p.ackWait.Store(int64(lease))
		}
	}
}

// lease returns the lease the pool heartbeats for.
func (p *Pool) lease() time.Duration {
	if d := time.Duration(p.ackWait.Load()); d > 0 {
		return d
	}
	if p.cfg.Lease > 0 {
		return p.cfg.Lease
	}
	return 30 * time.Second
}

// heartbeatEvery is how often a running task's lease is extended: three
// times per current lease (or the pool's Heartbeat, if more often).
func (p *Pool) heartbeatEvery() time.Duration {
	every := p.lease() / 3
	if p.cfg.Heartbeat > 0 {
		every = min(every, p.cfg.Heartbeat)
	}
	return max(every, 10*time.Millisecond)
}

// handle claims the dispatch and, if it yields a task, runs it to its end.
// Each claim and each outcome (done, failed, retry scheduled, dead,
// released) is logged on one line with the task id, the attempt and the
// claimant.
//
// The claim may stay unrecorded while the handler runs (see
// taskqueue.Hold): if the handler ends within the claim window, its
// outcome carries the claim (one event); else the claim is recorded when
// the window passes.
//
// The slot is free again as soon as the handler returns: recording the
// outcome (a checked append, then the acknowledgement that ends the lease)
// runs in the background, as River's completer does, so a slot's next
// claim does not wait for its last finish, and outcomes finishing together
// share group commits; the lease is heartbeated until the outcome is
// recorded. At most max(256, 4 × Concurrency) outcomes wait to be recorded
// at once (a slot waits for room), and a drain waits for all of them.
func (p *Pool) handle(ctx context.Context, f fetched, worker string, wg *sync.WaitGroup) {
	msg, start := f.msg, time.Now()
	var task *trellis.Task
	var hold *taskqueue.Hold
	var err error
	if p.cfg.ClaimWindow > 0 {
		var r *taskqueue.DispatchRead
		if f.read != nil {
			<-f.read.done
			r = f.read.r
		} else {
			r = p.queue.ReadDispatch(ctx, msg)
		}
		// A read of the log answered more than half the window ago is
		// made again: a task cancelled before it never starts, and the
		// handler keeps about half the window to end in.
		if hold, err = p.queue.HoldRead(ctx, r, worker, p.claimWindowLength()/2); hold != nil {
			task = hold.Task
		}
	} else {
		task, err = p.queue.ClaimDispatched(ctx, msg, worker, true)
	}
	if err != nil {
		p.log.Warn("claim", "worker", worker, "err", err)
		if p.current(f.at) {
			_ = msg.NakWithDelay(taskqueue.RetryClaimAfter) // offered again soon
		} // else: see giveBack
		return
	}
	if task == nil {
		return
	}
	p.runClaimed(ctx, msg, task, hold, worker, start, wg)
}

// runClaimed runs a claimed task with its lease (see handle). hold is the
// local path's claim when it may be unrecorded (nil for claims recorded
// first, and for a remote Source's).
func (p *Pool) runClaimed(ctx context.Context, msg lease, task *trellis.Task, hold *taskqueue.Hold, worker string, start time.Time, wg *sync.WaitGroup) {
	log := p.log.With("task", task.TaskID, "attempt", task.Attempts, "worker", worker)
	log.Info("task claimed", "max_attempts", task.MaxAttempts)
	m, q := p.cfg.Metrics, p.cfg.Queue
	m.Claimed.WithLabelValues(q).Inc()
	m.ClaimLatency.WithLabelValues(q).Observe(time.Since(start).Seconds())
	m.InFlight.WithLabelValues(q).Inc()

	hbCtx, stopHB := context.WithCancel(context.Background())
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	timeout := p.taskTimeout(task)
	if timeout > 0 {
		var stopTimer context.CancelFunc
		runCtx, stopTimer = context.WithTimeoutCause(runCtx, timeout, ErrTimeout)
		defer stopTimer()
	}
	var cancelled atomic.Pointer[string]
	go p.heartbeat(hbCtx, msg, task.TaskID, log, func(reason string) {
		cancelled.Store(&reason)
		stopRun()
	})
	stopWindow := p.claimWindow(hold, log)
	progress := NewProgress(task.Budget)
	runStart := time.Now()
	cp, herr := p.run(runCtx, task, progress)
	took := time.Since(runStart)
	if timeout > 0 && errors.Is(context.Cause(runCtx), ErrTimeout) && ctx.Err() == nil && cancelled.Load() == nil {
		// Whatever the handler returned once cancelled, the attempt timed out.
		herr = fmt.Errorf("%w: the handler ran past the task's timeout of %s", ErrTimeout, timeout)
		log.Warn("task timed out: handler cancelled", "timeout", timeout)
	}
	stopWindow()
	m.HandlerDuration.WithLabelValues(q).Observe(took.Seconds())
	p.recording <- struct{}{}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer func() { <-p.recording }()
		defer m.InFlight.WithLabelValues(q).Dec()
		defer stopHB()
		p.record(ctx, msg, task, hold, worker, cp, herr, progress.Usage(), cancelled.Load(), log.With("took", took.Round(time.Millisecond)))
	}()
}

// claimWindow records a held claim once the claim window passes with the
// handler still running; the returned function ends the window (the
// handler returned: its outcome will carry the claim).
func (p *Pool) claimWindow(hold *taskqueue.Hold, log *slog.Logger) (stop func()) {
	if hold == nil || hold.Recorded() {
		return func() {}
	}
	window := p.claimWindowLength()
	if !hold.ReadAt.IsZero() {
		// The window counts from the read that showed the task unchanged.
		window = max(window-time.Since(hold.ReadAt), 0)
	}
	t := time.AfterFunc(window, func() {
		// Bounded by a quarter of the lease: a write given up on may
		// still be stored later (resent on a reconnect, or by a store
		// that stalled), and the outcome then finds the claim as its own.
		ctx, cancel := context.WithTimeout(context.Background(), max(min(30*time.Second, p.lease()/4), time.Second))
		defer cancel()
		if err := p.queue.RecordHold(ctx, hold); err != nil {
			// Recorded with the outcome instead, or refused there too
			// when the task changed meanwhile.
			log.Warn("claim not recorded after its window", "err", err)
		}
	})
	return func() { t.Stop() }
}

// claimWindowLength is how long a held claim may stay unrecorded: the
// claim window, at most a quarter of the lease.
func (p *Pool) claimWindowLength() time.Duration {
	return min(p.cfg.ClaimWindow, p.lease()/4)
}

// outcomeAttempt bounds one attempt to record an outcome (see record).
const outcomeAttempt = 10 * time.Second

// record records the outcome of one run (see handle), or its cancellation
// when the task was cancelled while it ran, and ends its lease.
//
// An outcome that could not be recorded because the server did not
// answer (restarting, unreachable, a store that stalls) is kept and
// recorded again, with backoff, until it is recorded or refused: the
// lease is heartbeated meanwhile, so once the server answers again the
// outcome is recorded while the lease holds and the task does not run
// twice. An attempt given up on may be stored later; the next one finds
// it (a finish the log already holds succeeds again). Only a drain past
// its grace period (work ended) gives up on it: the dispatch then comes
// back after the lease and the task runs again.
func (p *Pool) record(work context.Context, msg lease, task *trellis.Task, hold *taskqueue.Hold, worker string, cp *trellis.Checkpoint, herr error, usage trellis.Usage, cancelled *string, log *slog.Logger) {
	m, q := p.cfg.Metrics, p.cfg.Queue
	backoff := 250 * time.Millisecond
	var err error
	for attempt := 1; ; attempt++ {
		// Finishing must not be cut short by the drain: it has its own bound.
		fctx, cancel := context.WithTimeout(context.Background(), outcomeAttempt)
		err = p.recordOnce(fctx, work, task, hold, worker, cp, herr, usage, cancelled, log)
		cancel()
		if trellis.ErrorCode(err) != trellis.CodeUnavailable || work.Err() != nil {
			break
		}
		log.Warn("outcome not recorded yet: kept, recorded again once the server answers", "attempt", attempt, "err", err)
		sleepCtx(work, backoff)
		backoff = min(2*backoff, 5*time.Second)
	}
	switch {
	case err == nil:
		if err := msg.Ack(); err != nil {
			log.Warn("lease not acknowledged; the dispatch comes back and is skipped as stale", "err", err)
		}
	case trellis.ErrorCode(err) == trellis.CodeConflict && hold != nil && !hold.Recorded():
		// The task changed (cancelled; or our lease expired while the
		// claim we held was not recorded, and another pool claimed it)
		// before the claim we held was recorded.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		ended := p.queue.HeldTaskEnded(ctx, hold)
		cancel()
		if !ended {
			// Another pool may hold a later delivery of the dispatch:
			// only its holder may acknowledge it.
			m.LeaseLost.WithLabelValues(q).Inc()
			log.Warn("held task changed before its outcome was recorded; outcome dropped, its dispatch left to its holder", "err", err)
			return
		}
		log.Warn("held task changed before its outcome was recorded; outcome dropped", "err", err)
		if err := msg.Ack(); err != nil {
			log.Warn("stale dispatch not acknowledged; it comes back and is skipped", "err", err)
		}
	case trellis.ErrorCode(err) == trellis.CodeConflict:
		// Our lease expired and someone else holds the task now: leave the
		// dispatch alone (acknowledging it would drop their lease).
		m.LeaseLost.WithLabelValues(q).Inc()
		log.Warn("task taken over after our lease expired", "err", err)
	default:
		// Not recorded: the dispatch comes back after the lease and the
		// task runs again (at least once, never finished twice).
		log.Error("finish not recorded; the task runs again after the lease", "err", err)
	}
}

// recordOnce makes one attempt to record a run's outcome (see record).
func (p *Pool) recordOnce(ctx, work context.Context, task *trellis.Task, hold *taskqueue.Hold, worker string, cp *trellis.Checkpoint, herr error, usage trellis.Usage, cancelled *string, log *slog.Logger) error {
	if cancelled == nil {
		return p.finish(ctx, work, task, hold, worker, cp, herr, usage, log)
	}
	err := p.recordHold(ctx, hold)
	if err == nil {
		_, err = p.queue.CancelClaimed(ctx, task.TaskID, worker)
	}
	if err == nil {
		p.cfg.Metrics.Cancelled.WithLabelValues(p.cfg.Queue).Inc()
		log.Info("task cancelled", "reason", *cancelled)
	}
	return err
}

// recordHold records a held claim before an outcome that cannot carry it
// (a cancellation, a release).
func (p *Pool) recordHold(ctx context.Context, hold *taskqueue.Hold) error {
	if hold == nil || p.queue == nil {
		return nil
	}
	return p.queue.RecordHold(ctx, hold)
}

// done and fail record an outcome: with the hold on the local path (the
// outcome carries a claim not recorded yet), else through the recorder.
func (p *Pool) done(ctx context.Context, hold *taskqueue.Hold, req trellis.DoneRequest) (*trellis.Task, error) {
	if hold != nil && p.queue != nil {
		return p.queue.DoneHeld(ctx, hold, req)
	}
	return p.recorder().Done(ctx, req)
}

func (p *Pool) fail(ctx context.Context, hold *taskqueue.Hold, req trellis.FailRequest) (*trellis.Task, error) {
	if hold != nil && p.queue != nil {
		return p.queue.FailHeld(ctx, hold, req)
	}
	return p.recorder().Fail(ctx, req)
}

// run calls the handler, turning a panic into an error.
func (p *Pool) run(ctx context.Context, task *trellis.Task, progress *Progress) (cp *trellis.Checkpoint, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("handler panicked: %v\n%s", r, debug.Stack())
		}
	}()
	return p.handler.Handle(ctx, task, progress)
}

// finish records the outcome of one run and logs it. A handler that
// returns a checkpoint whose usage exceeds the task's budget overspent it:
// the task fails with budget_exhausted, without retries, like a handler
// stopped by Progress.
func (p *Pool) finish(ctx, work context.Context, task *trellis.Task, hold *taskqueue.Hold, worker string, cp *trellis.Checkpoint, herr error, counted trellis.Usage, log *slog.Logger) error {
	m, q := p.cfg.Metrics, p.cfg.Queue
	if cp == nil {
		cp = &trellis.Checkpoint{}
	}
	usage := trellis.Usage{StepsUsed: max(counted.StepsUsed, cp.Usage.StepsUsed), ToolCallsUsed: max(counted.ToolCallsUsed, cp.Usage.ToolCallsUsed)}
	if herr == nil && usage.Exceeds(task.Budget) {
		herr = fmt.Errorf("%w: the handler used %d steps and %d tool calls of a budget of %d steps and %d tool calls",
			ErrBudgetExhausted, usage.StepsUsed, usage.ToolCallsUsed, task.Budget.MaxSteps, task.Budget.MaxToolCalls)
	}
	switch {
	case herr != nil && work.Err() != nil:
		// Cancelled by the drain: give the task back.
		if err := p.recordHold(ctx, hold); err != nil {
			return err
		}
		_, err := p.recorder().Release(ctx, task.TaskID, worker, "worker drained before the task finished")
		if err == nil {
			m.Released.WithLabelValues(q).Inc()
			log.Info("task released", "reason", "worker drained before the task finished")
		}
		return err
	case herr == nil:
		what := cp.WhatWasDone
		if what == "" {
			what = "done"
		}
		req := trellis.DoneRequest{
			TaskID: task.TaskID, Worker: worker, WhatWasDone: what, WhatChanged: cp.WhatChanged,
			WhatNext: cp.WhatNext, Blockers: cp.Blockers, Citations: cp.Citations,
			StepsUsed: usage.StepsUsed, ToolCallsUsed: usage.ToolCallsUsed,
		}
		_, err := p.done(ctx, hold, req)
		if trellis.ErrorCode(err) == trellis.CodeInvalid {
			// The handler's checkpoint breaks a rule (an empty list item, a
			// negative count, oversized text): record the task as done with
			// a plain checkpoint that says so, rather than run it again.
			log.Warn("checkpoint rejected; recording a plain one", "err", err)
			_, err = p.done(ctx, hold, trellis.DoneRequest{
				TaskID: task.TaskID, Worker: worker,
				WhatWasDone:   errorText(fmt.Errorf("the handler finished, but its checkpoint was rejected (%v)", err)),
				StepsUsed:     min(max(usage.StepsUsed, 0), trellis.MaxBudget),
				ToolCallsUsed: min(max(usage.ToolCallsUsed, 0), trellis.MaxBudget),
			})
		}
		if err == nil {
			m.Done.WithLabelValues(q).Inc()
			log.Info("task done", "steps_used", usage.StepsUsed, "tool_calls_used", usage.ToolCallsUsed)
		}
		return err
	}
	// A failed run: retried unless the budget is spent.
	exhausted := errors.Is(herr, ErrBudgetExhausted) || usage.Exceeds(task.Budget)
	t, err := p.fail(ctx, hold, trellis.FailRequest{
		TaskID: task.TaskID, Worker: worker, Error: errorText(herr), WhatWasDone: cp.WhatWasDone,
		Blockers: cp.Blockers, StepsUsed: usage.StepsUsed, ToolCallsUsed: usage.ToolCallsUsed, Retry: !exhausted,
	})
	if trellis.ErrorCode(err) == trellis.CodeInvalid {
		t, err = p.fail(ctx, hold, trellis.FailRequest{
			TaskID: task.TaskID, Worker: worker, Error: errorText(herr), Retry: !exhausted,
			StepsUsed:     min(max(usage.StepsUsed, 0), trellis.MaxBudget),
			ToolCallsUsed: min(max(usage.ToolCallsUsed, 0), trellis.MaxBudget),
		})
	}
	if err != nil {
		return err
	}
	switch t.Status {
	case trellis.StatusDead:
		m.Dead.WithLabelValues(q).Inc()
		log.Warn("task dead", "error", errorText(herr), "attempts_used", t.Attempts, "max_attempts", t.MaxAttempts)
	case trellis.StatusQueued:
		m.Retries.WithLabelValues(q).Inc()
		var retryAt time.Time
		if t.RetryAt != nil {
			retryAt = *t.RetryAt
		}
		log.Warn("task failed, retry scheduled", "error", errorText(herr), "retry_at", retryAt, "max_attempts", t.MaxAttempts)
	default:
		m.Failed.WithLabelValues(q).Inc()
		log.Warn("task failed", "error", errorText(herr), "budget_exhausted", t.BudgetExhausted,
			"steps_used", usage.StepsUsed, "tool_calls_used", usage.ToolCallsUsed)
	}
	return nil
}

// taskTimeout is how long one attempt of task may run: the shorter of the
// task's own timeout and the pool's TaskTimeout (0: unbounded).
func (p *Pool) taskTimeout(task *trellis.Task) time.Duration {
	d := time.Duration(task.TimeoutMS) * time.Millisecond
	if p.cfg.TaskTimeout > 0 && (d <= 0 || p.cfg.TaskTimeout < d) {
		d = p.cfg.TaskTimeout
	}
	return max(d, 0)
}

// errorText bounds an error message to what a task's error field holds.
func errorText(err error) string {
	s := err.Error()
	if s == "" {
		s = "handler failed"
	}
	if len(s) > trellis.MaxTextBytes {
		s = s[len(s)-trellis.MaxTextBytes:]
	}
	return strings.ToValidUTF8(s, "?")
}

// heartbeat extends the lease of a running task until ctx ends. At each
// heartbeat it also reads whether the task was cancelled, and if so calls
// cancel (once) with the reason: the handler's context ends (the exec
// handler signals its process group).
func (p *Pool) heartbeat(ctx context.Context, msg lease, taskID string, log *slog.Logger, cancel func(reason string)) {
	stopped := false
	last := time.Now()
	for {
		// Wake often enough to follow a lease that shrinks meanwhile.
		sleepCtx(ctx, min(p.heartbeatEvery(), 250*time.Millisecond))
		if ctx.Err() != nil {
			return
		}
		if time.Since(last) < p.heartbeatEvery() {
			continue
		}
		last = time.Now()
		if err := msg.InProgress(); err != nil {
			log.Warn("heartbeat", "err", err)
		}
		if stopped || p.queue == nil {
			continue // a remote pool does not read the task (the server would have to)
		}
		rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
		asked, reason, err := p.queue.CancelRequested(rctx, taskID)
		rcancel()
		if err == nil && asked {
			stopped = true
			log.Info("task cancelled: stopping its handler", "reason", reason)
			cancel(reason)
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
