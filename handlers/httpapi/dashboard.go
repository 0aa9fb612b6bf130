package httpapi

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/trellis/trellis"
)

// The reads the dashboard needs beyond the other routes:
//
//	GET /v1/queue/activity                     200 trellis.QueueActivity (the last hour, per minute)
//	GET /v1/queue/workers                      200 trellis.WorkersView
//	GET /v1/queue/tasks/{id}/checkpoint        200 text/markdown (the task's checkpoint)
//	GET /v1/vine/graphs                        200 [trellis.VineGraphSummary]
//	GET /v1/vine/graphs/{id}?brief=            200 trellis.VineGraphView
//	GET /v1/vine/graphs/{id}/nodes/{node}      200 trellis.VineNodeView
//	GET /v1/events/live?stream=&type=&...      200 text/event-stream (see live.go)
//	GET /v1/whoami                             200 Whoami (the caller and what it may call)
func (s *server) dashboardRoutes() {
	s.handle("GET /v1/queue/activity", s.queueActivity)
	s.handle("GET /v1/queue/workers", s.queueWorkers)
	s.handle("GET /v1/queue/tasks/{id}/checkpoint", s.taskCheckpoint)
	s.handle("GET /v1/vine/graphs", s.vineGraphs)
	s.handle("GET /v1/vine/graphs/{id}", s.vineGraph)
	s.handle("GET /v1/vine/graphs/{id}/nodes/{node}", s.vineNode)
	s.handle("GET /v1/events/live", s.live)
	s.handle("GET /v1/whoami", s.whoami)
}

// queueActivity serves GET /v1/queue/activity.
func (s *server) queueActivity(w http.ResponseWriter, r *http.Request) error {
	if _, err := queryParams(r); err != nil {
		return err
	}
	act, err := s.svc.Activity(r.Context())
	if err != nil {
		return fmt.Errorf("queue activity: %w", err)
	}
	return s.writeJSON(w, r, http.StatusOK, act)
}

// queueWorkers serves GET /v1/queue/workers.
func (s *server) queueWorkers(w http.ResponseWriter, r *http.Request) error {
	if _, err := queryParams(r); err != nil {
		return err
	}
	v, err := s.svc.Workers(r.Context())
	if err != nil {
		return fmt.Errorf("queue workers: %w", err)
	}
	return s.writeJSON(w, r, http.StatusOK, v)
}

// taskCheckpoint serves GET /v1/queue/tasks/{id}/checkpoint: the Markdown
// file, as text (a browser must sanitize it before rendering it as HTML:
// it holds what workers wrote).
func (s *server) taskCheckpoint(w http.ResponseWriter, r *http.Request) error {
	if _, err := queryParams(r); err != nil {
		return err
	}
	id, err := pathID(r)
	if err != nil {
		return err
	}
	md, err := s.svc.CheckpointMarkdown(r.Context(), id)
	if err != nil {
		return fmt.Errorf("checkpoint of %s: %w", id, err)
	}
	h := w.Header()
	h.Set("Content-Type", "text/markdown; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(md))
	return nil
}

// vineGraphs serves GET /v1/vine/graphs.
func (s *server) vineGraphs(w http.ResponseWriter, r *http.Request) error {
	if _, err := queryParams(r); err != nil {
		return err
	}
	list, err := s.svc.VineGraphs(r.Context())
	if err != nil {
		return fmt.Errorf("list graphs: %w", err)
	}
	return s.writeJSON(w, r, http.StatusOK, list)
}

// vineGraph serves GET /v1/vine/graphs/{id}?brief=true|false.
func (s *server) vineGraph(w http.ResponseWriter, r *http.Request) error {
	q, err := queryParams(r, "brief")
	if err != nil {
		return err
	}
	brief := false
	if v, ok := q["brief"]; ok {
		if brief, err = strconv.ParseBool(v); err != nil {
			return trellis.FieldError("brief", "%q is not true or false", truncateQuery(v))
		}
	}
	id := r.PathValue("id")
	g, err := s.svc.VineGraph(r.Context(), id, brief)
	if err != nil {
		return fmt.Errorf("graph %s: %w", truncateQuery(id), err)
	}
	return s.writeJSON(w, r, http.StatusOK, g)
}

// vineNode serves GET /v1/vine/graphs/{id}/nodes/{node}.
func (s *server) vineNode(w http.ResponseWriter, r *http.Request) error {
	if _, err := queryParams(r); err != nil {
		return err
	}
	id, node := r.PathValue("id"), r.PathValue("node")
	n, err := s.svc.VineNode(r.Context(), id, node)
	if err != nil {
		return fmt.Errorf("graph %s node %s: %w", truncateQuery(id), truncateQuery(node), err)
	}
	return s.writeJSON(w, r, http.StatusOK, n)
}
