package agentmemory

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/command"
	"github.com/trellis/trellis/events"
)

// Cache bounds of the per-process aggregate caches. An evicted entry is
// simply loaded again from the log when next used; the concurrency check
// of every append (DESIGN.md rule 2) keeps decisions right either way.
const (
	// AgentTaskCacheSize bounds the agent tasks a process keeps folded.
	AgentTaskCacheSize = 4096
	// MemoryScopeCacheSize bounds the memory scopes a process keeps folded.
	MemoryScopeCacheSize = 1024
)

// Handler is the command side of agent memory: agent tasks (TRELLIS_TASKS,
// one aggregate per task name) and agent memory (TRELLIS_MEMORY, one
// aggregate per memory scope). It keeps a per-process cache of the
// aggregates it touched and catches up on newer events before deciding.
type Handler struct {
	store   *events.Store
	now     func() time.Time
	resolve func(ctx context.Context, taskID string) (string, error)

	tasks  *command.Runner[*events.AgentTask]   // at most AgentTaskCacheSize cached
	scopes *command.Runner[*events.MemoryState] // at most MemoryScopeCacheSize cached
}

// taskEntry is an agent task locked for a command: its state and the
// unlock.
type taskEntry struct {
	t      *events.AgentTask
	st     command.State[*events.AgentTask]
	unlock func()
}

// scopeEntry is a memory scope locked for a command.
type scopeEntry struct {
	m      *events.MemoryState
	st     command.State[*events.MemoryState]
	unlock func()
}

// agentTaskKind is an agent task: every event of trellis.tasks.<name>.
// The fold changes the state it is given; commands hold the task's lock.
var agentTaskKind = command.Kind[*events.AgentTask]{
	Name:   "agent task",
	Stream: events.StreamTasks,
	Filter: events.TaskNameFilter,
	Fold:   events.ApplyAgentTask,
	Clone: func(t *events.AgentTask) *events.AgentTask {
		if t == nil {
			return nil
		}
		return cloneTask(t)
	},
	Schema: events.TasksSchema,
}

// scopeKind is a memory scope: every event of trellis.memory.<scope>. Its
// state (observations and facts) is large, so the fold changes it in
// place: every command holds the scope's lock, and commands on a scope
// are never combined (command.Runner.Submit).
var scopeKind = command.Kind[*events.MemoryState]{
	Name:   "memory scope",
	Stream: events.StreamMemory,
	Filter: events.MemoryFilter,
	Fold: func(m *events.MemoryState, rec events.Recorded) (*events.MemoryState, error) {
		if m == nil {
			m = events.NewMemoryState(rec.AggregateID)
		}
		return m, events.ApplyMemory(m, rec)
	},
	Schema: events.MemorySchema,
}

// NewHandler returns the memory command handler. resolve maps a task id to
// its name (the task views projection).
func NewHandler(store *events.Store, resolve func(ctx context.Context, taskID string) (string, error)) *Handler {
	return newHandler(store, resolve, AgentTaskCacheSize, MemoryScopeCacheSize)
}

// newHandler is NewHandler with the cache bounds.
func newHandler(store *events.Store, resolve func(ctx context.Context, taskID string) (string, error), taskCache, scopeCache int) *Handler {
	m := &Handler{store: store, now: time.Now, resolve: resolve}
	now := func() time.Time { return m.now() }
	// A task command that loses a race to another process is a conflict
	// for the caller to retry (its checks were made on the older state).
	m.tasks = command.New(store, agentTaskKind, command.Config{MaxAttempts: 1, CacheSize: taskCache, Now: now})
	m.scopes = command.New(store, scopeKind, command.Config{MaxAttempts: 64, CacheSize: scopeCache, Now: now})
	return m
}

// taskName resolves a task given by name or id.
func (m *Handler) taskName(ctx context.Context, task string) (string, error) {
	if task == "" {
		return "", trellis.FieldError("task", "must not be empty")
	}
	if trellis.ValidateTaskID("task", task) == nil {
		return m.resolve(ctx, task)
	}
	if err := trellis.ValidateTaskName("task", task); err != nil {
		return "", err
	}
	return task, nil
}

