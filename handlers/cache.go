package handlers

import (
	"sync"

	"github.com/trellis/trellis"
)

// taskCache remembers the last known state and sequence of tasks this
// process touched, so a worker that claimed a task can finish it with one
// append and no load. It is only a hint: a stale entry makes the checked
// append fail, and the handler reloads.
type taskCache struct {
	mu    sync.Mutex
	max   int
	tasks map[string]cachedTask
}

type cachedTask struct {
	task *trellis.Task
	seq  uint64
}

func newTaskCache(max int) *taskCache {
	return &taskCache{max: max, tasks: make(map[string]cachedTask)}
}

func (c *taskCache) get(id string) (*trellis.Task, uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.tasks[id]
	if !ok {
		return nil, 0, false
	}
	return e.task.Clone(), e.seq, true
}

func (c *taskCache) put(t *trellis.Task, seq uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.tasks[t.TaskID]; ok && e.seq > seq {
		return
	}
	if len(c.tasks) >= c.max {
		// Evict an arbitrary half; map iteration order is random enough.
		n := 0
		for k := range c.tasks {
			delete(c.tasks, k)
			if n++; n >= c.max/2 {
				break
			}
		}
	}
	c.tasks[t.TaskID] = cachedTask{task: t.Clone(), seq: seq}
}

func (c *taskCache) drop(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.tasks, id)
}
