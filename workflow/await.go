package workflow

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/trellis/trellis"
)

// TaskError reports an awaited queue task that ended without being done
// (failed, dead or cancelled).
type TaskError struct{ Task *trellis.Task }

func (e *TaskError) Error() string {
	msg := ""
	if e.Task.Checkpoint != nil {
		msg = e.Task.Checkpoint.Error
	}
	return fmt.Sprintf("task %s ended %s: %s", e.Task.TaskID, e.Task.Status, msg)
}

// Task adds a task to a queue and waits durably until it ends: any
// `trellis worker --exec` or an agent (MCP queue_next) may run it. It
// returns the ended task (its checkpoint), or a *TaskError when it did
// not end done. The run leaves its worker slot while it waits.
func Task(c *Context, name string, req trellis.AddTaskRequest) (*trellis.Task, error) {
	ts, err := Tasks(c, name, []trellis.AddTaskRequest{req})
	if len(ts) == 1 {
		return ts[0], err
	}
	return nil, err
}

// Tasks adds several tasks (fan-out) and waits until every one has ended
// (fan-in). It returns them in order and the first *TaskError.
func Tasks(c *Context, name string, reqs []trellis.AddTaskRequest) ([]*trellis.Task, error) {
	e, ok := c.next(KindTask, name)
	if ok && e.Status != EntryPending {
		return decodeTasks(e.Result)
	}
	if !ok {
		if err := c.checkCancel(); err != nil {
			c.pos--
			return nil, err
		}
		ids := make([]string, len(reqs))
		for i, req := range reqs {
			if req.Metadata == nil {
				req.Metadata = map[string]string{}
			}
			req.Metadata["workflow_run"] = c.RunID()
			req.IdempotencyKey = clipKey(c.RunID() + "/task-" + strconv.Itoa(e.Pos) + "-" + strconv.Itoa(i))
			t, err := c.e.queue.Add(c.ctx0(), req)
			if err != nil {
				// A bad request is the step's error, recorded.
				if trellis.ErrorCode(err) == trellis.CodeInvalid {
					c.append(TaskAwaited, EntryPayload{Pos: e.Pos, Name: name})
					c.append(TaskEnded, EntryPayload{Pos: e.Pos, Error: err.Error()})
					return nil, err
				}
				c.fail(err)
			}
			ids[i] = t.TaskID
		}
		e.Tasks = ids
		c.append(TaskAwaited, EntryPayload{Pos: e.Pos, Name: name, Tasks: ids})
		// Woken at once when they are all done; a failure cancels this
		// wake, which the poll below covers.
		if err := c.e.wake(c.ctx0(), c.st.Value, c.entryKey("tasks", e.Pos), wakeOpts{after: ids}); err != nil {
			c.fail(err)
		}
	}
	if e.Error != "" {
		return nil, fmt.Errorf("%s", e.Error)
	}
	tasks := make([]*trellis.Task, len(e.Tasks))
	over := true
	for i, id := range e.Tasks {
		t, err := c.e.queue.Show(c.ctx0(), id)
		if err != nil {
			c.fail(err)
		}
		tasks[i] = t
		over = over && t.Status.Terminal()
	}
	if over {
		raw, err := json.Marshal(tasks)
		if err != nil {
			c.fail(err)
		}
		c.append(TaskEnded, EntryPayload{Pos: e.Pos, Result: raw})
		return decodeTasks(raw)
	}
	if err := c.checkCancel(); err != nil {
		return nil, err
	}
	poll := c.e.cfg.PollInterval
	slot := c.e.cfg.Now().Truncate(poll)
	c.wakeAt(c.entryKey("tasks-poll-"+strconv.FormatInt(slot.UnixMilli(), 36), e.Pos), slot.Add(2*poll))
	c.suspend("waiting for tasks " + fmt.Sprint(e.Tasks))
	return nil, nil
}

func decodeTasks(raw json.RawMessage) ([]*trellis.Task, error) {
	var tasks []*trellis.Task
	if err := json.Unmarshal(raw, &tasks); err != nil {
		return nil, fmt.Errorf("decode the recorded tasks: %w", err)
	}
	for _, t := range tasks {
		if t.Status != trellis.StatusDone {
			return tasks, &TaskError{Task: t}
		}
	}
	return tasks, nil
}

// ChildSpec names a child run to start.
type ChildSpec struct {
	Workflow string
	Version  int // 0: the highest registered
	Input    any
}