// lockTask locks a task name's aggregate and catches it up.
func (m *Handler) lockTask(ctx context.Context, name string) (*taskEntry, error) {
	unlock := m.tasks.Lock(name)
	st, err := m.tasks.Load(ctx, name)
	if err != nil {
		unlock()
		return nil, command.StoreError("load task "+name, err)
	}
	return &taskEntry{t: st.Value, st: st, unlock: unlock}, nil
}

// openTask locks the open task of a name (or id).
func (m *Handler) openTask(ctx context.Context, task string) (*taskEntry, error) {
	name, err := m.taskName(ctx, task)
	if err != nil {
		return nil, err
	}
	e, err := m.lockTask(ctx, name)
	if err != nil {
		return nil, err
	}
	if e.t == nil {
		e.unlock()
		return nil, trellis.Errorf(trellis.CodeNotFound, "no task %q", task)
	}
	if name != task && e.t.TaskID != task {
		// An older task of this name, completed before the current one
		// was created.
		e.unlock()
		return nil, trellis.Errorf(trellis.CodeConflict, "task %s is completed (the task named %s now is %s)", task, name, e.t.TaskID)
	}
	if e.t.Status != events.AgentTaskStatusOpen {
		e.unlock()
		return nil, trellis.Errorf(trellis.CodeConflict, "task %s (%s) is %s", e.t.Name, e.t.TaskID, e.t.Status)
	}
	return e, nil
}

// appendTask appends an event to a task name's aggregate and folds it.
func (m *Handler) appendTask(ctx context.Context, e *taskEntry, name, typ, actor string, payload any) error {
	st, err := m.tasks.Run(ctx, e.st, actor, func(*events.AgentTask) (command.Decision, error) {
		return command.Decision{Subject: events.TasksSubject(name, typ), Type: typ, Payload: payload}, nil
	})
	if errors.Is(err, command.ErrConflict) {
		return trellis.Errorf(trellis.CodeConflict, "task %s changed concurrently; try again", name)
	}
	if err != nil {
		return command.StoreError("append "+typ, err)
	}
	e.st, e.t = st, st.Value
	return nil
}

// TaskCreate creates a task; its name must not be taken by an open task.
func (m *Handler) TaskCreate(ctx context.Context, req trellis.AgentTaskCreateRequest) (*events.AgentTask, error) {
	if err := req.Normalize(); err != nil {
		return nil, err
	}
	e, err := m.lockTask(ctx, req.Name)
	if err != nil {
		return nil, err
	}
	defer e.unlock()
	if e.t != nil && e.t.Status == events.AgentTaskStatusOpen {
		return nil, trellis.Errorf(trellis.CodeConflict, "a task named %q is already open (task_id %s); names are unique among open tasks", req.Name, e.t.TaskID)
	}
	id := events.NewID(m.now())
	p := events.AgentTaskCreatedPayload{TaskID: id, Name: req.Name, Description: req.Description, ParentBranch: req.Parent,
		Objectives: []events.ObjectiveSpec{}, MemoryScope: events.TaskScope(id)}
	for i, o := range req.Objectives {
		p.Objectives = append(p.Objectives, events.ObjectiveSpec{ObjectiveID: fmt.Sprintf("obj-%d", i+1), Description: o})
	}
	if err := m.appendTask(ctx, e, req.Name, events.AgentTaskCreated, "trellis", p); err != nil {
		return nil, err
	}
	return cloneTask(e.t), nil
}

