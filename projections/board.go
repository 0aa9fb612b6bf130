package projections

import (
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/taskqueue"
)

// Board is the queue board: every task's current packet and the counts per
// queue and status. It is persisted as one JSON snapshot.
type Board struct {
	path string

	mu     sync.RWMutex
	tasks  map[string]*trellis.Task
	counts map[string]map[trellis.Status]int
}

// boardSnapshot is the persisted form.
type boardSnapshot struct {
	Version int             `json:"version"`
	LastSeq uint64          `json:"last_seq"`
	Tasks   []*trellis.Task `json:"tasks"`
}

const boardVersion = 1

// NewBoard returns a board persisted at <dir>/board.json.
func NewBoard(dir string) *Board {
	b := &Board{path: filepath.Join(dir, "board.json")}
	b.clear()
	return b
}

func (b *Board) clear() {
	b.tasks = map[string]*trellis.Task{}
	b.counts = map[string]map[trellis.Status]int{}
}

// Name implements Projection.
func (b *Board) Name() string { return "board" }

// Stream implements Projection.
func (b *Board) Stream() string { return events.StreamQueue }

// Load implements Projection.
func (b *Board) Load() (uint64, error) {
	var snap boardSnapshot
	if ok, err := readSnapshot(b.path, "board", &snap); !ok || err != nil {
		return 0, err
	}
	if snap.Version != boardVersion {
		// An older layout: rebuild from the log.
		return 0, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.clear()
	for _, t := range snap.Tasks {
		b.tasks[t.TaskID] = t
		b.count(t, 1)
	}
	return snap.LastSeq, nil
}

// Apply implements Projection.
func (b *Board) Apply(rec events.Recorded) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	prev := b.tasks[rec.AggregateID]
	var cur *trellis.Task
	if prev != nil {
		cur = prev.Clone()
	}
	next, err := taskqueue.Apply(cur, rec)
	if err != nil {
		return err
	}
	if next == nil {
		return nil
	}
	if prev != nil {
		b.count(prev, -1)
	}
	b.tasks[next.TaskID] = next
	b.count(next, 1)
	return nil
}

func (b *Board) count(t *trellis.Task, d int) {
	m := b.counts[t.Queue]
	if m == nil {
		m = map[trellis.Status]int{}
		b.counts[t.Queue] = m
	}
	m[t.Status] += d
	if m[t.Status] == 0 {
		delete(m, t.Status)
	}
}

// Save implements Projection.
func (b *Board) Save(seq uint64) error {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return writeSnapshot(b.path, boardSnapshot{Version: boardVersion, LastSeq: seq, Tasks: b.sortedLocked()})
}

// Reset implements Projection.
func (b *Board) Reset() error {
	b.mu.Lock()
	b.clear()
	b.mu.Unlock()
	return removeFile(b.path)
}

func (b *Board) sortedLocked() []*trellis.Task {
	out := make([]*trellis.Task, 0, len(b.tasks))
	for _, t := range b.tasks {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].TaskID < out[j].TaskID })
	return out
}

// Task returns one task's packet, or nil.
func (b *Board) Task(id string) *trellis.Task {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.tasks[id].Clone()
}

// Tasks returns every task, oldest first.
func (b *Board) Tasks() []*trellis.Task {
	b.mu.RLock()
	defer b.mu.RUnlock()
	src := b.sortedLocked()
	out := make([]*trellis.Task, len(src))
	for i, t := range src {
		out[i] = t.Clone()
	}
	return out
}

// Counts returns the number of tasks per queue and status.
func (b *Board) Counts() map[string]map[trellis.Status]int {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.countsLocked()
}

func (b *Board) countsLocked() map[string]map[trellis.Status]int {
	out := make(map[string]map[trellis.Status]int, len(b.counts))
	for q, m := range b.counts {
		c := make(map[trellis.Status]int, len(m))
		for s, n := range m {
			c[s] = n
		}
		out[q] = c
	}
	return out
}

// List returns the rows matching req, oldest first, and the counts of the
// whole board.
func (b *Board) List(req trellis.ListRequest) *trellis.TaskList {
	b.mu.RLock()
	defer b.mu.RUnlock()
	out := &trellis.TaskList{Tasks: []trellis.TaskRow{}, Counts: map[string]map[trellis.Status]int{}}
	for _, t := range b.sortedLocked() {
		if (req.Queue != "" && t.Queue != req.Queue) || (req.Status != "" && t.Status != req.Status) {
			continue
		}
		out.Tasks = append(out.Tasks, Row(t))
	}
	for q, m := range b.countsLocked() {
		if req.Queue == "" || q == req.Queue {
			out.Counts[q] = m
		}
	}
	return out
}

// Row is a task's board row.
func Row(t *trellis.Task) trellis.TaskRow {
	return trellis.TaskRow{
		TaskID:          t.TaskID,
		Queue:           t.Queue,
		Status:          t.Status,
		Objective:       t.Objective,
		ClaimedBy:       t.ClaimedBy,
		Attempts:        t.Attempts,
		BudgetExhausted: t.BudgetExhausted,
		CreatedAt:       t.CreatedAt.UTC().Format(time.RFC3339Nano),
		UpdatedAt:       t.UpdatedAt.UTC().Format(time.RFC3339Nano),
	}
}
