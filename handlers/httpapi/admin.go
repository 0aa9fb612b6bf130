package httpapi

import (
	"fmt"
	"net/http"

	"github.com/trellis/trellis"
)

// retryTask queues a failed or dead task again: POST /v1/queue/tasks/{id}/retry
// with an optional {"actor"}.
func (s *server) retryTask(w http.ResponseWriter, r *http.Request) error {
	id, err := s.finishPrologue(r)
	if err != nil {
		return err
	}
	var req trellis.RetryRequest
	if err := s.decodeBody(w, r, &req, true); err != nil {
		return err
	}
	if req.TaskID, err = bodyTaskID(id, req.TaskID); err != nil {
		return err
	}
	task, err := s.svc.Retry(r.Context(), req)
	if err != nil {
		return fmt.Errorf("retry task %s: %w", id, err)
	}
	return s.writeJSON(w, r, http.StatusOK, task)
}

// queueControls answers GET /v1/queues/{queue}/controls.
func (s *server) queueControls(w http.ResponseWriter, r *http.Request) error {
	if _, err := queryParams(r); err != nil {
		return err
	}
	c, err := s.svc.Controls(r.Context(), r.PathValue("queue"))
	if err != nil {
		return fmt.Errorf("queue controls: %w", err)
	}
	return s.writeJSON(w, r, http.StatusOK, c)
}

// controlQueue answers POST /v1/queues/{queue}/controls with
// {"action": "pause"|"resume"|"limit", "max_in_flight", "reason", "actor"}.
func (s *server) controlQueue(w http.ResponseWriter, r *http.Request) error {
	if _, err := queryParams(r); err != nil {
		return err
	}
	var req trellis.ControlRequest
	if err := s.decodeBody(w, r, &req, false); err != nil {
		return err
	}
	q := r.PathValue("queue")
	if req.Queue != "" && req.Queue != q {
		return trellis.FieldError("queue", "%q in the body differs from %q in the path", req.Queue, q)
	}
	req.Queue = q
	c, err := s.svc.Control(r.Context(), req)
	if err != nil {
		return fmt.Errorf("control queue %s: %w", q, err)
	}
	return s.writeJSON(w, r, http.StatusOK, c)
}