// TaskJoin assigns an agent to an open task.
func (m *Handler) TaskJoin(ctx context.Context, req trellis.AgentTaskJoinRequest) (*trellis.AgentTaskJoinResult, error) {
	if err := trellis.ValidateAgentID("agent_id", req.Agent); err != nil {
		return nil, err
	}
	if strings.TrimSpace(req.Role) == "" || len(req.Role) > 64 {
		return nil, trellis.FieldError("role", "must be 1-64 characters")
	}
	e, err := m.openTask(ctx, req.Task)
	if err != nil {
		return nil, err
	}
	defer e.unlock()
	if _, ok := e.t.Agent(req.Agent); ok {
		return nil, trellis.Errorf(trellis.CodeConflict, "agent %s already joined task %s", req.Agent, e.t.Name)
	}
	if err := m.appendTask(ctx, e, e.t.Name, events.AgentJoined, req.Agent, events.AgentJoinedPayload{TaskID: e.t.TaskID, AgentID: req.Agent, Role: req.Role}); err != nil {
		return nil, err
	}
	return &trellis.AgentTaskJoinResult{TaskID: e.t.TaskID, AgentID: req.Agent, Role: req.Role, Branch: events.AgentBranch(e.t.Name, req.Agent)}, nil
}

// objectiveMoves returns the statuses an objective in status s may move
// to, and false for an unknown status.
func objectiveMoves(s string) ([]string, bool) {
	switch s {
	case "todo":
		return []string{"active", "done", "blocked"}, true
	case "active":
		return []string{"done", "blocked", "todo"}, true
	case "blocked":
		return []string{"active", "todo"}, true
	case "done":
		return []string{}, true
	}
	return nil, false
}

// TaskObjective changes an objective's status (todo → active → done |
// blocked; done is final).
func (m *Handler) TaskObjective(ctx context.Context, req trellis.AgentTaskObjectiveRequest) (*events.AgentTask, error) {
	if _, ok := objectiveMoves(req.Status); !ok {
		return nil, trellis.FieldError("status", "%q is not an objective status: todo, active, done or blocked", req.Status)
	}
	if req.Agent != "" {
		if err := trellis.ValidateAgentID("agent_id", req.Agent); err != nil {
			return nil, err
		}
	}
	e, err := m.openTask(ctx, req.Task)
	if err != nil {
		return nil, err
	}
	defer e.unlock()
	o, ok := e.t.Objective(req.ObjectiveID)
	if !ok {
		return nil, trellis.Errorf(trellis.CodeNotFound, "task %s has no objective %q", e.t.Name, req.ObjectiveID)
	}
	moves, _ := objectiveMoves(o.Status)
	allowed := false
	for _, s := range moves {
		allowed = allowed || s == req.Status
	}
	if !allowed {
		next := strings.Join(moves, ", ")
		if next == "" {
			next = "none, it is final"
		}
		return nil, trellis.Errorf(trellis.CodeConflict, "objective %s cannot go from %s to %s (allowed from %s: %s)",
			req.ObjectiveID, o.Status, req.Status, o.Status, next)
	}
	if err := m.appendTask(ctx, e, e.t.Name, events.ObjectiveUpdated, events.ActorOr(req.Agent), events.ObjectiveUpdatedPayload{
		TaskID: e.t.TaskID, ObjectiveID: req.ObjectiveID, From: o.Status, Status: req.Status, AgentID: req.Agent,
	}); err != nil {
		return nil, err
	}
	return cloneTask(e.t), nil
}

// Task returns the current task of a name or id (open or completed): an
// id of an older task of the name is not found here (the task views have
// it, see Service.TaskShow).
func (m *Handler) Task(ctx context.Context, task string) (*events.AgentTask, error) {
	name, err := m.taskName(ctx, task)
	if err != nil {
		return nil, err
	}
	e, err := m.lockTask(ctx, name)
	if err != nil {
		return nil, err
	}
	defer e.unlock()
	if e.t == nil || (name != task && e.t.TaskID != task) {
		return nil, trellis.Errorf(trellis.CodeNotFound, "no task %q", task)
	}
	return cloneTask(e.t), nil
}

func cloneTask(t *events.AgentTask) *events.AgentTask {
	c := *t
	c.Objectives = append([]events.TaskObjective(nil), t.Objectives...)
	c.Agents = append([]events.TaskAgent(nil), t.Agents...)
	return &c
}
