package events

import (
	"fmt"
	"time"
)

// Agent-task event types: the last token of trellis.tasks.<name>.<type>.
// A task's aggregate is keyed by its name, which is unique among open
// tasks: creating a task checks the name's aggregate, so two tasks with one
// name can never be open at once.
const (
	AgentTaskCreated   = "created"
	AgentJoined        = "agent_joined"
	ObjectiveUpdated   = "objective_updated"
	AgentCompleted     = "agent_completed"
	AgentTaskCompleted = "completed"
	// AgentTaskPruned is a task name's tombstone: `trellis prune` appends
	// it before it removes the name's finished tasks into an archive (see
	// retention/); the name folds to no task from it on.
	AgentTaskPruned = "pruned"
)

// TasksSchema is the current schema version of agent-task payloads.
const TasksSchema = 1

// TasksSubject is the subject of an agent-task event.
func TasksSubject(name, typ string) string { return "trellis.tasks." + name + "." + typ }

// TaskNameFilter is the subject filter of a task name's aggregate.
func TaskNameFilter(name string) string { return "trellis.tasks." + name + ".>" }

// ObjectiveSpec is an objective as created.
type ObjectiveSpec struct {
	ObjectiveID string `json:"objective_id"`
	Description string `json:"description"`
}

// AgentTaskCreatedPayload is the payload of a created event.
type AgentTaskCreatedPayload struct {
	TaskID       string          `json:"task_id"`
	Name         string          `json:"name"`
	Description  string          `json:"description,omitempty"`
	ParentBranch string          `json:"parent_branch"`
	Objectives   []ObjectiveSpec `json:"objectives"`
	// MemoryScope is the memory scope of the task's branches, keyed by its
	// id (TaskScope). A created event without it (written before memory was
	// keyed by task id) keeps the name's scope, "task-<name>".
	MemoryScope string `json:"memory_scope,omitempty"`
}

// AgentJoinedPayload is the payload of an agent_joined event.
type AgentJoinedPayload struct {
	TaskID  string `json:"task_id"`
	AgentID string `json:"agent_id"`
	Role    string `json:"role"`
}

// ObjectiveUpdatedPayload is the payload of an objective_updated event.
type ObjectiveUpdatedPayload struct {
	TaskID      string `json:"task_id"`
	ObjectiveID string `json:"objective_id"`
	From        string `json:"from"`
	Status      string `json:"status"`
	AgentID     string `json:"agent_id,omitempty"`
}

// AgentCompletedPayload is the payload of an agent_completed event.
type AgentCompletedPayload struct {
	TaskID  string `json:"task_id"`
	AgentID string `json:"agent_id"`
	Summary string `json:"summary"`
}

// AgentTaskCompletedPayload is the payload of a completed event.
type AgentTaskCompletedPayload struct {
	TaskID    string   `json:"task_id"`
	Merged    bool     `json:"merged"`
	Durable   []string `json:"durable"`
	Ephemeral []string `json:"ephemeral"`
}

// AgentTask is the state of an agent task folded from its events.
type AgentTask struct {
	TaskID       string          `json:"task_id"`
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	Branch       string          `json:"branch"`
	ParentBranch string          `json:"parent_branch"`
	Status       string          `json:"status"`
	Objectives   []TaskObjective `json:"objectives"`
	Agents       []TaskAgent     `json:"agents"`
	CreatedAt    time.Time       `json:"created_at"`
	UpdatedAt    time.Time       `json:"updated_at"`
	CompletedAt  *time.Time      `json:"completed_at,omitempty"`
	Durable      []string        `json:"durable,omitempty"`
	Ephemeral    []string        `json:"ephemeral,omitempty"`
	Merged       bool            `json:"merged"`
	// MemoryScope is the memory scope of the task's branches (see
	// AgentTaskCreatedPayload.MemoryScope); empty in a snapshot of a task
	// created before memory was keyed by task id (Scope upcasts it).
	MemoryScope string `json:"memory_scope,omitempty"`
}

// Scope returns the memory scope of the task's branches: its own
// (TaskScope of its id), or, for a task created before memory was keyed by
// task id, the name's scope "task-<name>" it was written under.
func (t *AgentTask) Scope() string {
	if t.MemoryScope != "" {
		return t.MemoryScope
	}
	return MemoryScope(TaskBranch(t.Name))
}

// TaskObjective is one objective of a task.
type TaskObjective struct {
	ObjectiveID string `json:"objective_id"`
	Description string `json:"description"`
	Status      string `json:"status"`
	AgentID     string `json:"agent_id,omitempty"`
}

