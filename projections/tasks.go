package projections

import (
	"path/filepath"
	"sort"
	"sync"

	"github.com/trellis/trellis/events"
)

// TaskViews is the read model of agent tasks: every task by id and the
// current task of each name, with agents, objectives and summaries.
type TaskViews struct {
	path string

	mu     sync.RWMutex
	byID   map[string]*events.AgentTask
	byName map[string]string // name -> id of its latest task
}

type taskViewsSnapshot struct {
	Version int                 `json:"version"`
	LastSeq uint64              `json:"last_seq"`
	Tasks   []*events.AgentTask `json:"tasks"`
}

// NewTaskViews returns the projection persisted at <dir>/tasks.json.
func NewTaskViews(dir string) *TaskViews {
	return &TaskViews{path: filepath.Join(dir, "tasks.json"), byID: map[string]*events.AgentTask{}, byName: map[string]string{}}
}

// Name implements Projection.
func (v *TaskViews) Name() string { return "tasks" }

// Stream implements Projection.
func (v *TaskViews) Stream() string { return events.StreamTasks }

// Load implements Projection.
func (v *TaskViews) Load() (uint64, error) {
	var snap taskViewsSnapshot
	if ok, err := readSnapshot(v.path, "task views", &snap); !ok || err != nil {
		return 0, err
	}
	if snap.Version != 1 {
		return 0, nil
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.byID, v.byName = map[string]*events.AgentTask{}, map[string]string{}
	for _, t := range snap.Tasks {
		v.byID[t.TaskID] = t
		if cur, ok := v.byID[v.byName[t.Name]]; !ok || cur.CreatedAt.Before(t.CreatedAt) {
			v.byName[t.Name] = t.TaskID
		}
	}
	return snap.LastSeq, nil
}

// Apply implements Projection.
func (v *TaskViews) Apply(rec events.Recorded) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if rec.Type == events.AgentTaskPruned {
		// A prune removed every task of the name (the tombstone stays in
		// the log, so a view catching up later drops them too).
		for id, t := range v.byID {
			if t.Name == rec.AggregateID {
				delete(v.byID, id)
			}
		}
		delete(v.byName, rec.AggregateID)
		return nil
	}
	var cur *events.AgentTask
	if rec.Type != events.AgentTaskCreated {
		cur = v.byID[v.byName[rec.AggregateID]]
	}
	next, err := events.ApplyAgentTask(cur, rec)
	if err != nil {
		return err
	}
	v.byID[next.TaskID] = next
	v.byName[next.Name] = next.TaskID
	return nil
}

// Save implements Projection.
func (v *TaskViews) Save(seq uint64) error {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return writeSnapshot(v.path, taskViewsSnapshot{Version: 1, LastSeq: seq, Tasks: v.sortedLocked()})
}

// Reset implements Projection.
func (v *TaskViews) Reset() error {
	v.mu.Lock()
	v.byID, v.byName = map[string]*events.AgentTask{}, map[string]string{}
	v.mu.Unlock()
	return removeFile(v.path)
}

func (v *TaskViews) sortedLocked() []*events.AgentTask {
	out := make([]*events.AgentTask, 0, len(v.byID))
	for _, t := range v.byID {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].TaskID < out[j].TaskID })
	return out
}

// ByID returns a task by id.
func (v *TaskViews) ByID(id string) (*events.AgentTask, bool) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	t, ok := v.byID[id]
	if !ok {
		return nil, false
	}
	c := *t
	return &c, true
}

// Tasks returns every task, oldest first.
func (v *TaskViews) Tasks() []*events.AgentTask {
	v.mu.RLock()
	defer v.mu.RUnlock()
	src := v.sortedLocked()
	out := make([]*events.AgentTask, len(src))
	for i, t := range src {
		c := *t
		out[i] = &c
	}
	return out
}
