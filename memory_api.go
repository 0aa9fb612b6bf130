package trellis

import (
	"context"
	"fmt"
	"regexp"
	"strings"
)

// MemoryService is the TaskEngine and ConsolidationEngine as an
// event-sourced service: tasks with agents and objectives, observations,
// and three-level consolidation of observations into facts.
type MemoryService interface {
	// TaskCreate creates a task (branch task/<name>) with objectives.
	TaskCreate(ctx context.Context, req AgentTaskCreateRequest) (*AgentTaskView, error)
	// TaskJoin assigns an agent to a task (branch task/<name>/<agent>).
	TaskJoin(ctx context.Context, req AgentTaskJoinRequest) (*AgentTaskJoinResult, error)
	// TaskObjective updates an objective's status.
	TaskObjective(ctx context.Context, req AgentTaskObjectiveRequest) (*AgentTaskView, error)
	// TaskCompleteAgent runs the agent's consolidation and records its summary.
	TaskCompleteAgent(ctx context.Context, req AgentCompleteRequest) (*ConsolidationReport, error)
	// TaskComplete runs the task consolidation (and the merge to the parent).
	TaskComplete(ctx context.Context, req AgentTaskCompleteRequest) (*ConsolidationReport, error)
	// TaskShow returns one task.
	TaskShow(ctx context.Context, task string) (*AgentTaskView, error)
	// TaskList lists tasks.
	TaskList(ctx context.Context, req AgentTaskListRequest) ([]AgentTaskView, error)
	// TaskContext assembles what a newly joining agent needs.
	TaskContext(ctx context.Context, task string) (*AgentTaskContextView, error)
	// Observe records an observation.
	Observe(ctx context.Context, req ObserveRequest) (*ObservationView, error)
	// Consolidate runs a consolidation at a level.
	Consolidate(ctx context.Context, req ConsolidateRequest) (*ConsolidationReport, error)
	// Facts queries the fact store.
	Facts(ctx context.Context, req FactsRequest) ([]FactView, error)
	// History lists consolidation runs.
	History(ctx context.Context, req HistoryRequest) ([]ConsolidationReport, error)
}

