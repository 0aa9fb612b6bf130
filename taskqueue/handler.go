package taskqueue

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/command"
	"github.com/trellis/trellis/events"
)

// Config configures the queue command handler. The zero value is usable.
type Config struct {
	// ClaimAckWait is the AckWait of each queue's claim consumer: how long a
	// dispatched-but-unacknowledged add stays invisible to other claimants
	// if its claimant dies between fetch and ack (default 30 s).
	ClaimAckWait time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// NextWait is how long queue next waits for a dispatch before answering
	// "nothing queued" (default 100 ms). A claimable task is returned as
	// soon as it is there; the wait covers the moment between an add being
	// acknowledged and the consumer learning of it, so a next right after
	// an add always sees the task.
	NextWait time.Duration
	// RetryBackoff is the wait before the next attempt after a failed
	// attempt number n (default DefaultRetryBackoff: 1 s doubling to 5 min,
	// with jitter).
	RetryBackoff func(attempt int) time.Duration
	// CacheSize bounds the per-process cache of recently touched tasks used
	// to skip a load before an append (default 65,536; the cache is only a
	// hint: a stale entry costs one rejected append and a catch-up).
	CacheSize int
	// Command tunes the command runner (retry policy); see command.Config.
	Command command.Config
	// TickGrace is how late a schedule's tick may be taken up and still add
	// its task (default trellis.DefaultTickGrace); a later tick is reported
	// as missed.
	TickGrace time.Duration
	// ScheduleSnapshotEvery is how many events a schedule folds after its
	// last snapshot before it snapshots itself (default
	// ScheduleSnapshotEvery).
	ScheduleSnapshotEvery int
}

