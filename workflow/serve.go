package workflow

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/workers"
)

// ServeConfig configures Serve. The zero value is usable.
type ServeConfig struct {
	// Queue is the base of the dispatch queues (default "wf-<name>"); a
	// version's runs go to QueueFor(Queue, name, version).
	Queue string
	// Concurrency is how many activations run at once per hosted version
	// (default 8). A sleeping or waiting run holds no slot.
	Concurrency int
	// Lease is the dispatch queues' lease (0: the queue's, 30 s for a new
	// one): a pool that dies mid-step loses its runs to another pool after
	// it, and the step in flight runs again.
	Lease time.Duration
	// ClaimWindow is how long an activation may run before the claim of
	// its dispatch task is recorded on its own (default
	// DefaultActivationClaimWindow, at most a quarter of the lease; see
	// workers.Config.ClaimWindow): an activation that ends sooner costs
	// one event on the dispatch queue (its completion carries the claim)
	// instead of two. Negative: every claim is recorded first.
	ClaimWindow time.Duration
	// Worker names this pool in claims (default <hostname>-<pid>).
	Worker string
	// Logger receives the pools' logs (default the engine's).
	Logger *slog.Logger
	// Metrics records the pools' metrics (default unregistered).
	Metrics *workers.Metrics
	// Ready, if set, is called once every hosted version is registered on
	// the log, before the pools start: from then on Start finds each of
	// them (a readiness probe, or a test that starts runs next).
	Ready func()
}

// DefaultActivationClaimWindow is ServeConfig.ClaimWindow's default:
// longer than a worker pool's (workers.DefaultClaimWindow), since an
// activation's dispatch task is attempted without limit and a loaded
// machine easily takes longer than 50 ms over a few synced appends, which
// would cost every activation an extra claim event just when the log is
// busiest.
const DefaultActivationClaimWindow = time.Second

// Serve registers every workflow version hosted on the engine (an event
// per new version and queue) and works their runs until ctx ends, with one
// worker pool per version's dispatch queue.
func (e *Engine) Serve(ctx context.Context, cfg ServeConfig) error {
	hosted := e.hosted()
	if len(hosted) == 0 {
		return trellis.FieldError("workflows", "none registered: call workflow.Register first")
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 8
	}
	if cfg.Logger == nil {
		cfg.Logger = e.cfg.Logger
	}
	if cfg.ClaimWindow == 0 {
		cfg.ClaimWindow = DefaultActivationClaimWindow
	}
	var pools []*workers.Pool
	for _, h := range hosted {
		q := QueueFor(cfg.Queue, h.name, h.version)
		if err := trellis.ValidateQueueName(q); err != nil {
			return fmt.Errorf("workflow %s version %d: %w", h.name, h.version, err)
		}
		p, err := workers.New(e.queue, workers.HandlerFunc(e.handle), workers.Config{
			Queue: q, Worker: cfg.Worker, Concurrency: cfg.Concurrency, Lease: cfg.Lease, ClaimWindow: cfg.ClaimWindow, Logger: cfg.Logger, Metrics: cfg.Metrics,
		})
		if err != nil {
			return err
		}
		if err := e.register(ctx, h.name, h.version, q); err != nil {
			return err
		}
		pools = append(pools, p)
	}
	if cfg.Ready != nil {
		cfg.Ready()
	}
	errs := make(chan error, len(pools))
	var wg sync.WaitGroup
	for _, p := range pools {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- p.Run(ctx)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// handle is the pools' handler: one activation of the task's run.
func (e *Engine) handle(ctx context.Context, t *trellis.Task, _ *workers.Progress) (*trellis.Checkpoint, error) {
	runID := t.Metadata["workflow_run"]
	msg, err := e.Advance(ctx, runID)
	if err != nil {
		return nil, err
	}
	return &trellis.Checkpoint{WhatWasDone: "workflow run " + runID + ": " + msg}, nil
}