// TaskAgent is an agent that joined a task.
type TaskAgent struct {
	AgentID   string     `json:"agent_id"`
	Role      string     `json:"role"`
	Branch    string     `json:"branch"`
	JoinedAt  time.Time  `json:"joined_at"`
	Completed bool       `json:"completed"`
	Summary   string     `json:"summary,omitempty"`
	DoneAt    *time.Time `json:"completed_at,omitempty"`
}

// Task statuses.
const (
	AgentTaskStatusOpen      = "open"
	AgentTaskStatusCompleted = "completed"
)

// Objective returns an objective by id.
func (t *AgentTask) Objective(id string) (*TaskObjective, bool) {
	for i := range t.Objectives {
		if t.Objectives[i].ObjectiveID == id {
			return &t.Objectives[i], true
		}
	}
	return nil, false
}

// Agent returns a joined agent by id.
func (t *AgentTask) Agent(id string) (*TaskAgent, bool) {
	for i := range t.Agents {
		if t.Agents[i].AgentID == id {
			return &t.Agents[i], true
		}
	}
	return nil, false
}

// TaskScope is the memory scope of a task's branches, keyed by its id, so
// that a later task with the same name never shares its memory:
// "taskid-<id>" (no branch's scope, see MemoryScope, has this prefix).
func TaskScope(taskID string) string { return "taskid-" + taskID }

// TaskBranch is the branch of a task: task/<name>.
func TaskBranch(name string) string { return "task/" + name }

// AgentBranch is an agent's branch in a task: task/<name>/<agent>.
func AgentBranch(name, agent string) string { return "task/" + name + "/" + agent }

// ApplyAgentTask folds one event of a task name's aggregate into the state
// of the task currently under that name (a created event starts a new
// task; earlier, completed tasks of the same name are left behind).
func ApplyAgentTask(t *AgentTask, rec Recorded) (*AgentTask, error) {
	if rec.Schema > TasksSchema {
		return t, fmt.Errorf("event %s: schema %d is newer than this build understands (%d)", rec.ID, rec.Schema, TasksSchema)
	}
	if rec.Type == AgentTaskPruned {
		return nil, nil
	}
	at := rec.Time.UTC()
	if rec.Type == AgentTaskCreated {
		var p AgentTaskCreatedPayload
		if err := rec.DecodePayload(&p); err != nil {
			return t, err
		}
		nt := &AgentTask{TaskID: p.TaskID, Name: p.Name, Description: p.Description, Branch: TaskBranch(p.Name),
			ParentBranch: p.ParentBranch, Status: AgentTaskStatusOpen, CreatedAt: at, UpdatedAt: at,
			Objectives: []TaskObjective{}, Agents: []TaskAgent{}, MemoryScope: p.MemoryScope}
		for _, o := range p.Objectives {
			nt.Objectives = append(nt.Objectives, TaskObjective{ObjectiveID: o.ObjectiveID, Description: o.Description, Status: "todo"})
		}
		return nt, nil
	}
	if t == nil {
		return nil, fmt.Errorf("event %s (%s) precedes its task's creation: %w", rec.ID, rec.Type, ErrBadEvent)
	}
	switch rec.Type {
	case AgentJoined:
		var p AgentJoinedPayload
		if err := rec.DecodePayload(&p); err != nil {
			return t, err
		}
		t.Agents = append(t.Agents, TaskAgent{AgentID: p.AgentID, Role: p.Role, Branch: AgentBranch(t.Name, p.AgentID), JoinedAt: at})
	case ObjectiveUpdated:
		var p ObjectiveUpdatedPayload
		if err := rec.DecodePayload(&p); err != nil {
			return t, err
		}
		if o, ok := t.Objective(p.ObjectiveID); ok {
			o.Status = p.Status
			if p.AgentID != "" {
				o.AgentID = p.AgentID
			}
		}
	case AgentCompleted:
		var p AgentCompletedPayload
		if err := rec.DecodePayload(&p); err != nil {
			return t, err
		}
		if a, ok := t.Agent(p.AgentID); ok {
			a.Completed, a.Summary, a.DoneAt = true, p.Summary, &at
		}
	case AgentTaskCompleted:
		var p AgentTaskCompletedPayload
		if err := rec.DecodePayload(&p); err != nil {
			return t, err
		}
		t.Status, t.CompletedAt, t.Merged = AgentTaskStatusCompleted, &at, p.Merged
		t.Durable, t.Ephemeral = p.Durable, p.Ephemeral
	default:
		return t, nil
	}
	t.UpdatedAt = at
	return t, nil
}
