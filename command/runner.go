package command

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/trellis/trellis/events"
)

// Kind describes one kind of aggregate: where its events live and how they
// fold.
type Kind[S any] struct {
	// Name names the kind in errors ("task", "graph").
	Name string
	// Stream is the stream holding the aggregates' events.
	Stream string
	// Filter is the subject filter of one aggregate: every event of the
	// aggregate, the scope of the concurrency check.
	Filter func(id string) string
	// Fold applies one event to a state (the zero S before the first
	// event) and returns the new state. It may change the state it is
	// given: the runner passes it a clone.
	Fold func(s S, rec events.Recorded) (S, error)
	// Clone copies a state (nil: S is copied by value).
	Clone func(S) S
	// Schema is the payload schema version of the events decided.
	Schema int
	// Snapshot, when set, is the subject of the aggregate's snapshots: a
	// load with no state starts from the last one (see startFromSnapshot).
	Snapshot func(id string) string
}

// State is an aggregate's state as a command sees it.
type State[S any] struct {
	// ID is the aggregate's id.
	ID string
	// Value is the folded state (the zero S when the aggregate has no
	// events).
	Value S
	// Seq is the stream sequence of the aggregate's last event folded into
	// Value (0: none).
	Seq uint64
	// Fresh is true when Value was folded from the log by this command;
	// false when it came from a cache or a message and may be behind.
	Fresh bool
	// Head is the events.Hash of the aggregate's last event ("" when it
	// has none, or when the state was built from a message): the next
	// event's Prev.
	Head string
}

// Exists reports whether the aggregate has any event.
func (s State[S]) Exists() bool { return s.Seq > 0 }

// Decision is the event a command decided to append.
type Decision struct {
	// Subject is the event's subject.
	Subject string
	// Type is the event type.
	Type string
	// Payload is encoded as the event's JSON payload.
	Payload any
	// MsgID overrides the event's Nats-Msg-Id (default its ULID).
	MsgID string
	// Header carries extra message headers.
	Header nats.Header
	// Check, when set, is the subject filter of the concurrency check
	// instead of the kind's Filter: a narrower filter that still covers
	// every event of the aggregate (a task's events all carry its queue
	// name), which the server checks faster.
	Check string
	// At is the event's time (default the runner's clock): a command
	// changing several aggregates at once gives their events one time.
	At time.Time
}

// at returns the time of d's event.
func (r *Runner[S]) at(d Decision) time.Time {
	if !d.At.IsZero() {
		return d.At
	}
	return r.cfg.Now()
}

// Config configures a Runner. Zero values take the documented defaults.
type Config struct {
	// MaxAttempts bounds how often a command decides again after losing a
	// race before it reports a conflict (default 16).
	MaxAttempts int
	// Backoff is the wait before decision n (n ≥ 1) after a lost race
	// (default: none before the first retry, then uniform in
	// [0, 1ms·2^(n-1)], capped at 50 ms).
	Backoff func(attempt int) time.Duration
	// CacheSize bounds the states kept between commands (default 65,536;
	// negative: no cache).
	CacheSize int
	// Now is the clock of event times (default time.Now).
	Now func() time.Time
}

