package projections

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/trellis/trellis/events"
)

// Projection is a read model fed by one stream.
type Projection interface {
	// Name identifies the projection in logs and file names.
	Name() string
	// Stream is the stream the projection folds.
	Stream() string
	// Load restores the persisted state and returns the last applied
	// sequence (0 when there is none).
	Load() (uint64, error)
	// Apply folds one event. It is called in stream order, once per
	// sequence after the loaded one.
	Apply(rec events.Recorded) error
	// Save persists the state as of sequence seq, together with seq, as
	// one atomic unit. The runner never calls it while an Apply is in
	// flight, so the state it sees is exactly the fold of the events up
	// to seq.
	Save(seq uint64) error
	// Reset drops all state, persisted and in memory.
	Reset() error
}

// Batched is implemented by a projection that commits in batches: the
// runner saves it once SaveAfterEvents events are applied and not saved, or
// SaveInterval after the last save while some are (a projection that is not
// Batched is saved every second while it changed).
type Batched interface {
	Projection
	// SaveAfter returns the batch bounds: how many unsaved events, and how
	// long, before the runner saves.
	SaveAfter() (events int, interval time.Duration)
}

// Replayer is implemented by a projection that commits differently while
// it works through a backlog (for example without syncing each commit).
// The runner calls BeginReplay when it starts behind the stream, with the
// number of events to catch up on, and EndReplay, followed by a save, once
// it has applied what the stream held when it started.
type Replayer interface {
	Projection
	// BeginReplay is called before the first event of a backlog.
	BeginReplay(backlog uint64) error
	// EndReplay is called once the backlog is applied; a save follows.
	EndReplay()
}

// Runner feeds a projection from its stream, persists it periodically and
// lets readers wait until it has caught up with a sequence.
type Runner struct {
	store      *events.Store
	proj       Projection
	log        *slog.Logger
	saveEvery  time.Duration
	saveEvents uint64

	// applyMu serializes folding with saving, stop and reset: a save
	// never sees an event half folded, so the state it persists is the
	// fold of exactly the events up to the sequence it records.
	applyMu sync.Mutex

	mu      sync.Mutex
	cond    *sync.Cond
	applied uint64
	// appliedID is the id of the event at applied when this runner
	// applied it ("" after a load, or for a message that is no event).
	appliedID string
	saved     uint64
	replayTo  uint64 // while replaying a backlog: its last sequence
	sub       *events.Subscription
	failed    error
	stopped   bool
	done      chan struct{}
}

// NewRunner returns a runner; call Start.
func NewRunner(store *events.Store, proj Projection, log *slog.Logger) *Runner {
	if log == nil {
		log = slog.Default()
	}
	r := &Runner{store: store, proj: proj, log: log.With("projection", proj.Name()), saveEvery: time.Second}
	if b, ok := proj.(Batched); ok {
		n, every := b.SaveAfter()
		if n > 0 {
			r.saveEvents = uint64(n)
		}
		if every > 0 {
			r.saveEvery = every
		}
	}
	r.cond = sync.NewCond(&r.mu)
	return r
}

// Projection returns the projection the runner feeds.
func (r *Runner) Projection() Projection { return r.proj }

// Start loads the persisted state and subscribes after its sequence.
func (r *Runner) Start(ctx context.Context) error {
	seq, err := r.proj.Load()
	if err != nil {
		return fmt.Errorf("projection %s: load: %w", r.proj.Name(), err)
	}
	r.mu.Lock()
	r.applied, r.appliedID, r.saved, r.failed, r.stopped, r.replayTo = seq, "", seq, nil, false, 0
	r.done = make(chan struct{})
	r.mu.Unlock()
	if rp, ok := r.proj.(Replayer); ok {
		last, err := r.store.LastSeq(ctx, r.proj.Stream())
		if err != nil {
			return fmt.Errorf("projection %s: %w", r.proj.Name(), err)
		}
		if last > seq {
			if err := rp.BeginReplay(last - seq); err != nil {
				return fmt.Errorf("projection %s: begin replay: %w", r.proj.Name(), err)
			}
			r.replayTo = last
		}
	}
	sub, err := r.store.Subscribe(ctx, r.proj.Stream(), seq+1, r.apply, func(err error) {
		r.log.Warn("projection feed", "err", err)
	})
	if err != nil {
		return fmt.Errorf("projection %s: %w", r.proj.Name(), err)
	}
	r.mu.Lock()
	r.sub = sub
	r.mu.Unlock()
	go r.saveLoop(r.done)
	return nil
}

