package retention

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
)

// Bounds of LoopConfig.Every.
const (
	// MinEvery is the shortest time between two prunes of a loop.
	MinEvery = 100 * time.Millisecond
	// MaxEvery is the longest.
	MaxEvery = 24 * time.Hour
)

// DefaultEvery is the time between two prunes of a loop keeping
// finished tasks for olderThan: a tenth of it, at least a minute and at
// most an hour.
func DefaultEvery(olderThan time.Duration) time.Duration {
	return min(max(olderThan/10, time.Minute), time.Hour)
}

// LoopConfig configures a Loop (`trellis serve --retention --archive`).
type LoopConfig struct {
	// Options are each prune's options: OlderThan (the retention) and
	// Archive are required; Key is the server's audit key.
	Options Options
	// Every is the time from the end of one prune to the start of the
	// next (default DefaultEvery(Options.OlderThan), between MinEvery and
	// MaxEvery); each wait is drawn within ±10% of it, so that servers
	// started together do not prune in step.
	Every time.Duration
	// Logger receives a line per prune that removed something, a warning
	// per failed prune (default slog.Default()).
	Logger *slog.Logger
	// Metrics, when set, registers the loop's metrics
	// (trellis_retention_*).
	Metrics prometheus.Registerer
}

// Check applies the defaults and checks the configuration: a positive
// retention, an interval within bounds, and an archive directory that
// exists (it is created when missing) and can be written.
func (c *LoopConfig) Check() error {
	if c.Options.OlderThan <= 0 {
		return trellis.FieldError("retention", "must be a positive duration, got %s", c.Options.OlderThan)
	}
	if c.Every == 0 {
		c.Every = DefaultEvery(c.Options.OlderThan)
	}
	if c.Every < MinEvery || c.Every > MaxEvery {
		return trellis.FieldError("prune_every", "must be between %s and %s, got %s", MinEvery, MaxEvery, c.Every)
	}
	if err := checkRemoveRate(c.Options.RemoveRate); err != nil {
		return err
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return checkArchiveDir(c.Options.Archive)
}

// Status is what a loop's prunes did so far.
type Status struct {
	// Runs counts the prunes started; Failed those that ended with an
	// error other than a conflict, Conflicts those another prune (another
	// server's) was running beside.
	Runs      int `json:"runs"`
	Failed    int `json:"failed"`
	Conflicts int `json:"conflicts"`
	// Tasks and Events count what the loop removed.
	Tasks  int `json:"tasks"`
	Events int `json:"events"`
	// LastErr is the last prune's error ("" when it succeeded or met a
	// conflict); LastOK when a prune last succeeded.
	LastErr string    `json:"last_error,omitempty"`
	LastOK  time.Time `json:"last_ok,omitzero"`
}

// Loop prunes the log periodically: a prune at start, then one every
// LoopConfig.Every, each the same as `trellis prune` (Prune). Prunes of
// one loop never overlap; prunes of several servers exclude each other
// through the prune record's check (the loser stops with a conflict,
// which the loop counts and does not report as a failure).
type Loop struct {
	store   *events.Store
	cfg     LoopConfig
	metrics *loopMetrics
	cancel  context.CancelFunc
	done    chan struct{}

	mu     sync.Mutex
	status Status
}

// StartLoop checks cfg and starts the loop; Close stops it.
func StartLoop(store *events.Store, cfg LoopConfig) (*Loop, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	m, err := newLoopMetrics(cfg.Metrics)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &Loop{store: store, cfg: cfg, metrics: m, cancel: cancel, done: make(chan struct{})}
	go l.run(ctx)
	return l, nil
}

// Status returns what the loop's prunes did so far.
func (l *Loop) Status() Status {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.status
}

// Close stops the loop, cancelling a prune under way (which leaves the log
// as a killed prune does: whole, or recorded and finished by the next
// prune).
func (l *Loop) Close() {
	if l == nil {
		return
	}
	l.cancel()
	<-l.done
}

func (l *Loop) run(ctx context.Context) {
	defer close(l.done)
	for {
		l.once(ctx)
		// Within ±10% of Every.
		wait := l.cfg.Every - l.cfg.Every/10 + time.Duration(rand.Int64N(int64(l.cfg.Every/5)+1))
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// once runs one prune and records its outcome.
func (l *Loop) once(ctx context.Context) {
	res, err := Prune(ctx, l.store, l.cfg.Options)
	if ctx.Err() != nil {
		return // stopping: not the prune's failure
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.status.Runs++
	if res != nil {
		l.status.Tasks += res.Tasks
		l.status.Events += res.Events
		l.metrics.add(res)
	}
	switch {
	case err == nil:
		l.status.LastErr, l.status.LastOK = "", time.Now().UTC()
		if res.IgnoredRecords > 0 {
			l.cfg.Logger.Warn("retention: prune records not made by a prune were ignored (another stream's, or not signed with the audit key)",
				"records", res.IgnoredRecords)
		}
		l.metrics.ok()
		if res.Tasks > 0 || res.Completed > 0 || res.Runs > 0 || res.AgentTasks > 0 {
			l.cfg.Logger.Info("retention: pruned finished tasks", "tasks", res.Tasks, "events", res.Events,
				"workflow_runs", res.Runs, "agent_tasks", res.AgentTasks,
				"archives", len(res.Archives), "cut", res.Cut, "millis", res.Millis)
		}
	case trellis.ErrorCode(err) == trellis.CodeConflict:
		// Another server's prune ran beside this one: it prunes what this
		// one left.
		l.status.Conflicts++
		l.status.LastErr = ""
		l.metrics.conflict()
		l.cfg.Logger.Info("retention: another prune ran at the same time; this one stopped", "err", err)
	default:
		l.status.Failed++
		l.status.LastErr = err.Error()
		l.metrics.failed()
		l.cfg.Logger.Error("retention: prune failed (nothing is pruned without a durable archive)", "err", err,
			"archive", l.cfg.Options.Archive)
	}
}
