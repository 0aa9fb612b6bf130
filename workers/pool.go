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
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/handlers"
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
	// Lease is how long a claim survives without a heartbeat: the claim
	// consumer's AckWait (default 30 s). Setting it updates the queue's
	// consumer, so all pools of a queue share one lease.
	Lease time.Duration
	// Heartbeat is how often a running task's lease is extended (default
	// Lease/3).
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
	if c.Lease <= 0 {
		c.Lease = 30 * time.Second
	}
	if c.Heartbeat <= 0 {
		c.Heartbeat = c.Lease / 3
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

// Pool runs a Handler over one queue with a fixed concurrency.
type Pool struct {
	src     Source
	handler Handler
	cfg     Config
	log     *slog.Logger
}

// New returns a pool working the queue handler in this process; Run
// starts it.
func New(queue *handlers.Queue, h Handler, cfg Config) (*Pool, error) {
	return NewWithSource(QueueSource(queue), h, cfg)
}

// NewWithSource returns a pool claiming from src (a remote server's API,
// say); Run starts it.
func NewWithSource(src Source, h Handler, cfg Config) (*Pool, error) {
	cfg = cfg.withDefaults()
	if err := trellis.ValidateQueueName(cfg.Queue); err != nil {
		return nil, err
	}
	if err := trellis.ValidateWorkerID(cfg.Worker + "/" + strconv.Itoa(cfg.Concurrency)); err != nil {
		return nil, err
	}
	if cfg.Heartbeat >= cfg.Lease {
		return nil, trellis.FieldError("heartbeat", "must be shorter than the lease (%s), got %s", cfg.Lease, cfg.Heartbeat)
	}
	return &Pool{src: src, handler: h, cfg: cfg, log: cfg.Logger.With("queue", cfg.Queue, "pool", cfg.Worker)}, nil
}

// Run claims and runs tasks until ctx ends, then drains: no new claims,
// running handlers get Grace to finish, the rest are cancelled and their
// tasks released back to the queue. It returns after the drain.
func (p *Pool) Run(ctx context.Context) error {
	setupCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	err := p.src.Prepare(setupCtx, p.cfg.Queue, p.cfg.Lease)
	cancel()
	if err != nil {
		return fmt.Errorf("worker pool on queue %s: %w", p.cfg.Queue, err)
	}
	// Handlers run under work, which outlives ctx by the grace period.
	work, cancelWork := context.WithCancel(context.Background())
	defer cancelWork()
	var wg sync.WaitGroup
	for slot := 0; slot < p.cfg.Concurrency; slot++ {
		wg.Add(1)
		go func(worker string) {
			defer wg.Done()
			p.loop(ctx, work, worker)
		}(p.cfg.Worker + "/" + strconv.Itoa(slot))
	}
	<-ctx.Done()
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
	return nil
}

// loop is one slot: claim a task, run it, until ctx ends.
func (p *Pool) loop(ctx, work context.Context, worker string) {
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
			// NATS unreachable, the server restarting, a consumer moving:
			// keep trying until it is back.
			p.log.Warn("claim", "worker", worker, "err", err)
			sleepCtx(ctx, backoff)
			backoff = min(2*backoff, 5*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		if claim != nil {
			p.handle(work, claim, worker, start)
		}
	}
}

// handle runs a claimed task to its end. Each claim and each outcome
// (done, failed, retry scheduled, dead, released) is logged on one line
// with the task id, the attempt and the claimant.
func (p *Pool) handle(ctx context.Context, claim *Claim, worker string, start time.Time) {
	task := claim.Task
	log := p.log.With("task", task.TaskID, "attempt", task.Attempts, "worker", worker)
	log.Info("task claimed", "max_attempts", task.MaxAttempts)
	m, q := p.cfg.Metrics, p.cfg.Queue
	m.Claimed.WithLabelValues(q).Inc()
	m.ClaimLatency.WithLabelValues(q).Observe(time.Since(start).Seconds())
	m.InFlight.WithLabelValues(q).Inc()
	defer m.InFlight.WithLabelValues(q).Dec()

	hbCtx, stopHB := context.WithCancel(context.Background())
	go p.heartbeat(hbCtx, claim, log)
	progress := NewProgress(task.Budget)
	runStart := time.Now()
	cp, herr := p.run(ctx, task, progress)
	took := time.Since(runStart)
	m.HandlerDuration.WithLabelValues(q).Observe(took.Seconds())
	// Finishing must not be cut short by the drain: it has its own bound.
	fctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	err := p.finish(fctx, ctx, task, worker, cp, herr, progress.Usage(), log.With("took", took.Round(time.Millisecond)))
	stopHB()
	switch {
	case err == nil:
		if err := claim.Ack(fctx); err != nil {
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
		_, err := p.src.Release(ctx, task.TaskID, worker, "worker drained before the task finished")
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
		_, err := p.src.Done(ctx, req)
		if trellis.ErrorCode(err) == trellis.CodeInvalid {
			// The handler's checkpoint breaks a rule (an empty list item, a
			// negative count, oversized text): record the task as done with
			// a plain checkpoint that says so, rather than run it again.
			log.Warn("checkpoint rejected; recording a plain one", "err", err)
			_, err = p.src.Done(ctx, trellis.DoneRequest{
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
	t, err := p.src.Fail(ctx, trellis.FailRequest{
		TaskID: task.TaskID, Worker: worker, Error: errorText(herr), WhatWasDone: cp.WhatWasDone,
		Blockers: cp.Blockers, StepsUsed: usage.StepsUsed, ToolCallsUsed: usage.ToolCallsUsed, Retry: !exhausted,
	})
	if trellis.ErrorCode(err) == trellis.CodeInvalid {
		t, err = p.src.Fail(ctx, trellis.FailRequest{
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

// heartbeat extends the lease of a running task until ctx ends.
func (p *Pool) heartbeat(ctx context.Context, claim *Claim, log *slog.Logger) {
	t := time.NewTicker(p.cfg.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := claim.Heartbeat(ctx); err != nil && ctx.Err() == nil {
				log.Warn("heartbeat", "err", err)
			}
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
