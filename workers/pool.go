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
	// Grace is how long a draining pool lets running handlers finish before
	// cancelling them and releasing their tasks (default 30 s).
	Grace time.Duration
	// FetchWait is how long one fetch waits for a dispatch (default 1 s).
	FetchWait time.Duration
	// Logger receives the pool's logs (default slog.Default()): one line
	// per claim and per outcome of a task (task claimed, task done, task
	// failed, task failed, retry scheduled, task dead, task released),
	// each with the task id, the attempt and the claimant ("worker").
	Logger *slog.Logger
	// Metrics records the pool's metrics (default: unregistered metrics).
	Metrics *Metrics
}

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
// say); Run starts it. Such a pool's lease is the one it prepares; it does
// not see cancellations of its running tasks before they end.
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
		recording: make(chan struct{}, cfg.Concurrency)}, nil
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

// remoteLease is a Source's claim as a lease.
type remoteLease struct{ c *Claim }

func (l remoteLease) InProgress() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return l.c.Heartbeat(ctx)
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
	setupCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	cons, err := p.queue.EnsureConsumer(setupCtx, p.cfg.Queue, p.cfg.Lease)
	cancel()
	if err != nil {
		return fmt.Errorf("worker pool on queue %s: %w", p.cfg.Queue, err)
	}
	p.ackWait.Store(int64(cons.CachedInfo().Config.AckWait))
	setupCtx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
	lanes, err := p.queue.Lanes(setupCtx, p.cfg.Queue)
	cancel()
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
	lease := p.cfg.Lease
	if lease <= 0 {
		lease = 30 * time.Second
	}
	setupCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	err := p.src.Prepare(setupCtx, p.cfg.Queue, lease)
	cancel()
	if err != nil {
		return fmt.Errorf("worker pool on queue %s: %w", p.cfg.Queue, err)
	}
	p.ackWait.Store(int64(lease))
	work, cancelWork := context.WithCancel(context.Background())
	defer cancelWork()
	var wg sync.WaitGroup
	for slot := 0; slot < p.cfg.Concurrency; slot++ {
		wg.Add(1)
		go func(worker string) {
			defer wg.Done()
			p.remoteSlot(ctx, work, worker, &wg)
		}(p.cfg.Worker + "/" + strconv.Itoa(slot))
	}
	<-ctx.Done()
	p.drain(&wg, cancelWork)
	return nil
}

// remoteSlot is one slot of a remote pool: claim, run, until ctx ends.
func (p *Pool) remoteSlot(ctx, work context.Context, worker string, wg *sync.WaitGroup) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		start := time.Now()
		claim, err := p.src.Claim(ctx, p.cfg.Queue, worker, p.cfg.FetchWait)
		var claimErr *ClaimError
		if errors.As(err, &claimErr) {
			p.log.Warn("claim", "worker", worker, "err", err)
			continue
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
			p.runClaimed(work, remoteLease{claim}, claim.Task, worker, start, wg)
		}
	}
}

