package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/command"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/taskqueue"
)

// Limits of the workflow API. They are part of the contract and documented
// in docs/workflows.md.
const (
	// MaxInputBytes bounds a run's input and a signal's data.
	MaxInputBytes = 1 << 20
	// MaxVersion bounds a workflow's version number.
	MaxVersion = 1_000_000
)

var nameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// ValidateName checks a workflow or signal name: 1 to 64 letters, digits,
// '_' or '-'.
func ValidateName(field, name string) error {
	if !nameRE.MatchString(name) {
		return trellis.FieldError(field, "must be 1 to 64 letters, digits, '_' or '-', got %q", clip(name))
	}
	return nil
}

// ValidateRunID checks a run id: a subject token of at most 128 bytes.
func ValidateRunID(id string) error {
	if len(id) == 0 || len(id) > 128 || !events.ValidToken(id) {
		return trellis.FieldError("run_id", "must be a run id (1 to 128 characters, no '.', '*', '>' or spaces), got %q", clip(id))
	}
	return nil
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// Config configures an Engine. The zero value is usable.
type Config struct {
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Logger receives the engine's logs (default slog.Default()).
	Logger *slog.Logger
	// Queue configures the task queue handler the engine dispatches runs
	// and awaited tasks through.
	Queue taskqueue.Config
	// PollInterval is how often a run awaiting queue tasks looks at them
	// when no end woke it first (default 2 s).
	PollInterval time.Duration
}

func (c Config) withDefaults() Config {
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.PollInterval <= 0 {
		c.PollInterval = 2 * time.Second
	}
	return c
}

// Engine runs durable workflows on the event store: it starts runs, takes
// signals and cancellations, and advances the runs of the workflows
// registered with it (Serve). It is safe for concurrent use.
type Engine struct {
	store *events.Store
	cfg   Config
	queue *taskqueue.Handler
	runs  *command.Runner[*Run]
	defs  *command.Runner[*Def]

	cancels cancelWatch

	mu       sync.RWMutex
	registry map[string]map[int]registered
	defCache map[string]cachedDef
}

// New returns an engine on store.
func New(store *events.Store, cfg Config) *Engine {
	cfg = cfg.withDefaults()
	qc := cfg.Queue
	if qc.Now == nil {
		qc.Now = cfg.Now
	}
	return &Engine{
		store: store, cfg: cfg, queue: taskqueue.New(store, qc),
		runs: command.New(store, command.Kind[*Run]{Name: "workflow run", Stream: events.StreamWorkflows, Filter: RunFilter,
			Fold: fold, Clone: (*Run).clone, Schema: 1}, command.Config{Now: cfg.Now}),
		defs: command.New(store, command.Kind[*Def]{Name: "workflow", Stream: events.StreamWorkflows, Filter: DefFilter,
			Fold: foldDef, Clone: (*Def).clone, Schema: 1}, command.Config{Now: cfg.Now, CacheSize: -1}),
		registry: map[string]map[int]registered{},
		defCache: map[string]cachedDef{},
	}
}

// Queue returns the task queue handler the engine dispatches through.
func (e *Engine) Queue() *taskqueue.Handler { return e.queue }

// Def is a workflow's definition as pools registered it: the versions
// hosted and their dispatch queues.
type Def struct {
	Name     string         `json:"name"`
	Versions map[int]string `json:"versions"` // version → queue
}

func (d *Def) clone() *Def {
	if d == nil {
		return nil
	}
	c := &Def{Name: d.Name, Versions: map[int]string{}}
	for k, v := range d.Versions {
		c.Versions[k] = v
	}
	return c
}

// Latest returns the highest registered version.
func (d *Def) Latest() int {
	v := 0
	for k := range d.Versions {
		v = max(v, k)
	}
	return v
}

func foldDef(d *Def, rec events.Recorded) (*Def, error) {
	if d == nil {
		d = &Def{Name: rec.AggregateID, Versions: map[int]string{}}
	}
	if rec.Type == Registered {
		var p RegisteredPayload
		if err := rec.DecodePayload(&p); err != nil {
			return nil, err
		}
		d.Versions[p.Version] = p.Queue
	}
	return d, nil
}

// QueueFor is the dispatch queue of a workflow version: base (default
// "wf-<name>") followed by "-v<version>", so pools of one version never
// claim the runs of another.
func QueueFor(base, name string, version int) string {
	if base == "" {
		base = "wf-" + name
	}
	return base + "-v" + strconv.Itoa(version)
}

// register records that this process hosts name@version on queue (once per
// version and queue).
func (e *Engine) register(ctx context.Context, name string, version int, queue string) error {
	st, err := e.defs.Load(ctx, name)
	if err != nil {
		return command.StoreError("load workflow "+name, err)
	}
	_, err = e.defs.Run(ctx, st, "", func(d *Def) (command.Decision, error) {
		if d != nil && d.Versions[version] == queue {
			return command.Decision{}, errAlready
		}
		return command.Decision{Subject: DefSubject(name, Registered), Type: Registered, Payload: RegisteredPayload{Version: version, Queue: queue}}, nil
	})
	if errors.Is(err, errAlready) {
		return nil
	}
	return command.StoreError("register workflow "+name, err)
}

var errAlready = errors.New("already recorded")

// defTTL is how long Start trusts a workflow definition it read.
const defTTL = time.Second

// definition returns a workflow's registered versions, read from the log
// at most once a defTTL (a version registered meanwhile is seen within
// it).
func (e *Engine) definition(ctx context.Context, name string) (*Def, error) {
	e.mu.RLock()
	c, ok := e.defCache[name]
	e.mu.RUnlock()
	if ok && e.cfg.Now().Sub(c.at) < defTTL {
		return c.def, nil
	}
	d, err := e.Definition(ctx, name)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	e.defCache[name] = cachedDef{def: d, at: e.cfg.Now()}
	e.mu.Unlock()
	return d, nil
}

type cachedDef struct {
	def *Def
	at  time.Time
}

// Definition returns a workflow's registered versions.
func (e *Engine) Definition(ctx context.Context, name string) (*Def, error) {
	if err := ValidateName("workflow", name); err != nil {
		return nil, err
	}
	st, err := e.defs.Load(ctx, name)
	if err != nil {
		return nil, command.StoreError("load workflow "+name, err)
	}
	if st.Value == nil || len(st.Value.Versions) == 0 {
		return nil, trellis.Errorf(trellis.CodeNotFound, "workflow %q: no worker has registered it (start a worker that hosts it, e.g. go run ./workflow/example/order worker)", name)
	}
	return st.Value, nil
}

// StartRequest starts a run.
type StartRequest struct {
	// Workflow names the workflow.
	Workflow string `json:"workflow"`
	// Version pins the version (0: the highest registered).
	Version int `json:"version,omitempty"`
	// Input is the run's JSON input (default null).
	Input json.RawMessage `json:"input,omitempty"`
	// RunID chooses the run id (default a new ULID); starting an id that
	// exists returns that run.
	RunID string `json:"run_id,omitempty"`
	// Actor is recorded on the event.
	Actor string `json:"actor,omitempty"`

	parent    string
	parentPos int
}

// Normalize validates the request.
func (r *StartRequest) Normalize() error {
	if err := ValidateName("workflow", r.Workflow); err != nil {
		return err
	}
	if r.Version < 0 || r.Version > MaxVersion {
		return trellis.FieldError("version", "must be 0 (latest) to %d, got %d", MaxVersion, r.Version)
	}
	if len(r.Input) == 0 {
		r.Input = json.RawMessage("null")
	}
	if len(r.Input) > MaxInputBytes {
		return trellis.FieldError("input", "is %d bytes; at most %d allowed", len(r.Input), MaxInputBytes)
	}
	if !json.Valid(r.Input) {
		return trellis.FieldError("input", "is not valid JSON")
	}
	if r.RunID != "" {
		if err := ValidateRunID(r.RunID); err != nil {
			return err
		}
	}
	return nil
}

// Start starts a run of a registered workflow and dispatches it to the
// pools hosting its version.
func (e *Engine) Start(ctx context.Context, req StartRequest) (*Run, error) {
	if err := req.Normalize(); err != nil {
		return nil, err
	}
	def, err := e.definition(ctx, req.Workflow)
	if err != nil {
		return nil, err
	}
	version := req.Version
	if version == 0 {
		version = def.Latest()
	}
	queue, ok := def.Versions[version]
	if !ok {
		have := slices.Sorted(maps.Keys(def.Versions))
		return nil, trellis.Errorf(trellis.CodeNotFound, "workflow %q has no version %d (registered: %v)", req.Workflow, version, have)
	}
	id := req.RunID
	if id == "" {
		id = events.NewID(e.cfg.Now())
	}
	// Decided as a new run: when the id exists, the check (no event
	// yet) fails, the runner catches up and the decision returns it.
	st := command.State[*Run]{ID: id, Fresh: true}
	st, err = e.runs.Run(ctx, st, req.Actor, func(r *Run) (command.Decision, error) {
		if r != nil {
			return command.Decision{}, errAlready
		}
		return command.Decision{Subject: RunSubject(id, Started), Type: Started, Payload: StartedPayload{
			Workflow: req.Workflow, Version: version, Queue: queue, Input: req.Input, Parent: req.parent, ParentPos: req.parentPos}}, nil
	})
	if errors.Is(err, errAlready) {
		return st.Value, nil
	}
	if err != nil {
		return nil, command.StoreError("start run", err)
	}
	if err := e.wake(ctx, st.Value, "start", wakeOpts{}); err != nil {
		return st.Value, err
	}
	return st.Value, nil
}

// wakeOpts shapes an activation: when it becomes due, which tasks it
// waits for.
type wakeOpts struct {
	at    time.Time
	after []string
}

// wake dispatches an activation of the run: a queue task on the run's
// queue that a pool hosting its version claims. key makes it idempotent.
func (e *Engine) wake(ctx context.Context, r *Run, key string, o wakeOpts) error {
	req := trellis.AddTaskRequest{
		Queue:          r.Queue,
		Objective:      fmt.Sprintf("advance workflow run %s (%s v%d)", r.RunID, r.Workflow, r.Version),
		Metadata:       map[string]string{"workflow_run": r.RunID, "workflow": r.Workflow, "wake": clip(key)},
		MaxAttempts:    trellis.MaxAttemptsLimit,
		IdempotencyKey: clipKey(r.RunID + "/" + key),
		After:          o.after,
	}
	if !o.at.IsZero() {
		if d := o.at.Sub(e.cfg.Now()); d > 0 {
			req.RunAt = o.at.UTC().Format(time.RFC3339Nano)
		}
	}
	if _, err := e.queue.Add(ctx, req); err != nil {
		return fmt.Errorf("dispatch run %s: %w", r.RunID, err)
	}
	return nil
}

// clipKey keeps an idempotency key within the queue's key limit.
func clipKey(k string) string {
	if len(k) > trellis.MaxKeyBytes {
		return k[:trellis.MaxKeyBytes]
	}
	return k
}

// Show returns a run folded from its events.
func (e *Engine) Show(ctx context.Context, runID string) (*Run, error) {
	if err := ValidateRunID(runID); err != nil {
		return nil, err
	}
	if st, ok := e.runs.Cached(runID); ok && (st.Value == nil || st.Value.Status.Terminal()) {
		// A finished run cached here may have been pruned since (by
		// `trellis prune` or a server's retention, anywhere): catching up
		// from the cache would not notice its events are gone. Fold it
		// from the log.
		e.runs.Forget(runID)
	}
	st, err := e.runs.Load(ctx, runID)
	if err != nil {
		return nil, command.StoreError("load run", err)
	}
	if st.Value == nil {
		e.runs.Forget(runID)
		return nil, trellis.Errorf(trellis.CodeNotFound, "workflow run %q does not exist", runID)
	}
	return st.Value, nil
}

// SignalRequest sends a signal to a run.
type SignalRequest struct {
	RunID string          `json:"run_id"`
	Name  string          `json:"name"`
	Data  json.RawMessage `json:"data,omitempty"`
	Actor string          `json:"actor,omitempty"`
}

// Signal records a signal on a run and wakes it. A signal to a finished
// run is a conflict.
func (e *Engine) Signal(ctx context.Context, req SignalRequest) (*Run, error) {
	if err := ValidateRunID(req.RunID); err != nil {
		return nil, err
	}
	if err := ValidateName("name", req.Name); err != nil {
		return nil, err
	}
	if len(req.Data) == 0 {
		req.Data = json.RawMessage("null")
	}
	if len(req.Data) > MaxInputBytes {
		return nil, trellis.FieldError("data", "is %d bytes; at most %d allowed", len(req.Data), MaxInputBytes)
	}
	if !json.Valid(req.Data) {
		return nil, trellis.FieldError("data", "is not valid JSON")
	}
	st, err := e.runs.Do(ctx, req.RunID, req.Actor, func(r *Run) (command.Decision, error) {
		if r == nil {
			return command.Decision{}, trellis.Errorf(trellis.CodeNotFound, "workflow run %q does not exist", req.RunID)
		}
		if r.Status.Terminal() {
			return command.Decision{}, trellis.Errorf(trellis.CodeConflict, "workflow run %s is %s: it takes no more signals", req.RunID, r.Status)
		}
		return command.Decision{Subject: RunSubject(req.RunID, SignalReceived), Type: SignalReceived, Payload: SignalPayload{Name: req.Name, Data: req.Data}}, nil
	})
	if err != nil {
		return nil, command.StoreError("signal run", err)
	}
	return st.Value, e.wake(ctx, st.Value, "signal-"+strconv.Itoa(len(st.Value.Signals)), wakeOpts{})
}

// CancelRequest cancels a run.
type CancelRequest struct {
	RunID  string `json:"run_id"`
	Reason string `json:"reason,omitempty"`
	Actor  string `json:"actor,omitempty"`
}

// Cancel asks a run to stop: its running step's context is cancelled, no
// further step starts, the compensations of its completed steps run in
// reverse order and it ends as cancelled.
func (e *Engine) Cancel(ctx context.Context, req CancelRequest) (*Run, error) {
	if err := ValidateRunID(req.RunID); err != nil {
		return nil, err
	}
	if len(req.Reason) > trellis.MaxItemBytes {
		return nil, trellis.FieldError("reason", "is %d bytes; at most %d allowed", len(req.Reason), trellis.MaxItemBytes)
	}
	st, err := e.runs.Do(ctx, req.RunID, req.Actor, func(r *Run) (command.Decision, error) {
		if r == nil {
			return command.Decision{}, trellis.Errorf(trellis.CodeNotFound, "workflow run %q does not exist", req.RunID)
		}
		if r.Status.Terminal() {
			return command.Decision{}, trellis.Errorf(trellis.CodeConflict, "workflow run %s is already %s", req.RunID, r.Status)
		}
		if r.CancelRequested {
			return command.Decision{}, errAlready
		}
		return command.Decision{Subject: RunSubject(req.RunID, CancelRequested), Type: CancelRequested, Payload: EndPayload{Reason: req.Reason}}, nil
	})
	if errors.Is(err, errAlready) {
		return st.Value, nil
	}
	if err != nil {
		return nil, command.StoreError("cancel run", err)
	}
	return st.Value, e.wake(ctx, st.Value, "cancel-"+strconv.Itoa(st.Value.Events), wakeOpts{})
}

// RetryRequest retries a failed run.
type RetryRequest struct {
	RunID string `json:"run_id"`
	Actor string `json:"actor,omitempty"`
}

// BoundActor names the field of who acts (see auth.ActorBound).
func (r *StartRequest) BoundActor() (string, *string) { return "actor", &r.Actor }

// BoundActor names the field of who acts (see auth.ActorBound).
func (r *SignalRequest) BoundActor() (string, *string) { return "actor", &r.Actor }

// BoundActor names the field of who acts (see auth.ActorBound).
func (r *CancelRequest) BoundActor() (string, *string) { return "actor", &r.Actor }

// BoundActor names the field of who acts (see auth.ActorBound).
func (r *RetryRequest) BoundActor() (string, *string) { return "actor", &r.Actor }

// Retry resumes a failed run from its failed step: the journal is cut back
// to that step (compensations recorded after it are dropped from the
// journal; their effects stay), and the run is dispatched again. A run
// that is not over is woken (dispatched again), which is harmless.
func (e *Engine) Retry(ctx context.Context, req RetryRequest) (*Run, error) {
	if err := ValidateRunID(req.RunID); err != nil {
		return nil, err
	}
	st, err := e.runs.Do(ctx, req.RunID, req.Actor, func(r *Run) (command.Decision, error) {
		if r == nil {
			return command.Decision{}, trellis.Errorf(trellis.CodeNotFound, "workflow run %q does not exist", req.RunID)
		}
		switch r.Status {
		case StatusFailed:
			pos := len(r.Journal)
			for _, en := range r.Journal {
				if en.Status == EntryFailed {
					pos = en.Pos
					break
				}
			}
			return command.Decision{Subject: RunSubject(req.RunID, Retried), Type: Retried, Payload: EndPayload{Pos: pos}}, nil
		case StatusCompleted, StatusCancelled:
			return command.Decision{}, trellis.Errorf(trellis.CodeConflict, "workflow run %s is %s: only a failed run can be retried", req.RunID, r.Status)
		}
		return command.Decision{Subject: RunSubject(req.RunID, Woken), Type: Woken, Payload: EndPayload{}}, nil
	})
	if err != nil {
		return nil, command.StoreError("retry run", err)
	}
	return st.Value, e.wake(ctx, st.Value, "retry-"+strconv.Itoa(st.Value.Events), wakeOpts{})
}

// ListRequest filters workflow list.
type ListRequest struct {
	Status   Status `json:"status,omitempty"`
	Workflow string `json:"workflow,omitempty"`
	Limit    int    `json:"limit,omitempty"`
}

// RunSummary is one row of workflow list.
type RunSummary struct {
	RunID    string    `json:"run_id"`
	Workflow string    `json:"workflow"`
	Version  int       `json:"version"`
	Status   Status    `json:"status"`
	Steps    int       `json:"steps"`
	Error    string    `json:"error,omitempty"`
	Started  time.Time `json:"started"`
	Updated  time.Time `json:"updated"`
}

// VersionSummary tells, per registered workflow version, how many runs are
// still in flight: an old version's pools can retire once it has none.
type VersionSummary struct {
	Workflow string `json:"workflow"`
	Version  int    `json:"version"`
	Queue    string `json:"queue"`
	InFlight int    `json:"in_flight"`
}

// RunList is the answer of workflow list.
type RunList struct {
	Runs     []RunSummary     `json:"runs"`
	Versions []VersionSummary `json:"versions"`
	Counts   map[Status]int   `json:"counts"`
}

// List folds the workflow stream into the runs (newest first) and the
// versions with their runs in flight.
func (e *Engine) List(ctx context.Context, req ListRequest) (*RunList, error) {
	if req.Status != "" && !req.Status.Valid() {
		return nil, trellis.FieldError("status", "must be one of running, sleeping, waiting, completed, failed, cancelled, got %q", clip(string(req.Status)))
	}
	if req.Workflow != "" {
		if err := ValidateName("workflow", req.Workflow); err != nil {
			return nil, err
		}
	}
	runs := map[string]*Run{}
	var order []string
	defs := map[string]*Def{}
	err := e.store.Read(ctx, events.StreamWorkflows, "trellis.workflows.>", 0, func(rec events.Recorded) error {
		if id, ok := runIDOf(rec.Subject); ok {
			r := runs[id]
			if r == nil {
				order = append(order, id)
			}
			nr, err := fold(r, rec)
			if err != nil {
				return nil // a bad event: skipped here, reported by show
			}
			runs[id] = nr
			return nil
		}
		if rec.Type == Registered {
			d, err := foldDef(defs[rec.AggregateID], rec)
			if err == nil {
				defs[rec.AggregateID] = d
			}
		}
		return nil
	})
	if err != nil {
		return nil, command.StoreError("list runs", err)
	}
	out := &RunList{Runs: []RunSummary{}, Versions: []VersionSummary{}, Counts: map[Status]int{}}
	inFlight := map[string]map[int]int{}
	for i := len(order) - 1; i >= 0; i-- {
		r := runs[order[i]]
		if r == nil {
			continue
		}
		out.Counts[r.Status]++
		if !r.Status.Terminal() {
			if inFlight[r.Workflow] == nil {
				inFlight[r.Workflow] = map[int]int{}
			}
			inFlight[r.Workflow][r.Version]++
		}
		if (req.Status != "" && r.Status != req.Status) || (req.Workflow != "" && r.Workflow != req.Workflow) {
			continue
		}
		if req.Limit > 0 && len(out.Runs) >= req.Limit {
			continue
		}
		steps := 0
		for _, en := range r.Journal {
			if en.Kind == KindStep {
				steps++
			}
		}
		out.Runs = append(out.Runs, RunSummary{RunID: r.RunID, Workflow: r.Workflow, Version: r.Version, Status: r.Status,
			Steps: steps, Error: r.Error, Started: r.Started, Updated: r.Updated})
	}
	for _, name := range slices.Sorted(maps.Keys(defs)) {
		d := defs[name]
		for _, v := range slices.Sorted(maps.Keys(d.Versions)) {
			out.Versions = append(out.Versions, VersionSummary{Workflow: name, Version: v, Queue: d.Versions[v], InFlight: inFlight[name][v]})
		}
	}
	return out, nil
}

// Service is the workflow API every transport shares: the engine in
// process, the NATS API client remotely.
type Service interface {
	// Start starts a run of a registered workflow.
	Start(ctx context.Context, req StartRequest) (*Run, error)
	// Show returns a run folded from the log.
	Show(ctx context.Context, runID string) (*Run, error)
	// List returns the runs and the versions with runs in flight.
	List(ctx context.Context, req ListRequest) (*RunList, error)
	// Signal sends a signal to a run.
	Signal(ctx context.Context, req SignalRequest) (*Run, error)
	// Cancel asks a run to stop.
	Cancel(ctx context.Context, req CancelRequest) (*Run, error)
	// Retry resumes a failed run from its failed step.
	Retry(ctx context.Context, req RetryRequest) (*Run, error)
}

var _ Service = (*Engine)(nil)
