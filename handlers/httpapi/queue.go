package httpapi

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/taskqueue"
)

// addTask serves POST /v1/queue/tasks: 201 and the new task packet.
func (s *server) addTask(w http.ResponseWriter, r *http.Request) error {
	if _, err := queryParams(r); err != nil {
		return err
	}
	var req trellis.AddTaskRequest
	if err := s.decodeBody(w, r, &req, false); err != nil {
		return err
	}
	task, err := s.svc.Add(r.Context(), req)
	if err != nil {
		return fmt.Errorf("add task: %w", err)
	}
	w.Header().Set("Location", "/v1/queue/tasks/"+task.TaskID)
	return s.writeJSON(w, r, http.StatusCreated, task)
}

// addTasks serves POST /v1/queue/tasks/batch: {"tasks": [add requests]}
// → 201 {"tasks": [...], "errors": [...]} (each task its own outcome; a
// bad request refuses the whole call with 400, naming tasks[i]).
func (s *server) addTasks(w http.ResponseWriter, r *http.Request) error {
	if _, err := queryParams(r); err != nil {
		return err
	}
	var req trellis.AddManyRequest
	if err := s.decodeBody(w, r, &req, false); err != nil {
		return err
	}
	res, err := s.svc.AddMany(r.Context(), req)
	if err != nil {
		return fmt.Errorf("add tasks: %w", err)
	}
	return s.writeJSON(w, r, http.StatusCreated, res)
}

// nextTask serves POST /v1/queue/next: 200 and the claimed task, or null
// when the queue has nothing to claim.
func (s *server) nextTask(w http.ResponseWriter, r *http.Request) error {
	if _, err := queryParams(r); err != nil {
		return err
	}
	var req trellis.NextRequest
	if err := s.decodeBody(w, r, &req, false); err != nil {
		return err
	}
	task, err := s.svc.Next(r.Context(), req)
	if err != nil {
		return fmt.Errorf("claim next task: %w", err)
	}
	return s.writeJSON(w, r, http.StatusOK, task) // a nil task encodes as null
}

// doneTask serves POST /v1/queue/tasks/{id}/done.
func (s *server) doneTask(w http.ResponseWriter, r *http.Request) error {
	id, err := s.finishPrologue(r)
	if err != nil {
		return err
	}
	var req trellis.DoneRequest
	if err := s.decodeBody(w, r, &req, false); err != nil {
		return err
	}
	if req.TaskID, err = bodyTaskID(id, req.TaskID); err != nil {
		return err
	}
	task, err := s.svc.Done(r.Context(), req)
	if err != nil {
		return fmt.Errorf("finish task %s: %w", id, err)
	}
	return s.writeJSON(w, r, http.StatusOK, task)
}

// failTask serves POST /v1/queue/tasks/{id}/fail.
func (s *server) failTask(w http.ResponseWriter, r *http.Request) error {
	id, err := s.finishPrologue(r)
	if err != nil {
		return err
	}
	var req trellis.FailRequest
	if err := s.decodeBody(w, r, &req, false); err != nil {
		return err
	}
	if req.TaskID, err = bodyTaskID(id, req.TaskID); err != nil {
		return err
	}
	task, err := s.svc.Fail(r.Context(), req)
	if err != nil {
		return fmt.Errorf("fail task %s: %w", id, err)
	}
	return s.writeJSON(w, r, http.StatusOK, task)
}

// finishPrologue checks what done and fail share: no query, a task id path.
func (s *server) finishPrologue(r *http.Request) (string, error) {
	if _, err := queryParams(r); err != nil {
		return "", err
	}
	return pathID(r)
}

// bodyTaskID reconciles the path's task id with an optional task_id in the
// body: when given, it must be the same.
func bodyTaskID(pathID, bodyID string) (string, error) {
	if bodyID != "" && bodyID != pathID {
		return "", trellis.FieldError("task_id", "%q differs from the task id in the path (%s); omit it or send the same id", bodyID, pathID)
	}
	return pathID, nil
}