// fetch pulls dispatches for the free slots until ctx ends, handing each
// to a slot of its own. Whenever slots are free it first takes what the
// queue's priority lanes hold, best lane first (one no-wait pull per lane
// for all the free slots); then it keeps one waiting pull per lane, so a
// dispatch arriving on any lane is taken at once. A dispatch arriving
// while no slot is free is given back (Nak) for another claimant.
func (p *Pool) fetch(ctx, work context.Context, lanes []jetstream.Consumer, wg *sync.WaitGroup) {
	free := make(chan int, p.cfg.Concurrency)
	for slot := 0; slot < p.cfg.Concurrency; slot++ {
		free <- slot
	}
	type arrival struct {
		lane int
		msg  jetstream.Msg
		err  error
	}
	arrivals := make(chan arrival, len(lanes))
	waiting := make([]bool, len(lanes))
	var waiters sync.WaitGroup
	defer func() {
		// Pulls still waiting end within FetchWait; give back what they get.
		go func() { waiters.Wait(); close(arrivals) }()
		for a := range arrivals {
			if a.msg != nil {
				_ = a.msg.Nak()
			}
		}
	}()
	var slots []int
	run := func(msg jetstream.Msg) {
		slot := slots[len(slots)-1]
		slots = slots[:len(slots)-1]
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { free <- slot }()
			p.handle(work, msg, p.cfg.Worker+"/"+strconv.Itoa(slot), wg)
		}()
	}
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		select {
		case s := <-free:
			slots = append(slots, s)
		case a := <-arrivals:
			waiting[a.lane] = false
			switch {
			case a.err != nil:
				p.log.Warn("fetch", "err", a.err)
				sleepCtx(ctx, backoff)
				backoff = min(2*backoff, 5*time.Second)
			case a.msg != nil && len(slots) > 0:
				backoff = 100 * time.Millisecond
				run(a.msg)
			case a.msg != nil:
				_ = a.msg.Nak()
			}
		case <-ctx.Done():
			return
		}
	more:
		for {
			select {
			case s := <-free:
				slots = append(slots, s)
			default:
				break more
			}
		}
		// What the lanes hold now, best lane first.
		for _, lane := range lanes {
			if len(slots) == 0 || ctx.Err() != nil {
				break
			}
			batch, err := lane.FetchNoWait(len(slots))
			if err != nil {
				// NATS unreachable, the server restarting, a consumer
				// moving: the waiting pulls below keep trying.
				p.log.Warn("fetch", "err", err)
				break
			}
			for msg := range batch.Messages() {
				if len(slots) == 0 || ctx.Err() != nil {
					_ = msg.Nak()
					continue
				}
				run(msg)
			}
		}
		if len(slots) == 0 || ctx.Err() != nil {
			continue
		}
		for i, lane := range lanes {
			if waiting[i] {
				continue
			}
			waiting[i] = true
			waiters.Add(1)
			go func() {
				defer waiters.Done()
				batch, err := lane.Fetch(1, jetstream.FetchMaxWait(p.cfg.FetchWait))
				if err != nil {
					arrivals <- arrival{lane: i, err: err}
					return
				}
				var got jetstream.Msg
				for msg := range batch.Messages() {
					got = msg
				}
				arrivals <- arrival{lane: i, msg: got}
			}()
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
// The slot is free again as soon as the handler returns: recording the
// outcome (a checked append, then the acknowledgement that ends the lease)
// runs in the background, as River's completer does, so a slot's next
// claim does not wait for its last finish; the lease is heartbeated until
// the outcome is recorded. At most Concurrency outcomes are being recorded
// at once (a slot waits for room), and a drain waits for all of them.
func (p *Pool) handle(ctx context.Context, msg jetstream.Msg, worker string, wg *sync.WaitGroup) {
	start := time.Now()
	task, err := p.queue.ClaimDispatched(ctx, msg, worker, true)
	if err != nil {
		p.log.Warn("claim", "worker", worker, "err", err)
		return // the dispatch stays unacknowledged and comes back
	}
	if task == nil {
		return
	}
	p.runClaimed(ctx, msg, task, worker, start, wg)
}

// runClaimed runs a claimed task with its lease (see handle).
func (p *Pool) runClaimed(ctx context.Context, msg lease, task *trellis.Task, worker string, start time.Time, wg *sync.WaitGroup) {
	log := p.log.With("task", task.TaskID, "attempt", task.Attempts, "worker", worker)
	log.Info("task claimed", "max_attempts", task.MaxAttempts)
	m, q := p.cfg.Metrics, p.cfg.Queue
	m.Claimed.WithLabelValues(q).Inc()
	m.ClaimLatency.WithLabelValues(q).Observe(time.Since(start).Seconds())
	m.InFlight.WithLabelValues(q).Inc()

	hbCtx, stopHB := context.WithCancel(context.Background())
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	var cancelled atomic.Pointer[string]
	go p.heartbeat(hbCtx, msg, task.TaskID, log, func(reason string) {
		cancelled.Store(&reason)
		stopRun()
	})
	progress := NewProgress(task.Budget)
	runStart := time.Now()
	cp, herr := p.run(runCtx, task, progress)
	took := time.Since(runStart)
	m.HandlerDuration.WithLabelValues(q).Observe(took.Seconds())
	p.recording <- struct{}{}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer func() { <-p.recording }()
		defer m.InFlight.WithLabelValues(q).Dec()
		defer stopHB()
		p.record(ctx, msg, task, worker, cp, herr, progress.Usage(), cancelled.Load(), log.With("took", took.Round(time.Millisecond)))
	}()
}

// record records the outcome of one run (see handle), or its cancellation
// when the task was cancelled while it ran, and ends its lease.
func (p *Pool) record(work context.Context, msg lease, task *trellis.Task, worker string, cp *trellis.Checkpoint, herr error, usage trellis.Usage, cancelled *string, log *slog.Logger) {
	m, q := p.cfg.Metrics, p.cfg.Queue
	// Finishing must not be cut short by the drain: it has its own bound.
	fctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	var err error
	if cancelled != nil {
		_, err = p.queue.CancelClaimed(fctx, task.TaskID, worker)
		if err == nil {
			m.Cancelled.WithLabelValues(q).Inc()
			log.Info("task cancelled", "reason", *cancelled)
		}
	} else {
		err = p.finish(fctx, work, task, worker, cp, herr, usage, log)
	}
	switch {
	case err == nil:
		if err := msg.Ack(); err != nil {
			log.Warn("lease not acknowledged; the dispatch comes back and is skipped as stale", "err", err)
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
func (p *Pool) finish(ctx, work context.Context, task *trellis.Task, worker string, cp *trellis.Checkpoint, herr error, counted trellis.Usage, log *slog.Logger) error {
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
		_, err := p.recorder().Done(ctx, req)
		if trellis.ErrorCode(err) == trellis.CodeInvalid {
			// The handler's checkpoint breaks a rule (an empty list item, a
			// negative count, oversized text): record the task as done with
			// a plain checkpoint that says so, rather than run it again.
			log.Warn("checkpoint rejected; recording a plain one", "err", err)
			_, err = p.recorder().Done(ctx, trellis.DoneRequest{
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
	t, err := p.recorder().Fail(ctx, trellis.FailRequest{
		TaskID: task.TaskID, Worker: worker, Error: errorText(herr), WhatWasDone: cp.WhatWasDone,
		Blockers: cp.Blockers, StepsUsed: usage.StepsUsed, ToolCallsUsed: usage.ToolCallsUsed, Retry: !exhausted,
	})
	if trellis.ErrorCode(err) == trellis.CodeInvalid {
		t, err = p.recorder().Fail(ctx, trellis.FailRequest{
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