func (r *Runner) apply(rec events.Recorded) error {
	r.applyMu.Lock()
	defer r.applyMu.Unlock()
	r.mu.Lock()
	if r.stopped || r.failed != nil || rec.Seq <= r.applied {
		r.mu.Unlock()
		return nil
	}
	r.mu.Unlock()
	if err := r.proj.Apply(rec); errors.Is(err, events.ErrBadEvent) {
		// An event that cannot mean anything (published from outside
		// Trellis) must not stop every read: skip it, loudly. Replays skip
		// it the same way, so rebuilt views still equal live ones.
		r.log.Error("projection skipped a bad event", "seq", rec.Seq, "subject", rec.Subject, "err", err)
	} else if err != nil {
		// Any other failure (a disk that cannot be written) must not be
		// skipped: record it so readers see it, and keep the position so a
		// restart retries.
		r.mu.Lock()
		r.failed = fmt.Errorf("projection %s: apply %s #%d: %w", r.proj.Name(), rec.Type, rec.Seq, err)
		r.cond.Broadcast()
		r.mu.Unlock()
		return r.failed
	}
	r.mu.Lock()
	r.applied, r.appliedID = rec.Seq, rec.ID
	full := r.saveEvents > 0 && r.applied-r.saved >= r.saveEvents
	r.cond.Broadcast()
	r.mu.Unlock()
	if r.replayTo > 0 && rec.Seq >= r.replayTo {
		// The backlog is folded: commit it the normal way.
		r.replayTo = 0
		r.proj.(Replayer).EndReplay()
		full = true
	}
	if full {
		// A full batch is committed at once, between two folds.
		if err := r.saveLocked(); err != nil {
			r.log.Error("projection save", "err", err)
		}
	}
	return nil
}

func (r *Runner) saveLoop(done chan struct{}) {
	t := time.NewTicker(r.saveEvery)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			if err := r.Save(); err != nil {
				r.log.Error("projection save", "err", err)
			}
		}
	}
}

// Save persists the state now if it changed since the last save. It waits
// for a fold in flight, so the state and the sequence it persists match.
func (r *Runner) Save() error {
	r.applyMu.Lock()
	defer r.applyMu.Unlock()
	return r.saveLocked()
}

// saveLocked is Save with applyMu held.
func (r *Runner) saveLocked() error {
	r.mu.Lock()
	seq := r.applied
	dirty := seq != r.saved
	r.mu.Unlock()
	if !dirty {
		return nil
	}
	if err := r.proj.Save(seq); err != nil {
		return fmt.Errorf("projection %s: save: %w", r.proj.Name(), err)
	}
	r.mu.Lock()
	if seq > r.saved {
		r.saved = seq
	}
	r.mu.Unlock()
	return nil
}

// Applied returns the last applied sequence.
func (r *Runner) Applied() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.applied
}

// Position returns the last applied sequence and the id of the event
// there ("" when the runner loaded that position rather than applied it,
// or when the message was not an event).
func (r *Runner) Position() (uint64, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.applied, r.appliedID
}

// WaitFor blocks until the projection has applied sequence seq, the
// projection failed, or ctx ends.
func (r *Runner) WaitFor(ctx context.Context, seq uint64) error {
	stop := context.AfterFunc(ctx, func() {
		r.mu.Lock()
		r.cond.Broadcast()
		r.mu.Unlock()
	})
	defer stop()
	r.mu.Lock()
	defer r.mu.Unlock()
	for r.applied < seq {
		if r.failed != nil {
			return r.failed
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("projection %s at #%d, waiting for #%d: %w", r.proj.Name(), r.applied, seq, err)
		}
		r.cond.Wait()
	}
	return nil
}

// CatchUp waits until the projection has applied everything the stream
// holds now.
func (r *Runner) CatchUp(ctx context.Context) error {
	last, err := r.store.LastSeq(ctx, r.proj.Stream())
	if err != nil {
		return err
	}
	return r.WaitFor(ctx, last)
}

// Await waits, up to timeout, until the projection has applied sequence
// seq (0: everything its stream holds when the call begins): the wait of
// every read that must see the log as it stood.
func (r *Runner) Await(ctx context.Context, seq uint64, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if seq == 0 {
		return r.CatchUp(ctx)
	}
	return r.WaitFor(ctx, seq)
}

// Stop ends the feed and saves the state.
func (r *Runner) Stop() error {
	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		return nil
	}
	r.stopped = true
	sub, done := r.sub, r.done
	r.mu.Unlock()
	if sub != nil {
		sub.Stop()
	}
	if done != nil {
		close(done)
	}
	// Wait for a fold in flight to finish before the final save.
	r.applyMu.Lock()
	defer r.applyMu.Unlock()
	return r.saveLocked()
}

// Rebuild drops the projection's state and replays the whole stream into
// it, returning once it has caught up with the stream's current end.
func (r *Runner) Rebuild(ctx context.Context) error {
	if err := r.Stop(); err != nil {
		r.log.Warn("projection stop before rebuild", "err", err)
	}
	if err := r.proj.Reset(); err != nil {
		return fmt.Errorf("projection %s: reset: %w", r.proj.Name(), err)
	}
	if err := r.Start(ctx); err != nil {
		return err
	}
	return r.CatchUp(ctx)
}
