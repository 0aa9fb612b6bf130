package httpapi

import (
	"fmt"
	"net/http"

	"github.com/trellis/trellis"
)

// The agent task routes and the memory routes:
//
//	POST  /tasks                                   trellis.AgentTaskCreateRequest      201 task
//	GET   /tasks?status=                                                           200 [task]
//	GET   /tasks/{id}                                                              200 task (id: task id or name)
//	POST  /tasks/{id}/join                         {"agent_id","role"}            200 trellis.AgentTaskJoinResult
//	POST  /tasks/{id}/agents/{agent_id}/complete   no body                        200 trellis.ConsolidationReport
//	PATCH /tasks/{id}/objectives/{obj_id}          {"status","agent_id"}          200 task
//	POST  /tasks/{id}/complete                     {"merge"} or no body           200 trellis.ConsolidationReport
//	POST  /tasks/{id}/consolidate                  {"level","session","agent_id","merge"} 200 trellis.ConsolidationReport
//	GET   /tasks/{id}/context                                                      200 trellis.AgentTaskContextView
//	POST  /v1/memory/observations                  trellis.ObserveRequest         201 trellis.ObservationView
//	GET   /v1/memory/facts?branch=&status=&category=&query=&task=                  200 [fact]
//	GET   /v1/memory/history?task=                                                 200 [run]
func (s *server) memoryRoutes() {
	s.handle("POST /tasks", s.createTask)
	s.handle("GET /tasks", s.listAgentTasks)
	s.handle("GET /tasks/{id}", s.showAgentTask)
	s.handle("POST /tasks/{id}/join", s.joinTask)
	s.handle("POST /tasks/{id}/agents/{agent_id}/complete", s.completeAgent)
	s.handle("PATCH /tasks/{id}/objectives/{obj_id}", s.updateObjective)
	s.handle("POST /tasks/{id}/complete", s.completeAgentTask)
	s.handle("POST /tasks/{id}/consolidate", s.consolidateTask)
	s.handle("GET /tasks/{id}/context", s.taskContext)
	s.handle("POST /v1/memory/observations", s.observe)
	s.handle("GET /v1/memory/facts", s.facts)
	s.handle("GET /v1/memory/history", s.history)
}

func (s *server) createTask(w http.ResponseWriter, r *http.Request) error {
	if _, err := queryParams(r); err != nil {
		return err
	}
	var req trellis.AgentTaskCreateRequest
	if err := s.decodeBody(w, r, &req, false); err != nil {
		return err
	}
	t, err := s.svc.TaskCreate(r.Context(), req)
	if err != nil {
		return fmt.Errorf("create task: %w", err)
	}
	return s.writeJSON(w, r, http.StatusCreated, t)
}

func (s *server) listAgentTasks(w http.ResponseWriter, r *http.Request) error {
	q, err := queryParams(r, "status")
	if err != nil {
		return err
	}
	list, err := s.svc.TaskList(r.Context(), trellis.AgentTaskListRequest{Status: q["status"]})
	if err != nil {
		return fmt.Errorf("list tasks: %w", err)
	}
	return s.writeJSON(w, r, http.StatusOK, list)
}

func (s *server) showAgentTask(w http.ResponseWriter, r *http.Request) error {
	if _, err := queryParams(r); err != nil {
		return err
	}
	t, err := s.svc.TaskShow(r.Context(), r.PathValue("id"))
	if err != nil {
		return fmt.Errorf("show task: %w", err)
	}
	return s.writeJSON(w, r, http.StatusOK, t)
}

func (s *server) joinTask(w http.ResponseWriter, r *http.Request) error {
	if _, err := queryParams(r); err != nil {
		return err
	}
	var req trellis.AgentTaskJoinRequest
	if err := s.decodeBody(w, r, &req, false); err != nil {
		return err
	}
	if err := samePath("task", req.Task, r.PathValue("id")); err != nil {
		return err
	}
	req.Task = r.PathValue("id")
	res, err := s.svc.TaskJoin(r.Context(), req)
	if err != nil {
		return fmt.Errorf("join task: %w", err)
	}
	return s.writeJSON(w, r, http.StatusOK, res)
}