// listTasks serves GET /v1/queue/tasks?queue=&status=&since=&text=&as_of=&limit=&cursor=&newest=:
// one page of the board (as it stood at as_of, when given; newest first
// with newest=true), with next_cursor when more rows match.
func (s *server) listTasks(w http.ResponseWriter, r *http.Request) error {
	q, err := queryParams(r, "queue", "status", "since", "text", "as_of", "limit", "cursor", "newest")
	if err != nil {
		return err
	}
	req := trellis.ListRequest{Queue: q["queue"], Status: trellis.Status(q["status"]), Since: q["since"], Text: q["text"], Cursor: q["cursor"]}
	if v, ok := q["newest"]; ok {
		if req.Newest, err = strconv.ParseBool(v); err != nil {
			return trellis.FieldError("newest", "%q is not a boolean (true or false)", truncateQuery(v))
		}
	}
	if v, ok := q["limit"]; ok {
		if req.Limit, err = strconv.Atoi(v); err != nil {
			return trellis.FieldError("limit", "%q is not an integer (0 or omitted: %d; at most %d)", truncateQuery(v), trellis.DefaultListLimit, trellis.MaxListLimit)
		}
	}
	if v, ok := q["as_of"]; ok {
		at, err := trellis.ParseTimeArg("as_of", v, time.Now())
		if err != nil {
			return err
		}
		list, err := s.svc.ListAsOf(r.Context(), at, req)
		if err != nil {
			return fmt.Errorf("list tasks as of %s: %w", v, err)
		}
		return s.writeJSON(w, r, http.StatusOK, list)
	}
	list, err := s.svc.List(r.Context(), req)
	if err != nil {
		return fmt.Errorf("list tasks: %w", err)
	}
	return s.writeJSON(w, r, http.StatusOK, list)
}

// truncateQuery shortens a query value quoted in an error.
func truncateQuery(v string) string {
	if len(v) > 32 {
		return v[:32] + "..."
	}
	return v
}

// showTask serves GET /v1/queue/tasks/{id}.
func (s *server) showTask(w http.ResponseWriter, r *http.Request) error {
	if _, err := queryParams(r); err != nil {
		return err
	}
	id, err := pathID(r)
	if err != nil {
		return err
	}
	task, err := s.svc.Show(r.Context(), id)
	if err != nil {
		return fmt.Errorf("show task %s: %w", id, err)
	}
	return s.writeJSON(w, r, http.StatusOK, task)
}

// exportTasks serves GET /v1/queue/export: the JSONL task log, one
// task packet per queue event, streamed as application/x-ndjson. A failure
// before the first byte is answered in the error shape; a failure later
// cuts the response, so a client never mistakes a partial export for a
// whole one.
func (s *server) exportTasks(w http.ResponseWriter, r *http.Request) error {
	if _, err := queryParams(r); err != nil {
		return err
	}
	nw := &ndjsonWriter{w: w}
	if _, err := taskqueue.ExportTasks(r.Context(), s.svc.Store(), nw); err != nil {
		return fmt.Errorf("export tasks: %w", err)
	}
	nw.start()
	return nil
}

// ndjsonWriter sends the NDJSON headers and status 200 before the first
// byte, so nothing is committed until the export has produced output.
type ndjsonWriter struct {
	w       http.ResponseWriter
	started bool
}

func (n *ndjsonWriter) start() {
	if n.started {
		return
	}
	n.started = true
	n.w.Header().Set("Content-Type", "application/x-ndjson")
	n.w.Header().Set("X-Content-Type-Options", "nosniff")
	n.w.WriteHeader(http.StatusOK)
}

// Write implements io.Writer.
func (n *ndjsonWriter) Write(p []byte) (int, error) {
	n.start()
	return n.w.Write(p)
}

var _ io.Writer = (*ndjsonWriter)(nil)
