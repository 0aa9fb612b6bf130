package httpapi

import (
	"fmt"
	"net/http"

	"github.com/trellis/trellis"
)

// cancelTask serves POST /v1/queue/tasks/{id}/cancel {"reason", "actor"}
// (or no body): 200 and the task, cancelled or marked for cancellation.
func (s *server) cancelTask(w http.ResponseWriter, r *http.Request) error {
	id, err := s.finishPrologue(r)
	if err != nil {
		return err
	}
	var req trellis.CancelRequest
	if err := s.decodeBody(w, r, &req, true); err != nil {
		return err
	}
	if req.TaskID, err = bodyTaskID(id, req.TaskID); err != nil {
		return err
	}
	task, err := s.svc.Cancel(r.Context(), req)
	if err != nil {
		return fmt.Errorf("cancel task %s: %w", id, err)
	}
	return s.writeJSON(w, r, http.StatusOK, task)
}

// addSchedule serves POST /v1/schedules: 201 and the schedule.
func (s *server) addSchedule(w http.ResponseWriter, r *http.Request) error {
	if _, err := queryParams(r); err != nil {
		return err
	}
	var req trellis.ScheduleRequest
	if err := s.decodeBody(w, r, &req, false); err != nil {
		return err
	}
	sched, err := s.svc.AddSchedule(r.Context(), req)
	if err != nil {
		return fmt.Errorf("add schedule: %w", err)
	}
	w.Header().Set("Location", "/v1/schedules/"+sched.Name)
	return s.writeJSON(w, r, http.StatusCreated, sched)
}

// listSchedules serves GET /v1/schedules: 200 {"schedules": [...]}.
func (s *server) listSchedules(w http.ResponseWriter, r *http.Request) error {
	if _, err := queryParams(r); err != nil {
		return err
	}
	list, err := s.svc.Schedules(r.Context())
	if err != nil {
		return fmt.Errorf("list schedules: %w", err)
	}
	return s.writeJSON(w, r, http.StatusOK, map[string]any{"schedules": list})
}

// removeSchedule serves DELETE /v1/schedules/{name}: 200 and the removed
// schedule.
func (s *server) removeSchedule(w http.ResponseWriter, r *http.Request) error {
	if _, err := queryParams(r); err != nil {
		return err
	}
	sched, err := s.svc.RemoveSchedule(r.Context(), trellis.RemoveScheduleRequest{Name: r.PathValue("name")})
	if err != nil {
		return fmt.Errorf("remove schedule: %w", err)
	}
	return s.writeJSON(w, r, http.StatusOK, sched)
}
