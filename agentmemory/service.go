package agentmemory

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/command"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/projections"
)

// Config configures the agent memory domain's reads.
type Config struct {
	// Dir holds the task views and fact store projections' files
	// (handlers.NewService sets it to <data>/projections).
	Dir string
	// ReadTimeout bounds how long a read waits for a projection to catch
	// up with the log (default 10 s).
	ReadTimeout time.Duration
	// Logger receives projection warnings (default slog.Default()).
	Logger *slog.Logger
}

// Service is the agent memory domain as the transports see it: the
// command handler for changes, the task views and the fact store for
// reads.
type Service struct {
	handler     *Handler
	taskViews   *projections.TaskViews
	taskRun     *projections.Runner
	facts       *projections.FactStore
	factRun     *projections.Runner
	readTimeout time.Duration
}

var _ trellis.MemoryService = (*Service)(nil)

// New builds the agent memory domain on store. Its projections run once
// the caller starts Runners (handlers.Service starts them with the
// others).
func New(store *events.Store, cfg Config) *Service {
	if cfg.ReadTimeout <= 0 {
		cfg.ReadTimeout = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Service{taskViews: projections.NewTaskViews(cfg.Dir), facts: projections.NewFactStore(cfg.Dir), readTimeout: cfg.ReadTimeout}
	s.taskRun = projections.NewRunner(store, s.taskViews, cfg.Logger)
	s.factRun = projections.NewRunner(store, s.facts, cfg.Logger)
	s.handler = NewHandler(store, s.taskNameOf)
	return s
}

// Handler returns the agent-task and memory command handler.
func (s *Service) Handler() *Handler { return s.handler }

// FactStore returns the fact-store projection.
func (s *Service) FactStore() *projections.FactStore { return s.facts }

// TaskViews returns the task-views projection.
func (s *Service) TaskViews() *projections.TaskViews { return s.taskViews }

// Runners returns the projections' runners: the task views, then the
// fact store.
func (s *Service) Runners() []*projections.Runner {
	return []*projections.Runner{s.taskRun, s.factRun}
}

// catchUp waits until r has applied everything its stream holds now.
func (s *Service) catchUp(ctx context.Context, r *projections.Runner) error {
	return command.StoreError("projection "+r.Projection().Name()+" catch-up", r.Await(ctx, 0, s.readTimeout))
}

// taskNameOf maps a task id to its name through the task views.
func (s *Service) taskNameOf(ctx context.Context, id string) (string, error) {
	if err := s.catchUp(ctx, s.taskRun); err != nil {
		return "", err
	}
	t, ok := s.taskViews.ByID(id)
	if !ok {
		return "", trellis.Errorf(trellis.CodeNotFound, "no task %s", id)
	}
	return t.Name, nil
}

// task returns a task by name (the current task of that name) or by id
// (any task, also an older, completed one whose name a newer task took).
func (s *Service) task(ctx context.Context, task string) (*events.AgentTask, error) {
	if trellis.ValidateTaskID("task", task) != nil {
		return s.handler.Task(ctx, task)
	}
	if err := s.catchUp(ctx, s.taskRun); err != nil {
		return nil, err
	}
	t, ok := s.taskViews.ByID(task)
	if !ok {
		return nil, trellis.Errorf(trellis.CodeNotFound, "no task %q", task)
	}
	return t, nil
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func taskView(t *events.AgentTask) *trellis.AgentTaskView {
	v := &trellis.AgentTaskView{TaskID: t.TaskID, Name: t.Name, Description: t.Description, Branch: t.Branch,
		ParentBranch: t.ParentBranch, Status: t.Status, Objectives: []trellis.ObjectiveView{}, Agents: []trellis.TaskAgentView{},
		CreatedAt: stamp(t.CreatedAt), UpdatedAt: stamp(t.UpdatedAt), Progress: map[string]int{"todo": 0, "active": 0, "done": 0, "blocked": 0}}
	if t.CompletedAt != nil {
		v.CompletedAt = stamp(*t.CompletedAt)
	}
	for _, o := range t.Objectives {
		v.Objectives = append(v.Objectives, trellis.ObjectiveView{ObjectiveID: o.ObjectiveID, Description: o.Description, Status: o.Status, AgentID: o.AgentID})
		v.Progress[o.Status]++
	}
	for _, a := range t.Agents {
		v.Agents = append(v.Agents, trellis.TaskAgentView{AgentID: a.AgentID, Role: a.Role, Branch: a.Branch, Completed: a.Completed, Summary: a.Summary})
	}
	return v
}

func factView(f events.Fact) trellis.FactView {
	v := trellis.FactView{FactID: f.FactID, FactText: f.FactText, Category: f.Category, Confidence: f.Confidence, Status: f.Status,
		Branch: f.Branch, Observations: f.Observations, SourceFact: f.SourceFact, TaskID: f.TaskID, AgentID: f.AgentID,
		Session: f.Session, CreatedAt: stamp(f.CreatedAt), UpdatedAt: stamp(f.UpdatedAt)}
	if v.Observations == nil {
		v.Observations = []string{}
	}
	if f.ParentID != "" {
		p := f.ParentID
		v.ParentID = &p
	}
	return v
}

func runReport(p events.ConsolidatedPayload, at time.Time) trellis.ConsolidationReport {
	return trellis.ConsolidationReport{RunID: p.RunID, Type: p.Type, TaskID: p.TaskID, AgentID: p.AgentID, Session: p.Session,
		SourceBranch: p.SourceBranch, TargetBranch: p.TargetBranch, Created: len(p.Created), Updated: len(p.Updated),
		Deduplicated: len(p.Deduplicated), Superseded: len(p.Superseded), Processed: len(p.Processed),
		Durable: nonNilIDs(p.Durable), Ephemeral: nonNilIDs(p.Ephemeral), Summary: p.Summary, Time: stamp(at)}
}

// reportOf folds several runs of one call into one report: the last run
// leads, the others follow in Runs.
func reportOf(runs []events.ConsolidatedPayload, now time.Time) *trellis.ConsolidationReport {
	if len(runs) == 0 {
		return &trellis.ConsolidationReport{Durable: []string{}, Ephemeral: []string{}, Summary: "nothing to consolidate", Time: stamp(now)}
	}
	main := runReport(runs[len(runs)-1], now)
	for _, r := range runs[:len(runs)-1] {
		main.Runs = append(main.Runs, runReport(r, now))
	}
	return &main
}

// TaskCreate implements trellis.MemoryService.
func (s *Service) TaskCreate(ctx context.Context, req trellis.AgentTaskCreateRequest) (*trellis.AgentTaskView, error) {
	t, err := s.handler.TaskCreate(ctx, req)
	if err != nil {
		return nil, err
	}
	return taskView(t), nil
}

// TaskJoin implements trellis.MemoryService.
func (s *Service) TaskJoin(ctx context.Context, req trellis.AgentTaskJoinRequest) (*trellis.AgentTaskJoinResult, error) {
	return s.handler.TaskJoin(ctx, req)
}

// TaskObjective implements trellis.MemoryService.
func (s *Service) TaskObjective(ctx context.Context, req trellis.AgentTaskObjectiveRequest) (*trellis.AgentTaskView, error) {
	t, err := s.handler.TaskObjective(ctx, req)
	if err != nil {
		return nil, err
	}
	return taskView(t), nil
}

// TaskCompleteAgent implements trellis.MemoryService.
func (s *Service) TaskCompleteAgent(ctx context.Context, req trellis.AgentCompleteRequest) (*trellis.ConsolidationReport, error) {
	runs, err := s.handler.CompleteAgent(ctx, req, true)
	if err != nil {
		return nil, err
	}
	return reportOf(runs, time.Now()), nil
}

// TaskComplete implements trellis.MemoryService. The report leads with the
// task consolidation (durable and ephemeral facts); a merge follows in Runs.
func (s *Service) TaskComplete(ctx context.Context, req trellis.AgentTaskCompleteRequest) (*trellis.ConsolidationReport, error) {
	runs, err := s.handler.CompleteTask(ctx, req, true)
	if err != nil {
		return nil, err
	}
	main := runReport(runs[0], time.Now())
	for _, r := range runs[1:] {
		main.Runs = append(main.Runs, runReport(r, time.Now()))
	}
	return &main, nil
}

// TaskShow implements trellis.MemoryService.
func (s *Service) TaskShow(ctx context.Context, task string) (*trellis.AgentTaskView, error) {
	t, err := s.task(ctx, task)
	if err != nil {
		return nil, err
	}
	return taskView(t), nil
}

// TaskList implements trellis.MemoryService.
func (s *Service) TaskList(ctx context.Context, req trellis.AgentTaskListRequest) ([]trellis.AgentTaskView, error) {
	if req.Status != "" && req.Status != events.AgentTaskStatusOpen && req.Status != events.AgentTaskStatusCompleted {
		return nil, trellis.FieldError("status", "%q is not a task status: open or completed", req.Status)
	}
	if err := s.catchUp(ctx, s.taskRun); err != nil {
		return nil, err
	}
	out := []trellis.AgentTaskView{}
	for _, t := range s.taskViews.Tasks() {
		if req.Status == "" || t.Status == req.Status {
			out = append(out, *taskView(t))
		}
	}
	return out, nil
}

// TaskContext implements trellis.MemoryService: metadata, objectives with
// status, agent summaries, key facts (the task branch's active facts, most
// confident first, at most 20) and progress counts.
func (s *Service) TaskContext(ctx context.Context, task string) (*trellis.AgentTaskContextView, error) {
	t, err := s.task(ctx, task)
	if err != nil {
		return nil, err
	}
	if err := s.catchUp(ctx, s.factRun); err != nil {
		return nil, err
	}
	v := taskView(t)
	out := &trellis.AgentTaskContextView{Task: *v, AgentSummaries: v.Agents, KeyFacts: []trellis.FactView{}, Progress: v.Progress}
	facts := s.facts.Facts(projections.FactFilter{Branch: t.Branch, Status: "active", Scope: t.Scope()})
	sort.SliceStable(facts, func(i, j int) bool { return facts[i].Confidence > facts[j].Confidence })
	for i, f := range facts {
		if i == 20 {
			break
		}
		out.KeyFacts = append(out.KeyFacts, factView(f))
	}
	return out, nil
}

// Observe implements trellis.MemoryService.
func (s *Service) Observe(ctx context.Context, req trellis.ObserveRequest) (*trellis.ObservationView, error) {
	o, err := s.handler.Observe(ctx, req)
	if err != nil {
		return nil, err
	}
	return &trellis.ObservationView{ObservationID: o.ObservationID, Branch: o.Branch, Session: o.Session, Type: o.Type,
		Text: o.Text, TaskID: o.TaskID, AgentID: o.AgentID, Time: stamp(o.Time)}, nil
}

// Consolidate implements trellis.MemoryService: level session (a session's
// unprocessed observations, wherever they are), agent (an agent's sessions
// and agent consolidation, without completing the agent) or task (the
// classification, and with merge the merge into the parent, without
// completing the task).
func (s *Service) Consolidate(ctx context.Context, req trellis.ConsolidateRequest) (*trellis.ConsolidationReport, error) {
	var runs []events.ConsolidatedPayload
	var err error
	switch req.Level {
	case "session":
		if err := s.catchUp(ctx, s.factRun); err != nil {
			return nil, err
		}
		if !trellis.ValidSession(req.Session) {
			return nil, trellis.FieldError("session", "%q is not a session id", req.Session)
		}
		scopes := s.facts.SessionBranches(req.Session)
		var task *events.AgentTask
		if req.Task != "" {
			// Only the session's observations on this task's branches.
			t, err := s.task(ctx, req.Task)
			if err != nil {
				return nil, err
			}
			task = t
			scope := t.Scope()
			scopes = map[string][]string{scope: scopes[scope]}
			if len(scopes[scope]) == 0 {
				scopes = nil
			}
		}
		if len(scopes) == 0 {
			return s.nothingNew(req.Session, task)
		}
		runs, err = s.handler.ConsolidateSession(ctx, req.Session, scopes)
	case "agent":
		runs, err = s.handler.CompleteAgent(ctx, trellis.AgentCompleteRequest{Task: req.Task, Agent: req.Agent}, false)
	case "task":
		runs, err = s.handler.CompleteTask(ctx, trellis.AgentTaskCompleteRequest{Task: req.Task, Merge: req.Merge}, false)
		if err == nil {
			main := runReport(runs[0], time.Now())
			for _, r := range runs[1:] {
				main.Runs = append(main.Runs, runReport(r, time.Now()))
			}
			return &main, nil
		}
	default:
		return nil, trellis.FieldError("level", "%q is not a level: session, agent or task", req.Level)
	}
	if err != nil {
		return nil, err
	}
	return reportOf(runs, time.Now()), nil
}

// nothingNew is the result of a session consolidation that finds no
// unprocessed observations (on task's branches, when task is not nil):
// a report with zero counts saying so when the session's observations were
// consolidated before, or not_found when it never observed anything
// there. Nothing is appended.
func (s *Service) nothingNew(session string, task *events.AgentTask) (*trellis.ConsolidationReport, error) {
	taskID, where := "", ""
	if task != nil {
		taskID, where = task.TaskID, " on task "+task.Name
	}
	for _, r := range s.facts.Runs(taskID) {
		if r.Type == "session_end" && r.Session == session {
			return &trellis.ConsolidationReport{Type: "session_end", Session: session, TaskID: taskID,
				Durable: []string{}, Ephemeral: []string{}, Time: stamp(time.Now()),
				Summary: fmt.Sprintf("session %s%s: nothing new to consolidate (its observations were consolidated before)", session, where)}, nil
		}
	}
	return nil, trellis.Errorf(trellis.CodeNotFound, "session %s has no observations%s", session, where)
}

// Facts implements trellis.MemoryService.
func (s *Service) Facts(ctx context.Context, req trellis.FactsRequest) ([]trellis.FactView, error) {
	switch req.Status {
	case "", "active", "superseded", "archived":
	default:
		return nil, trellis.FieldError("status", "%q is not a fact status: active, superseded or archived", req.Status)
	}
	if req.Branch != "" {
		if err := trellis.ValidateBranch("branch", req.Branch); err != nil {
			return nil, err
		}
	}
	taskID, scope := "", ""
	if req.Task != "" {
		t, err := s.task(ctx, req.Task)
		if err != nil {
			return nil, err
		}
		taskID = t.TaskID
	} else if rest, ok := strings.CutPrefix(req.Branch, "task/"); ok {
		// A task's branch names the current task of its name: the
		// branches of older tasks of that name are read with --task <id>.
		name, _, _ := strings.Cut(rest, "/")
		t, err := s.task(ctx, name)
		switch {
		case err == nil:
			scope = t.Scope()
		case trellis.ErrorCode(err) != trellis.CodeNotFound && trellis.ErrorCode(err) != trellis.CodeInvalid:
			return nil, err
		}
	}
	if err := s.catchUp(ctx, s.factRun); err != nil {
		return nil, err
	}
	out := []trellis.FactView{}
	for _, f := range s.facts.Facts(projections.FactFilter{Branch: req.Branch, Status: req.Status, Category: req.Category, Query: req.Query, TaskID: taskID, Scope: scope}) {
		out = append(out, factView(f))
	}
	return out, nil
}

// History implements trellis.MemoryService.
func (s *Service) History(ctx context.Context, req trellis.HistoryRequest) ([]trellis.ConsolidationReport, error) {
	taskID := ""
	if req.Task != "" {
		t, err := s.task(ctx, req.Task)
		if err != nil {
			return nil, err
		}
		taskID = t.TaskID
	}
	if err := s.catchUp(ctx, s.factRun); err != nil {
		return nil, err
	}
	out := []trellis.ConsolidationReport{}
	for _, r := range s.facts.Runs(taskID) {
		out = append(out, runReport(r.ConsolidatedPayload, r.Time))
	}
	return out, nil
}
