package httpapi

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/workflow"
)

// workflowRoutes registers the durable workflow routes.
func (s *server) workflowRoutes() {
	s.handle("POST /v1/workflows", s.startWorkflow)
	s.handle("GET /v1/workflows", s.listWorkflows)
	s.handle("GET /v1/workflows/{id}", s.showWorkflow)
	s.handle("POST /v1/workflows/{id}/signal", s.signalWorkflow)
	s.handle("POST /v1/workflows/{id}/cancel", s.cancelWorkflow)
	s.handle("POST /v1/workflows/{id}/retry", s.retryWorkflow)
}

// startWorkflow serves POST /v1/workflows {"workflow", "version", "input",
// "run_id"}: 201 and the run.
func (s *server) startWorkflow(w http.ResponseWriter, r *http.Request) error {
	if _, err := queryParams(r); err != nil {
		return err
	}
	var req workflow.StartRequest
	if err := s.decodeBody(w, r, &req, false); err != nil {
		return err
	}
	run, err := s.svc.Workflows().Start(r.Context(), req)
	if err != nil {
		return fmt.Errorf("start workflow: %w", err)
	}
	w.Header().Set("Location", "/v1/workflows/"+run.RunID)
	return s.writeJSON(w, r, http.StatusCreated, workflow.ViewOf(run))
}

// listWorkflows serves GET /v1/workflows?status=S&workflow=W&limit=N: 200
// {"runs", "versions", "counts"}.
func (s *server) listWorkflows(w http.ResponseWriter, r *http.Request) error {
	q, err := queryParams(r, "status", "workflow", "limit")
	if err != nil {
		return err
	}
	req := workflow.ListRequest{Status: workflow.Status(q["status"]), Workflow: q["workflow"]}
	if v := q["limit"]; v != "" {
		if req.Limit, err = strconv.Atoi(v); err != nil || req.Limit < 0 {
			return trellis.FieldError("limit", "must be a number ≥ 0, got %q", v)
		}
	}
	list, err := s.svc.Workflows().List(r.Context(), req)
	if err != nil {
		return fmt.Errorf("list workflow runs: %w", err)
	}
	return s.writeJSON(w, r, http.StatusOK, list)
}

// showWorkflow serves GET /v1/workflows/{id}: 200 and the run with its
// steps in journal order.
func (s *server) showWorkflow(w http.ResponseWriter, r *http.Request) error {
	if _, err := queryParams(r); err != nil {
		return err
	}
	run, err := s.svc.Workflows().Show(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	return s.writeJSON(w, r, http.StatusOK, workflow.ViewOf(run))
}

// signalWorkflow serves POST /v1/workflows/{id}/signal {"name", "data"}.
func (s *server) signalWorkflow(w http.ResponseWriter, r *http.Request) error {
	if _, err := queryParams(r); err != nil {
		return err
	}
	var req workflow.SignalRequest
	if err := s.decodeBody(w, r, &req, false); err != nil {
		return err
	}
	if req.RunID != "" && req.RunID != r.PathValue("id") {
		return trellis.FieldError("run_id", "%q differs from the path's run id", req.RunID)
	}
	req.RunID = r.PathValue("id")
	run, err := s.svc.Workflows().Signal(r.Context(), req)
	if err != nil {
		return err
	}
	return s.writeJSON(w, r, http.StatusOK, workflow.ViewOf(run))
}

// cancelWorkflow serves POST /v1/workflows/{id}/cancel {"reason"} (or no
// body).
func (s *server) cancelWorkflow(w http.ResponseWriter, r *http.Request) error {
	if _, err := queryParams(r); err != nil {
		return err
	}
	var req workflow.CancelRequest
	if err := s.decodeBody(w, r, &req, true); err != nil {
		return err
	}
	if req.RunID != "" && req.RunID != r.PathValue("id") {
		return trellis.FieldError("run_id", "%q differs from the path's run id", req.RunID)
	}
	req.RunID = r.PathValue("id")
	run, err := s.svc.Workflows().Cancel(r.Context(), req)
	if err != nil {
		return err
	}
	return s.writeJSON(w, r, http.StatusOK, workflow.ViewOf(run))
}

// retryWorkflow serves POST /v1/workflows/{id}/retry (no body needed).
func (s *server) retryWorkflow(w http.ResponseWriter, r *http.Request) error {
	if _, err := queryParams(r); err != nil {
		return err
	}
	var req workflow.RetryRequest
	if err := s.decodeBody(w, r, &req, true); err != nil {
		return err
	}
	req.RunID = r.PathValue("id")
	run, err := s.svc.Workflows().Retry(r.Context(), req)
	if err != nil {
		return err
	}
	return s.writeJSON(w, r, http.StatusOK, workflow.ViewOf(run))
}
