package handlers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
)

// Memory is the command side of seed 004: agent tasks (TRELLIS_TASKS,
// one aggregate per task name) and agent memory (TRELLIS_MEMORY, one
// aggregate per memory scope). It keeps a per-process cache of the
// aggregates it touched and catches up on newer events before deciding.
type Memory struct {
	store   *events.Store
	now     func() time.Time
	resolve func(ctx context.Context, taskID string) (string, error)

	mu     sync.Mutex
	tasks  map[string]*taskEntry
	scopes map[string]*scopeEntry
}

type taskEntry struct {
	mu  sync.Mutex
	t   *events.AgentTask
	seq uint64
}

type scopeEntry struct {
	mu  sync.Mutex
	m   *events.MemoryState
	seq uint64
}

// NewMemory returns the memory command handler. resolve maps a task id to
// its name (the task views projection).
func NewMemory(store *events.Store, resolve func(ctx context.Context, taskID string) (string, error)) *Memory {
	return &Memory{store: store, now: time.Now, resolve: resolve, tasks: map[string]*taskEntry{}, scopes: map[string]*scopeEntry{}}
}

// taskName resolves a task given by name or id.
func (m *Memory) taskName(ctx context.Context, task string) (string, error) {
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
func (m *Memory) lockTask(ctx context.Context, name string) (*taskEntry, error) {
	m.mu.Lock()
	e, ok := m.tasks[name]
	if !ok {
		e = &taskEntry{}
		m.tasks[name] = e
	}
	m.mu.Unlock()
	e.mu.Lock()
	recs, _, err := m.store.LoadFrom(ctx, events.StreamTasks, events.TaskNameFilter(name), e.seq+1)
	if err != nil {
		e.mu.Unlock()
		return nil, storeError("load task", err)
	}
	for _, r := range recs {
		t, err := events.ApplyAgentTask(e.t, r)
		if err != nil {
			e.mu.Unlock()
			return nil, trellis.Errorf(trellis.CodeInternal, "fold task %s: %w", name, err)
		}
		e.t, e.seq = t, r.Seq
	}
	return e, nil
}

// openTask locks the open task of a name (or id).
func (m *Memory) openTask(ctx context.Context, task string) (*taskEntry, error) {
	name, err := m.taskName(ctx, task)
	if err != nil {
		return nil, err
	}
	e, err := m.lockTask(ctx, name)
	if err != nil {
		return nil, err
	}
	if e.t == nil {
		e.mu.Unlock()
		return nil, trellis.Errorf(trellis.CodeNotFound, "no task %q", task)
	}
	if e.t.Status != events.AgentTaskOpen {
		e.mu.Unlock()
		return nil, trellis.Errorf(trellis.CodeConflict, "task %s (%s) is %s", e.t.Name, e.t.TaskID, e.t.Status)
	}
	return e, nil
}

// appendTask appends an event to a task name's aggregate and folds it.
func (m *Memory) appendTask(ctx context.Context, e *taskEntry, name, typ, actor string, payload any) error {
	env, err := events.NewEnvelope(m.now(), typ, name, events.ActorFor(ctx, actor), events.TasksSchema, payload)
	if err != nil {
		return err
	}
	subject := events.TasksSubject(name, typ)
	ack, err := m.store.Append(ctx, subject, env, events.Expect{Filter: events.TaskNameFilter(name), LastSeq: e.seq}, "")
	if errors.Is(err, events.ErrWrongLastSequence) {
		return trellis.Errorf(trellis.CodeConflict, "task %s changed concurrently; try again", name)
	}
	if err != nil {
		return storeError("append "+typ, err)
	}
	t, err := events.ApplyAgentTask(e.t, events.Recorded{Envelope: env, Stream: events.StreamTasks, Subject: subject, Seq: ack.Seq})
	if err != nil {
		return err
	}
	e.t, e.seq = t, ack.Seq
	return nil
}

// TaskCreate creates a task; its name must not be taken by an open task.
func (m *Memory) TaskCreate(ctx context.Context, req trellis.TaskCreateRequest) (*events.AgentTask, error) {
	if err := req.Normalize(); err != nil {
		return nil, err
	}
	e, err := m.lockTask(ctx, req.Name)
	if err != nil {
		return nil, err
	}
	defer e.mu.Unlock()
	if e.t != nil && e.t.Status == events.AgentTaskOpen {
		return nil, trellis.Errorf(trellis.CodeConflict, "a task named %q is already open (task_id %s); names are unique among open tasks", req.Name, e.t.TaskID)
	}
	p := events.TaskCreatedPayload{TaskID: events.NewID(m.now()), Name: req.Name, Description: req.Description, ParentBranch: req.Parent, Objectives: []events.ObjectiveSpec{}}
	for i, o := range req.Objectives {
		p.Objectives = append(p.Objectives, events.ObjectiveSpec{ObjectiveID: fmt.Sprintf("obj-%d", i+1), Description: o})
	}
	if err := m.appendTask(ctx, e, req.Name, events.TaskCreated, "trellis", p); err != nil {
		return nil, err
	}
	return cloneTask(e.t), nil
}

// TaskJoin assigns an agent to an open task.
func (m *Memory) TaskJoin(ctx context.Context, req trellis.TaskJoinRequest) (*trellis.TaskJoinResult, error) {
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
	defer e.mu.Unlock()
	if _, ok := e.t.Agent(req.Agent); ok {
		return nil, trellis.Errorf(trellis.CodeConflict, "agent %s already joined task %s", req.Agent, e.t.Name)
	}
	if err := m.appendTask(ctx, e, e.t.Name, events.TaskAgentJoined, req.Agent, events.TaskAgentJoinedPayload{TaskID: e.t.TaskID, AgentID: req.Agent, Role: req.Role}); err != nil {
		return nil, err
	}
	return &trellis.TaskJoinResult{TaskID: e.t.TaskID, AgentID: req.Agent, Role: req.Role, Branch: events.AgentBranch(e.t.Name, req.Agent)}, nil
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
func (m *Memory) TaskObjective(ctx context.Context, req trellis.TaskObjectiveRequest) (*events.AgentTask, error) {
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
	defer e.mu.Unlock()
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
	if err := m.appendTask(ctx, e, e.t.Name, events.TaskObjectiveUpdated, agentOr(req.Agent), events.TaskObjectiveUpdatedPayload{
		TaskID: e.t.TaskID, ObjectiveID: req.ObjectiveID, From: o.Status, Status: req.Status, AgentID: req.Agent,
	}); err != nil {
		return nil, err
	}
	return cloneTask(e.t), nil
}

// Task returns the current task of a name or id (open or completed).
func (m *Memory) Task(ctx context.Context, task string) (*events.AgentTask, error) {
	name, err := m.taskName(ctx, task)
	if err != nil {
		return nil, err
	}
	e, err := m.lockTask(ctx, name)
	if err != nil {
		return nil, err
	}
	defer e.mu.Unlock()
	if e.t == nil {
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
