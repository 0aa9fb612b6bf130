package httpapi

import (
	"fmt"
	"net/http"

	"github.com/trellis/trellis"
)

// heartbeatTask serves POST /v1/queue/tasks/{id}/heartbeat {"worker"}
// (or no body: the caller): 200 and the task, its lease extended.
func (s *server) heartbeatTask(w http.ResponseWriter, r *http.Request) error {
	id, err := s.finishPrologue(r)
	if err != nil {
		return err
	}
	var req trellis.HeartbeatRequest
	if err := s.decodeBody(w, r, &req, true); err != nil {
		return err
	}
	if req.TaskID, err = bodyTaskID(id, req.TaskID); err != nil {
		return err
	}
	task, err := s.svc.Heartbeat(r.Context(), req)
	if err != nil {
		return fmt.Errorf("heartbeat task %s: %w", id, err)
	}
	return s.writeJSON(w, r, http.StatusOK, task)
}

// releaseTask serves POST /v1/queue/tasks/{id}/release {"reason",
// "actor"} (or no body): 200 and the task, queued again.
func (s *server) releaseTask(w http.ResponseWriter, r *http.Request) error {
	id, err := s.finishPrologue(r)
	if err != nil {
		return err
	}
	var req trellis.ReleaseRequest
	if err := s.decodeBody(w, r, &req, true); err != nil {
		return err
	}
	if req.TaskID, err = bodyTaskID(id, req.TaskID); err != nil {
		return err
	}
	task, err := s.svc.ReleaseClaim(r.Context(), req)
	if err != nil {
		return fmt.Errorf("release task %s: %w", id, err)
	}
	return s.writeJSON(w, r, http.StatusOK, task)
}