func (c Config) withDefaults() Config {
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = 16
	}
	if c.Backoff == nil {
		c.Backoff = DefaultBackoff
	}
	if c.CacheSize == 0 {
		c.CacheSize = 65536
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// DefaultBackoff waits nothing before the first retry (the state is
// caught up and usually the next decision wins), then a jittered
// exponential wait from 1 ms, capped at 50 ms.
func DefaultBackoff(attempt int) time.Duration {
	if attempt <= 1 {
		return 0
	}
	max := time.Millisecond << min(attempt-2, 6)
	max = min(max, 50*time.Millisecond)
	return time.Duration(rand.Int64N(int64(max) + 1))
}

// DuplicateError reports a decision whose message id (Decision.MsgID) the
// stream already holds within its duplicate window: nothing was appended,
// and Seq is the sequence of the event stored under that id.
type DuplicateError struct{ Seq uint64 }

func (e *DuplicateError) Error() string {
	return fmt.Sprintf("an event with this message id is already stored (#%d)", e.Seq)
}

// ErrConflict reports a command that kept losing races for its aggregate.
var ErrConflict = errors.New("aggregate keeps changing concurrently")

// Runner runs the commands of one kind of aggregate.
type Runner[S any] struct {
	store *events.Store
	kind  Kind[S]
	cfg   Config
	cache *cache[S]
	locks *locks

	qmu    sync.Mutex
	queues map[string]*aggQueue[S] // commands waiting for a round (Submit)
}

// New returns a runner for kind on store.
func New[S any](store *events.Store, kind Kind[S], cfg Config) *Runner[S] {
	cfg = cfg.withDefaults()
	return &Runner[S]{store: store, kind: kind, cfg: cfg, cache: newCache[S](cfg.CacheSize), locks: newLocks(), queues: map[string]*aggQueue[S]{}}
}

// Store returns the event store.
func (r *Runner[S]) Store() *events.Store { return r.store }

// Now returns the runner's clock reading.
func (r *Runner[S]) Now() time.Time { return r.cfg.Now() }

func (r *Runner[S]) clone(s S) S {
	if r.kind.Clone == nil {
		return s
	}
	return r.kind.Clone(s)
}

// Lock serializes commands on one aggregate within this process (a graph
// whose file is rewritten after each change, say) and returns the unlock.
// Across processes the log's check still decides.
func (r *Runner[S]) Lock(id string) func() { return r.locks.lock(id) }

// Cached returns the state this process cached for the aggregate, if any
// (not fresh: the log may have moved on).
func (r *Runner[S]) Cached(id string) (State[S], bool) {
	v, seq, head, ok := r.cache.get(id)
	if !ok {
		return State[S]{ID: id}, false
	}
	return State[S]{ID: id, Value: r.clone(v), Seq: seq, Head: head}, true
}

// Current returns the aggregate's state: the cached one when this process
// has one (not fresh: the log may have moved on), else folded from the
// log.
func (r *Runner[S]) Current(ctx context.Context, id string) (State[S], error) {
	if st, ok := r.Cached(id); ok {
		return st, nil
	}
	return r.Load(ctx, id)
}

// Load returns the aggregate's state folded from the log. A cached state
// is caught up with the events after it; otherwise every event is read.
func (r *Runner[S]) Load(ctx context.Context, id string) (State[S], error) {
	st, _ := r.Cached(id)
	return r.catchUp(ctx, st)
}

// catchUp folds the events after st.Seq into st.
func (r *Runner[S]) catchUp(ctx context.Context, st State[S]) (State[S], error) {
	if st.Seq == 0 && r.kind.Snapshot != nil {
		if err := r.startFromSnapshot(ctx, &st); err != nil {
			return st, fmt.Errorf("load %s %s: %w", r.kind.Name, st.ID, err)
		}
	}
	recs, _, err := r.store.LoadFrom(ctx, r.kind.Stream, r.kind.Filter(st.ID), st.Seq+1)
	if err != nil {
		return st, fmt.Errorf("load %s %s: %w", r.kind.Name, st.ID, err)
	}
	v := st.Value
	for _, rec := range recs {
		if v, err = r.kind.Fold(v, rec); err != nil {
			return st, fmt.Errorf("fold %s %s at #%d: %w", r.kind.Name, st.ID, rec.Seq, err)
		}
	}
	if len(recs) > 0 {
		last := recs[len(recs)-1]
		st.Seq, st.Head = last.Seq, events.Hash(last.Envelope)
	}
	if err := r.learnHead(ctx, &st); err != nil {
		return st, err
	}
	st.Value, st.Fresh = v, true
	if st.Seq > 0 {
		r.cache.put(st.ID, r.clone(v), st.Seq, st.Head)
	}
	return st, nil
}

// Forget drops the cached state of an aggregate (a finished task that
// will not be touched again).
func (r *Runner[S]) Forget(id string) { r.cache.drop(id) }

// Remember caches a state this process learned another way (a state built
// from a dispatch message), so a later command starts from it.
func (r *Runner[S]) Remember(st State[S]) {
	if st.Seq > 0 {
		r.cache.put(st.ID, r.clone(st.Value), st.Seq, st.Head)
	}
}

// Run decides against st and appends the decision with the aggregate's
// expected last sequence, deciding again on a caught-up state when
// another writer got there first (see the package doc). decide must not
// change the state it is given. It returns the state after the appended
// event, or the error decide returned on a state fresh from the log, or a
// conflict (wrapping ErrConflict) after MaxAttempts lost races, or the
// store's error (events.ErrPayloadTooLarge, an unavailable server).
func (r *Runner[S]) Run(ctx context.Context, st State[S], actor string, decide func(S) (Decision, error)) (State[S], error) {
	for attempt := 1; ; attempt++ {
		d, err := decide(st.Value)
		if err != nil {
			if st.Fresh {
				return st, err
			}
			if st, err = r.catchUp(ctx, st); err != nil {
				return st, err
			}
			continue
		}
		p, err := r.Pending(ctx, st, actor, d)
		if err != nil {
			return st, err
		}
		ack, err := r.store.AppendWithHeaders(ctx, p.Subject, p.Envelope, p.Expect, p.MsgID, p.Header)
		if errors.Is(err, events.ErrWrongLastSequence) {
			r.cache.drop(st.ID)
			if attempt >= r.cfg.MaxAttempts {
				return st, fmt.Errorf("%s %s: %w after %d attempts", r.kind.Name, st.ID, ErrConflict, attempt)
			}
			if err := sleep(ctx, r.cfg.Backoff(attempt)); err != nil {
				return st, err
			}
			seen := st.Seq
			if st, err = r.catchUp(ctx, st); err != nil {
				return st, err
			}
			if st.Seq == seen {
				// Nothing after the state's last event, yet the check
				// failed: its events are gone (a prune removed the
				// aggregate). Fold it again from the log.
				if st, err = r.catchUp(ctx, State[S]{ID: st.ID}); err != nil {
					return st, err
				}
			}
			continue
		}
		if err != nil {
			return st, err
		}
		if ack.Duplicate && d.MsgID != "" {
			// The message id names an event stored earlier, not this one
			// (an idempotency key).
			return st, &DuplicateError{Seq: ack.Seq}
		}
		return r.Appended(st, p, ack.Seq)
	}
}

// envelope builds the event of decision d on st: its actor is the
// authenticated caller when there is one (events.ActorFor), and it is
// chained to the aggregate's previous event (learning that event's hash
// when st came without it).
func (r *Runner[S]) envelope(ctx context.Context, st *State[S], d Decision, actor string) (events.Envelope, error) {
	if err := r.learnHead(ctx, st); err != nil {
		return events.Envelope{}, err
	}
	env, err := events.NewEnvelope(r.at(d), d.Type, st.ID, events.ActorFor(ctx, actor), r.kind.Schema, d.Payload)
	env.Prev = st.Head
	return env, err
}

// learnHead reads the hash of the aggregate's last event when st came
// without it (a state built from a message).
func (r *Runner[S]) learnHead(ctx context.Context, st *State[S]) error {
	if st.Seq == 0 || st.Head != "" {
		return nil
	}
	rec, err := r.store.Get(ctx, r.kind.Stream, st.Seq)
	if err != nil {
		return fmt.Errorf("%s %s: read the event to chain to: %w", r.kind.Name, st.ID, err)
	}
	st.Head = events.Hash(rec.Envelope)
	return nil
}

// Do runs a command on the aggregate's current state (see Current and
// Run).
func (r *Runner[S]) Do(ctx context.Context, id, actor string, decide func(S) (Decision, error)) (State[S], error) {
	st, err := r.Current(ctx, id)
	if err != nil {
		return st, err
	}
	return r.Run(ctx, st, actor, decide)
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Waiting returns how many submitted commands wait for a round on the
// aggregate (for metrics and tests).
func (r *Runner[S]) Waiting(id string) int {
	r.qmu.Lock()
	defer r.qmu.Unlock()
	if q := r.queues[id]; q != nil {
		return len(q.waiting)
	}
	return 0
}

// Idle reports whether no round runs or waits for the aggregate.
func (r *Runner[S]) Idle(id string) bool {
	r.qmu.Lock()
	defer r.qmu.Unlock()
	return r.queues[id] == nil
}

// CacheLen returns how many aggregate states the runner keeps cached.
func (r *Runner[S]) CacheLen() int { return r.cache.len() }