var (
	taskNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	branchRE   = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}(/[A-Za-z0-9_-]{1,64}){0,7}$`)
	sessionRE  = regexp.MustCompile(`^[A-Za-z0-9_.:@-]{1,128}$`)
	obsTypeRE  = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)
)

// ValidateTaskName checks an agent task's name: 1–64 of A–Z a–z 0–9 _ -.
func ValidateTaskName(field, name string) error {
	if !taskNameRE.MatchString(name) {
		return FieldError(field, "%q is not a task name: use 1-64 characters of A-Z a-z 0-9 _ -", name)
	}
	return nil
}

// ValidateBranch checks a branch name: segments of A–Z a–z 0–9 _ -
// separated by "/".
func ValidateBranch(field, branch string) error {
	if !branchRE.MatchString(branch) {
		return FieldError(field, "%q is not a branch: use segments of A-Z a-z 0-9 _ - separated by /", branch)
	}
	return nil
}

// ValidateAgentID checks an agent id: 1–64 of A–Z a–z 0–9 _ -.
func ValidateAgentID(field, id string) error {
	if !taskNameRE.MatchString(id) {
		return FieldError(field, "%q is not an agent id: use 1-64 characters of A-Z a-z 0-9 _ -", id)
	}
	return nil
}

// AgentTaskCreateRequest creates an agent task.
type AgentTaskCreateRequest struct {
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	Objectives  []string `json:"objectives,omitempty"`
	Parent      string   `json:"parent,omitempty"`
}

// Normalize fills defaults and validates.
func (r *AgentTaskCreateRequest) Normalize() error {
	if err := ValidateTaskName("name", r.Name); err != nil {
		return err
	}
	if r.Parent == "" {
		r.Parent = "main"
	}
	if err := ValidateBranch("parent", r.Parent); err != nil {
		return err
	}
	if err := checkText("description", r.Description); err != nil {
		return err
	}
	return checkList("objectives", r.Objectives)
}

// AgentTaskJoinRequest assigns an agent to an agent task.
type AgentTaskJoinRequest struct {
	Task  string `json:"task"`
	Agent string `json:"agent_id"`
	Role  string `json:"role"`
}

// AgentTaskJoinResult is the joined agent.
type AgentTaskJoinResult struct {
	TaskID  string `json:"task_id"`
	AgentID string `json:"agent_id"`
	Role    string `json:"role"`
	Branch  string `json:"branch"`
}

// AgentTaskObjectiveRequest updates an objective of an agent task.
type AgentTaskObjectiveRequest struct {
	Task        string `json:"task"`
	ObjectiveID string `json:"objective_id"`
	Status      string `json:"status"`
	Agent       string `json:"agent_id,omitempty"`
}

// AgentCompleteRequest names the agent of an agent task whose work is
// complete (TaskCompleteAgent).
type AgentCompleteRequest struct {
	Task  string `json:"task"`
	Agent string `json:"agent_id"`
}

// AgentTaskCompleteRequest completes an agent task. A task whose objectives are not
// all done, or whose agents have not all completed, is not completed (a
// conflict naming them) unless Force is set.
type AgentTaskCompleteRequest struct {
	Task  string `json:"task"`
	Merge bool   `json:"merge,omitempty"`
	Force bool   `json:"force,omitempty"`
}

// AgentTaskListRequest filters agent tasks.
type AgentTaskListRequest struct {
	Status string `json:"status,omitempty"`
}

// ObserveRequest records an observation: on a branch, or on an agent's
// branch of a task.
type ObserveRequest struct {
	Branch  string `json:"branch,omitempty"`
	Task    string `json:"task,omitempty"`
	Agent   string `json:"agent_id,omitempty"`
	Session string `json:"session"`
	Type    string `json:"type"`
	Text    string `json:"text"`
}

// Normalize validates the request's own fields (the branch is resolved by
// the service).
func (r *ObserveRequest) Normalize() error {
	if !sessionRE.MatchString(r.Session) {
		return FieldError("session", "%q is not a session id: use 1-128 characters of A-Z a-z 0-9 _ . : @ -", r.Session)
	}
	if !obsTypeRE.MatchString(r.Type) {
		return FieldError("type", "%q is not an observation type: insight, decision, discovery or another lowercase word", r.Type)
	}
	if strings.TrimSpace(r.Text) == "" {
		return FieldError("text", "must not be empty")
	}
	if err := checkText("text", r.Text); err != nil {
		return err
	}
	switch {
	case r.Branch != "" && (r.Task != "" || r.Agent != ""):
		return FieldError("branch", "give --branch, or --task with --agent, not both")
	case r.Branch != "":
		return ValidateBranch("branch", r.Branch)
	case r.Task == "" || r.Agent == "":
		return FieldError("branch", "is required: give --branch, or --task and --agent")
	}
	return nil
}

// ValidSession reports whether s is a valid session id.
func ValidSession(s string) bool { return sessionRE.MatchString(s) }

// ConsolidateRequest runs a consolidation.
type ConsolidateRequest struct {
	Level   string `json:"level"` // session, agent, task
	Session string `json:"session,omitempty"`
	Task    string `json:"task,omitempty"`
	Agent   string `json:"agent_id,omitempty"`
	Merge   bool   `json:"merge,omitempty"`
}

// FactsRequest filters the fact store.
type FactsRequest struct {
	Branch   string `json:"branch,omitempty"`
	Status   string `json:"status,omitempty"`
	Category string `json:"category,omitempty"`
	Query    string `json:"query,omitempty"`
	Task     string `json:"task,omitempty"`
}

// HistoryRequest filters consolidation runs.
type HistoryRequest struct {
	Task string `json:"task,omitempty"`
}

// AgentTaskView is a task as the task views show it.
type AgentTaskView struct {
	TaskID       string          `json:"task_id"`
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	Branch       string          `json:"branch"`
	ParentBranch string          `json:"parent_branch"`
	Status       string          `json:"status"`
	Objectives   []ObjectiveView `json:"objectives"`
	Agents       []TaskAgentView `json:"agents"`
	CreatedAt    string          `json:"created_at"`
	UpdatedAt    string          `json:"updated_at"`
	CompletedAt  string          `json:"completed_at,omitempty"`
	Progress     map[string]int  `json:"progress"`
}

// Unfinished lists what keeps the task from being complete: each
// objective that is not done (with its status and description) and each
// agent that has not completed its work. Empty when everything is
// finished.
func (v *AgentTaskView) Unfinished() []string {
	var out []string
	for _, o := range v.Objectives {
		if o.Status != "done" {
			out = append(out, fmt.Sprintf("objective %s (%s) %q", o.ObjectiveID, o.Status, o.Description))
		}
	}
	for _, a := range v.Agents {
		if !a.Completed {
			out = append(out, fmt.Sprintf("agent %s (%s) still working", a.AgentID, a.Role))
		}
	}
	return out
}

// ObjectiveView is an objective with its status.
type ObjectiveView struct {
	ObjectiveID string `json:"objective_id"`
	Description string `json:"description"`
	Status      string `json:"status"`
	AgentID     string `json:"agent_id,omitempty"`
}

// TaskAgentView is an agent of a task.
type TaskAgentView struct {
	AgentID   string `json:"agent_id"`
	Role      string `json:"role"`
	Branch    string `json:"branch"`
	Completed bool   `json:"completed"`
	Summary   string `json:"summary,omitempty"`
}

// AgentTaskContextView is what a newly joining agent needs.
type AgentTaskContextView struct {
	Task           AgentTaskView   `json:"task"`
	AgentSummaries []TaskAgentView `json:"agent_summaries"`
	KeyFacts       []FactView      `json:"key_facts"`
	Progress       map[string]int  `json:"progress"`
}

// ObservationView is a recorded observation.
type ObservationView struct {
	ObservationID string `json:"observation_id"`
	Branch        string `json:"branch"`
	Session       string `json:"session"`
	Type          string `json:"type"`
	Text          string `json:"text"`
	TaskID        string `json:"task_id,omitempty"`
	AgentID       string `json:"agent_id,omitempty"`
	Time          string `json:"time"`
}

// FactView is a fact as `trellis facts` shows it.
type FactView struct {
	FactID       string   `json:"fact_id"`
	FactText     string   `json:"fact_text"`
	Category     string   `json:"category"`
	Confidence   float64  `json:"confidence"`
	Status       string   `json:"status"`
	ParentID     *string  `json:"parent_id"`
	Branch       string   `json:"branch"`
	Observations []string `json:"source_observations"`
	SourceFact   string   `json:"source_fact,omitempty"`
	TaskID       string   `json:"task_id,omitempty"`
	AgentID      string   `json:"agent_id,omitempty"`
	Session      string   `json:"session,omitempty"`
	CreatedAt    string   `json:"created_at"`
	UpdatedAt    string   `json:"updated_at"`
}

// ConsolidationReport is one consolidation run's history record.
type ConsolidationReport struct {
	RunID        string   `json:"run_id"`
	Type         string   `json:"type"`
	TaskID       string   `json:"task_id,omitempty"`
	AgentID      string   `json:"agent_id,omitempty"`
	Session      string   `json:"session,omitempty"`
	SourceBranch string   `json:"source_branch"`
	TargetBranch string   `json:"target_branch"`
	Created      int      `json:"facts_created"`
	Updated      int      `json:"facts_updated"`
	Deduplicated int      `json:"facts_deduplicated"`
	Superseded   int      `json:"facts_superseded"`
	Processed    int      `json:"observations_processed"`
	Durable      []string `json:"durable"`
	Ephemeral    []string `json:"ephemeral"`
	Summary      string   `json:"summary"`
	Time         string   `json:"time"`
	// Runs holds the further runs one call made (a merge after a task
	// consolidation, the session runs before an agent's).
	Runs []ConsolidationReport `json:"runs,omitempty"`
}