func (s *server) completeAgent(w http.ResponseWriter, r *http.Request) error {
	if _, err := queryParams(r); err != nil {
		return err
	}
	var req trellis.AgentCompleteRequest
	if err := s.decodeBody(w, r, &req, true); err != nil {
		return err
	}
	if err := samePath("task", req.Task, r.PathValue("id")); err != nil {
		return err
	}
	if err := samePath("agent_id", req.Agent, r.PathValue("agent_id")); err != nil {
		return err
	}
	req.Task, req.Agent = r.PathValue("id"), r.PathValue("agent_id")
	res, err := s.svc.TaskCompleteAgent(r.Context(), req)
	if err != nil {
		return fmt.Errorf("complete agent: %w", err)
	}
	return s.writeJSON(w, r, http.StatusOK, res)
}

func (s *server) updateObjective(w http.ResponseWriter, r *http.Request) error {
	if _, err := queryParams(r); err != nil {
		return err
	}
	var req trellis.AgentTaskObjectiveRequest
	if err := s.decodeBody(w, r, &req, false); err != nil {
		return err
	}
	if err := samePath("task", req.Task, r.PathValue("id")); err != nil {
		return err
	}
	if err := samePath("objective_id", req.ObjectiveID, r.PathValue("obj_id")); err != nil {
		return err
	}
	req.Task, req.ObjectiveID = r.PathValue("id"), r.PathValue("obj_id")
	t, err := s.svc.TaskObjective(r.Context(), req)
	if err != nil {
		return fmt.Errorf("update objective: %w", err)
	}
	return s.writeJSON(w, r, http.StatusOK, t)
}

func (s *server) completeAgentTask(w http.ResponseWriter, r *http.Request) error {
	if _, err := queryParams(r); err != nil {
		return err
	}
	var req trellis.AgentTaskCompleteRequest
	if err := s.decodeBody(w, r, &req, true); err != nil {
		return err
	}
	if err := samePath("task", req.Task, r.PathValue("id")); err != nil {
		return err
	}
	req.Task = r.PathValue("id")
	res, err := s.svc.TaskComplete(r.Context(), req)
	if err != nil {
		return fmt.Errorf("complete task: %w", err)
	}
	return s.writeJSON(w, r, http.StatusOK, res)
}

func (s *server) consolidateTask(w http.ResponseWriter, r *http.Request) error {
	if _, err := queryParams(r); err != nil {
		return err
	}
	var req trellis.ConsolidateRequest
	if err := s.decodeBody(w, r, &req, false); err != nil {
		return err
	}
	if err := samePath("task", req.Task, r.PathValue("id")); err != nil {
		return err
	}
	req.Task = r.PathValue("id")
	res, err := s.svc.Consolidate(r.Context(), req)
	if err != nil {
		return fmt.Errorf("consolidate: %w", err)
	}
	return s.writeJSON(w, r, http.StatusOK, res)
}

func (s *server) taskContext(w http.ResponseWriter, r *http.Request) error {
	if _, err := queryParams(r); err != nil {
		return err
	}
	res, err := s.svc.TaskContext(r.Context(), r.PathValue("id"))
	if err != nil {
		return fmt.Errorf("task context: %w", err)
	}
	return s.writeJSON(w, r, http.StatusOK, res)
}

func (s *server) observe(w http.ResponseWriter, r *http.Request) error {
	if _, err := queryParams(r); err != nil {
		return err
	}
	var req trellis.ObserveRequest
	if err := s.decodeBody(w, r, &req, false); err != nil {
		return err
	}
	res, err := s.svc.Observe(r.Context(), req)
	if err != nil {
		return fmt.Errorf("observe: %w", err)
	}
	return s.writeJSON(w, r, http.StatusCreated, res)
}

func (s *server) facts(w http.ResponseWriter, r *http.Request) error {
	q, err := queryParams(r, "branch", "status", "category", "query", "task")
	if err != nil {
		return err
	}
	res, err := s.svc.Facts(r.Context(), trellis.FactsRequest{Branch: q["branch"], Status: q["status"], Category: q["category"], Query: q["query"], Task: q["task"]})
	if err != nil {
		return fmt.Errorf("facts: %w", err)
	}
	return s.writeJSON(w, r, http.StatusOK, res)
}

func (s *server) history(w http.ResponseWriter, r *http.Request) error {
	q, err := queryParams(r, "task")
	if err != nil {
		return err
	}
	res, err := s.svc.History(r.Context(), trellis.HistoryRequest{Task: q["task"]})
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	return s.writeJSON(w, r, http.StatusOK, res)
}

// samePath rejects a body field that names something else than the path.
func samePath(field, body, path string) error {
	if body != "" && body != path {
		return trellis.FieldError(field, "%q in the body differs from %q in the path; omit it or send the same value", body, path)
	}
	return nil
}