func (c Config) withDefaults() Config {
	if c.ClaimAckWait <= 0 {
		c.ClaimAckWait = 30 * time.Second
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.CacheSize <= 0 {
		c.CacheSize = 65536
	}
	if c.RetryBackoff == nil {
		c.RetryBackoff = DefaultRetryBackoff
	}
	if c.NextWait <= 0 {
		c.NextWait = 100 * time.Millisecond
	}
	if c.TickGrace <= 0 {
		c.TickGrace = trellis.DefaultTickGrace
	}
	if c.ScheduleSnapshotEvery <= 0 {
		c.ScheduleSnapshotEvery = ScheduleSnapshotEvery
	}
	return c
}

// Handler is the task queue's command handler. It needs only the event store:
// any process with a NATS connection (a server, a CLI, a worker on another
// machine) can run it.
type Handler struct {
	store     *events.Store
	cfg       Config
	tasks     *command.Runner[*trellis.Task]
	controls  *command.Runner[*trellis.QueueControls]
	gates     *command.Runner[*Gate]
	uniques   *command.Runner[*UniqueHold]
	schedules *command.Runner[*trellis.Schedule]
	flows     flowCache

	consumerMu sync.Mutex // serializes consumer lookup and creation
	mu         sync.Mutex
	lanes      map[string][]jetstream.Consumer
}

// New returns the queue command handler.
func New(store *events.Store, cfg Config) *Handler {
	cfg = cfg.withDefaults()
	rc := cfg.Command
	rc.CacheSize, rc.Now = cfg.CacheSize, cfg.Now
	small := command.Config{MaxAttempts: rc.MaxAttempts, Backoff: rc.Backoff, Now: cfg.Now, CacheSize: 4096}
	return &Handler{store: store, cfg: cfg, lanes: map[string][]jetstream.Consumer{},
		tasks:     command.New(store, taskKind, rc),
		controls:  command.New(store, controlKind, command.Config{MaxAttempts: rc.MaxAttempts, Backoff: rc.Backoff, Now: cfg.Now, CacheSize: -1}),
		gates:     command.New(store, gateKind, small),
		uniques:   command.New(store, uniqueKind, small),
		schedules: command.New(store, scheduleKind, small),
		flows:     flowCache{entries: map[string]flowEntry{}},
	}
}

// Add appends an added event and returns the new task. With an idempotency
// key, a repeated add within the store's duplicate window returns the task
// the first add created.
func (q *Handler) Add(ctx context.Context, req trellis.AddTaskRequest) (*trellis.Task, error) {
	if err := req.Normalize(); err != nil {
		return nil, err
	}
	if err := q.checkParent(ctx, req.ParentID, "parent_id"); err != nil {
		return nil, err
	}
	return q.add(ctx, req)
}

// AddMany adds several tasks in one call, each its own aggregate with its
// own idempotency key: every request is checked first (a bad one refuses
// the whole call, naming it as tasks[i]), then the added events are
// appended together, so they share the store's group commits (one synced
// write per batch instead of one per task). Each task gets its own
// outcome in Tasks or Errors.
func (q *Handler) AddMany(ctx context.Context, req trellis.AddManyRequest) (*trellis.AddManyResult, error) {
	if err := req.Normalize(); err != nil {
		return nil, err
	}
	parents := map[string]bool{}
	for i, t := range req.Tasks {
		if t.ParentID == "" || parents[t.ParentID] {
			continue
		}
		if err := q.checkParent(ctx, t.ParentID, fmt.Sprintf("tasks[%d].parent_id", i)); err != nil {
			return nil, err
		}
		parents[t.ParentID] = true
	}
	// Plain adds share group commits (RunAll); adds with a delay,
	// prerequisites or a unique key are atomic commands of their own, run
	// concurrently, in the order of the request within one unique key.
	res := &trellis.AddManyResult{Tasks: make([]*trellis.Task, len(req.Tasks))}
	fail := func(i int, err error) {
		te := trellis.AsError(err)
		res.Errors = append(res.Errors, trellis.ItemError{Index: i, Code: te.Code, Field: te.Field, Message: te.Message})
	}
	var cmds []command.Independent[*trellis.Task]
	var plain, atomic []int
	now := q.cfg.Now()
	// Ids ascend in the request's order, and so do the plain adds' events
	// (AppendAll keeps a call's order): claims follow it.
	ids := events.NewIDs(now, len(req.Tasks))
	for i, t := range req.Tasks {
		if needsAtomic(t, now) {
			atomic = append(atomic, i)
			continue
		}
		cmds = append(cmds, q.addCommand(t, ids[i]))
		plain = append(plain, i)
	}
	errs := make([]error, len(req.Tasks))
	for j, o := range q.tasks.RunAll(ctx, cmds) {
		res.Tasks[plain[j]], errs[plain[j]] = q.added(ctx, o.State, o.Err)
	}
	for _, i := range atomic {
		res.Tasks[i], errs[i] = q.addAtomic(ctx, req.Tasks[i], atomicAdd{id: ids[i]})
	}
	for i, err := range errs {
		if err != nil {
			res.Tasks[i] = nil
			fail(i, err)
		}
	}
	return res, nil
}

// checkParent refuses a parent task that does not exist.
func (q *Handler) checkParent(ctx context.Context, parentID, field string) error {
	if parentID == "" {
		return nil
	}
	parent, _, err := q.load(ctx, parentID)
	if trellis.ErrorCode(err) == trellis.CodeNotFound || err == nil && parent == nil {
		return trellis.FieldError(field, "task %s does not exist", parentID)
	}
	return err
}

// Show returns the task folded from its events in the log.
func (q *Handler) Show(ctx context.Context, taskID string) (*trellis.Task, error) {
	if err := trellis.ValidateTaskID("task_id", taskID); err != nil {
		return nil, err
	}
	if st, ok := q.tasks.Cached(taskID); ok && (st.Value == nil || IsFinished(st.Value.Status)) {
		// A finished task cached here may have been pruned since (by
		// `trellis prune` or a server's retention, anywhere): catching up
		// from the cache would not notice its events are gone. Fold it
		// from the log.
		q.tasks.Forget(taskID)
	}
	st, err := q.loadState(ctx, taskID)
	if err == nil && st.Value == nil { // its tombstone: pruned
		q.tasks.Forget(taskID)
		return nil, errPruned(taskID)
	}
	return st.Value, err
}

// History returns every event of a task in order.
func (q *Handler) History(ctx context.Context, taskID string) ([]events.Recorded, error) {
	if err := trellis.ValidateTaskID("task_id", taskID); err != nil {
		return nil, err
	}
	recs, _, err := q.store.Load(ctx, events.StreamQueue, Filter(taskID))
	if err != nil {
		return nil, command.StoreError("load task", err)
	}
	if len(recs) == 0 {
		return nil, trellis.Errorf(trellis.CodeNotFound, "task %s does not exist", taskID)
	}
	return recs, nil
}

// load folds a task from the log.
func (q *Handler) load(ctx context.Context, taskID string) (*trellis.Task, uint64, error) {
	st, err := q.loadState(ctx, taskID)
	return st.Value, st.Seq, err
}

// loadState folds a task from the log (catching up a cached state).
func (q *Handler) loadState(ctx context.Context, taskID string) (taskState, error) {
	st, err := q.tasks.Load(ctx, taskID)
	if err != nil {
		return st, command.StoreError("load task", err)
	}
	if !st.Exists() {
		return st, trellis.Errorf(trellis.CodeNotFound, "task %s does not exist", taskID)
	}
	return st, nil
}

// errPruned is the not_found of a command on a task a prune removed (its
// tombstone may still be in the log: the fold ends with no task).
func errPruned(taskID string) error {
	return trellis.Errorf(trellis.CodeNotFound, "task %s does not exist (it was pruned)", taskID)
}

// current returns the task as this process last saw it (cached, possibly
// behind the log), else folded from the log.
func (q *Handler) current(ctx context.Context, taskID string) (taskState, error) {
	st, err := q.tasks.Current(ctx, taskID)
	if err != nil {
		return st, command.StoreError("load task", err)
	}
	if !st.Exists() {
		return st, trellis.Errorf(trellis.CodeNotFound, "task %s does not exist", taskID)
	}
	if st.Value == nil { // its tombstone: pruned
		return st, errPruned(taskID)
	}
	return st, nil
}