// ChildResult is how a child run ended.
type ChildResult struct {
	RunID  string          `json:"run_id"`
	Status Status          `json:"status"`
	Output json.RawMessage `json:"output,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// ChildError reports a child run that did not complete.
type ChildError struct{ Child ChildResult }

func (e *ChildError) Error() string {
	return fmt.Sprintf("child run %s ended %s: %s", e.Child.RunID, e.Child.Status, e.Child.Error)
}

// Child starts a child run and waits durably for it: its output, or a
// *ChildError.
func Child[O any](c *Context, name string, spec ChildSpec) (O, error) {
	var v O
	rs, err := Children(c, name, []ChildSpec{spec})
	if err != nil {
		return v, err
	}
	if err := json.Unmarshal(rs[0].Output, &v); err != nil {
		return v, fmt.Errorf("child %q: output does not decode: %w", name, err)
	}
	return v, nil
}

// Children starts several child runs (fan-out) and waits until every one
// has ended (fan-in); child i's run id is "<run>-<pos>-<i>". It returns
// their results in order and the first *ChildError.
func Children(c *Context, name string, specs []ChildSpec) ([]ChildResult, error) {
	e, ok := c.next(KindChild, name)
	if ok && e.Status != EntryPending {
		return decodeChildren(e.Result)
	}
	if !ok {
		if err := c.checkCancel(); err != nil {
			c.pos--
			return nil, err
		}
		ids := make([]string, len(specs))
		for i := range specs {
			ids[i] = c.RunID() + "-" + strconv.Itoa(e.Pos) + "-" + strconv.Itoa(i)
		}
		// Recorded first, so a crash while starting them is finished by
		// the next activation (a start of an existing id is a no-op).
		e.Children = ids
		c.append(ChildStarted, EntryPayload{Pos: e.Pos, Name: name, Children: ids})
		for i, s := range specs {
			in, err := json.Marshal(s.Input)
			if err != nil {
				c.fail(fmt.Errorf("child %d input: %w", i, err))
			}
			_, err = c.e.Start(c.ctx0(), StartRequest{Workflow: s.Workflow, Version: s.Version, Input: in, RunID: ids[i], parent: c.RunID(), parentPos: e.Pos})
			if err != nil {
				c.append(ChildEnded, EntryPayload{Pos: e.Pos, Error: err.Error()})
				return nil, err
			}
		}
	}
	if e.Error != "" {
		return nil, fmt.Errorf("%s", e.Error)
	}
	res := make([]ChildResult, len(e.Children))
	over := true
	for i, id := range e.Children {
		r, err := c.e.Show(c.ctx0(), id)
		if trellis.ErrorCode(err) == trellis.CodeNotFound && i < len(specs) {
			// A crash between recording and starting it: start it now.
			in, jerr := json.Marshal(specs[i].Input)
			if jerr != nil {
				c.fail(jerr)
			}
			r, err = c.e.Start(c.ctx0(), StartRequest{Workflow: specs[i].Workflow, Version: specs[i].Version, Input: in, RunID: id, parent: c.RunID(), parentPos: e.Pos})
		}
		if err != nil {
			c.fail(err)
		}
		res[i] = ChildResult{RunID: id, Status: r.Status, Output: r.Output, Error: r.Error}
		over = over && r.Status.Terminal()
	}
	if over {
		raw, err := json.Marshal(res)
		if err != nil {
			c.fail(err)
		}
		c.append(ChildEnded, EntryPayload{Pos: e.Pos, Result: raw})
		return decodeChildren(raw)
	}
	if err := c.checkCancel(); err != nil {
		return nil, err
	}
	// Each child wakes its parent when it ends; the slow poll covers a
	// child whose end could not wake it.
	slot := c.e.cfg.Now().Truncate(time.Minute)
	c.wakeAt(c.entryKey("children-poll-"+strconv.FormatInt(slot.Unix(), 36), e.Pos), slot.Add(2*time.Minute))
	c.suspend("waiting for child runs")
	return nil, nil
}

func decodeChildren(raw json.RawMessage) ([]ChildResult, error) {
	var rs []ChildResult
	if err := json.Unmarshal(raw, &rs); err != nil {
		return nil, fmt.Errorf("decode the recorded children: %w", err)
	}
	for _, r := range rs {
		if r.Status != StatusCompleted {
			return rs, &ChildError{Child: r}
		}
	}
	return rs, nil
}
