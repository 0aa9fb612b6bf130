package projections

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/taskqueue"
)

// Board is the queue board: every task's current packet and the counts per
// queue and status. It lives on disk in a bbolt file (<dir>/board.db) and
// is kept incrementally: each batch of folded events is committed in one
// transaction together with the last applied sequence and the counts, so
// the file always holds the fold of exactly the events up to the sequence
// it records. In memory it keeps only the counts and the tasks changed
// since the last commit (at most BoardSaveEvents events' worth); reads
// merge those over the file.
type Board struct {
	path string

	mu     sync.RWMutex
	db     *bolt.DB
	dirty  map[string]*trellis.Task // folded, not yet committed (nil: pruned)
	counts map[string]map[trellis.Status]int

	// replaying is set while a large backlog is replayed: commits are not
	// synced one by one, and the file is marked (path+".replaying") so a
	// crash before the synced end makes Load start over.
	replaying bool
	replayMin uint64 // smallest backlog replayed so (BoardSaveEvents)

	// failAfter, when positive (tests only), makes Save fail after writing
	// that many tasks into its transaction: a crash in the middle of a
	// commit.
	failAfter int
}

// The board's batch bounds (see Batched): a commit after this many events,
// or this long after the last one while events are unsaved.
const (
	BoardSaveEvents   = 16384
	BoardSaveInterval = time.Second
)

// boardVersion is the layout of board.db; another version is rebuilt.
const boardVersion = "3"

// The file's buckets and meta keys. The index bucket holds one nested
// bucket per filter, each keyed by task id (so a page of any filter is a
// range scan in id, that is creation, order, and new tasks append at the
// end of each), with the task's update time as the value (8 bytes
// big-endian Unix nanos; the "a" bucket appends status, 0, queue):
//
//	a                   every task
//	q<queue>            a queue's tasks
//	s<status>           the tasks in a status
//	x<queue>0<status>   a queue's tasks in a status
var (
	bucketMeta  = []byte("meta")
	bucketTasks = []byte("tasks")
	bucketIndex = []byte("index")
	keyVersion  = []byte("version")
	keySeq      = []byte("seq")
	keyCounts   = []byte("counts")
)

var errInjected = errors.New("injected failure in the middle of a commit")

// ErrClosed is returned by reads of a board whose file is closed (between
// a replay's reset and its reload, or after Close).
var ErrClosed = errors.New("board is closed (being rebuilt?)")

// NewBoard returns a board persisted at <dir>/board.db. Load opens it.
func NewBoard(dir string) *Board {
	return &Board{path: filepath.Join(dir, "board.db"), dirty: map[string]*trellis.Task{}, counts: map[string]map[trellis.Status]int{},
		replayMin: BoardSaveEvents}
}

// Name implements Projection.
func (b *Board) Name() string { return "board" }

// Stream implements Projection.
func (b *Board) Stream() string { return events.StreamQueue }

// BeginReplay implements Replayer: a backlog of at least BoardSaveEvents
// events is committed without a sync per commit (the bulk of a rebuild's
// cost is writing pages). The file is marked first; the mark goes once a
// synced commit (EndReplay's, or Close's sync) makes everything durable,
// and a file found marked by Load is dropped and rebuilt.
func (b *Board) BeginReplay(backlog uint64) error {
	if backlog < b.replayMin {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.db == nil {
		return ErrClosed
	}
	if err := WriteFileAtomic(b.markPath(), []byte("replaying\n")); err != nil {
		return err
	}
	if err := SyncDir(filepath.Dir(b.path)); err != nil {
		return err
	}
	b.db.NoSync, b.replaying = true, true
	return nil
}

// EndReplay implements Replayer: commits are synced again; the next one
// removes the mark.
func (b *Board) EndReplay() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.db != nil {
		b.db.NoSync = false
	}
}

func (b *Board) markPath() string { return b.path + ".replaying" }

// SaveAfter implements Batched.
func (b *Board) SaveAfter() (int, time.Duration) { return BoardSaveEvents, BoardSaveInterval }

// Path is the board's file.
func (b *Board) Path() string { return b.path }

// Load implements Projection: it opens the file and returns the sequence
// committed with its state.
func (b *Board) Load() (uint64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	// The JSON snapshot of earlier versions is superseded by board.db.
	_ = removeFile(filepath.Join(filepath.Dir(b.path), "board.json"))
	if _, err := os.Stat(b.markPath()); err == nil {
		// A replay without per-commit syncs was cut short: the file may
		// hold pages that never reached the disk. Start over.
		if err := b.resetLocked(); err != nil {
			return 0, err
		}
	}
	if err := b.openLocked(); err != nil {
		return 0, err
	}
	b.dirty, b.counts = map[string]*trellis.Task{}, map[string]map[trellis.Status]int{}
	var seq uint64
	stale := false
	err := b.db.View(func(tx *bolt.Tx) error {
		m := tx.Bucket(bucketMeta)
		if string(m.Get(keyVersion)) != boardVersion {
			stale = true
			return nil
		}
		if v := m.Get(keySeq); len(v) == 8 {
			seq = binary.BigEndian.Uint64(v)
		}
		if v := m.Get(keyCounts); v != nil {
			if err := json.Unmarshal(v, &b.counts); err != nil {
				return fmt.Errorf("board %s: counts: %w", b.path, err)
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("%w (delete it or run trellis replay)", err)
	}
	if stale {
		// Another layout: start over and rebuild from the log.
		if err := b.resetLocked(); err != nil {
			return 0, err
		}
		return 0, b.openLocked()
	}
	return seq, nil
}

func (b *Board) openLocked() error {
	if b.db != nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(b.path), 0o755); err != nil {
		return fmt.Errorf("board: %w", err)
	}
	db, err := bolt.Open(b.path, 0o644, &bolt.Options{
		Timeout: time.Second,
		// The free list is rebuilt on open instead of written with every
		// commit: commits stay small.
		NoFreelistSync: true,
		FreelistType:   bolt.FreelistMapType,
	})
	if errors.Is(err, bolt.ErrTimeout) {
		return fmt.Errorf("board %s is open in another process", b.path)
	}
	if err != nil {
		return fmt.Errorf("open board %s (delete it or run trellis replay): %w", b.path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		m, err := tx.CreateBucketIfNotExists(bucketMeta)
		if err != nil {
			return err
		}
		if _, err := tx.CreateBucketIfNotExists(bucketTasks); err != nil {
			return err
		}
		if _, err := tx.CreateBucketIfNotExists(bucketIndex); err != nil {
			return err
		}
		if m.Get(keyVersion) == nil && m.Get(keySeq) == nil {
			return m.Put(keyVersion, []byte(boardVersion))
		}
		return nil
	})
	if err != nil {
		_ = db.Close()
		return fmt.Errorf("open board %s: %w", b.path, err)
	}
	b.db = db
	return nil
}

// Apply implements Projection.
func (b *Board) Apply(rec events.Recorded) error {
	if !taskqueue.IsTaskSubject(rec.Subject) {
		for _, id := range taskqueue.PrunedTasks(rec) {
			if err := b.drop(id); err != nil {
				return err
			}
		}
		_, err := taskqueue.Apply(nil, rec) // checks the schema
		return err
	}
	if rec.Type == taskqueue.Pruned {
		return b.drop(rec.AggregateID)
	}
	prev, err := b.Task(rec.AggregateID)
	if err != nil {
		return err
	}
	var oldQueue string
	var oldStatus trellis.Status
	if prev != nil {
		oldQueue, oldStatus = prev.Queue, prev.Status
	}
	next, err := taskqueue.Apply(prev, rec)
	if err != nil {
		return err
	}
	if next == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if prev != nil {
		b.count(oldQueue, oldStatus, -1)
	}
	b.dirty[next.TaskID] = next
	b.count(next.Queue, next.Status, 1)
	return nil
}

// drop removes a pruned task (see retention/): the board keeps no row and
// no count of it, as a replay of the pruned log would not.
func (b *Board) drop(id string) error {
	prev, err := b.Task(id)
	if err != nil || prev == nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.count(prev.Queue, prev.Status, -1)
	b.dirty[id] = nil
	return nil
}

func getTask(tx *bolt.Tx, id string) (*trellis.Task, error) {
	data := tx.Bucket(bucketTasks).Get([]byte(id))
	if data == nil {
		return nil, nil
	}
	var t trellis.Task
	if err := json.Unmarshal(data, &t); err != nil {
		return nil, fmt.Errorf("board: task %s: %w", id, err)
	}
	return &t, nil
}

func (b *Board) count(queue string, status trellis.Status, d int) {
	m := b.counts[queue]
	if m == nil {
		m = map[trellis.Status]int{}
		b.counts[queue] = m
	}
	m[status] += d
	if m[status] == 0 {
		delete(m, status)
	}
	if len(m) == 0 {
		delete(b.counts, queue)
	}
}

// Save implements Projection: one transaction writes the tasks changed
// since the last commit, their index entries, the counts and seq.
func (b *Board) Save(seq uint64) error {
	b.mu.RLock()
	db := b.db
	changed := make([]*trellis.Task, 0, len(b.dirty))
	var pruned []string
	for id, t := range b.dirty {
		if t == nil {
			pruned = append(pruned, id)
			continue
		}
		changed = append(changed, t)
	}
	counts, err := json.Marshal(b.counts)
	b.mu.RUnlock()
	if err != nil {
		return err
	}
	if db == nil {
		return ErrClosed
	}
	// In id order, so pages are filled in key order.
	slices.SortFunc(changed, func(x, y *trellis.Task) int { return strings.Compare(x.TaskID, y.TaskID) })
	err = db.Update(func(tx *bolt.Tx) error {
		tasks, index, meta := tx.Bucket(bucketTasks), tx.Bucket(bucketIndex), tx.Bucket(bucketMeta)
		// Task ids are ULIDs: most writes append at the end.
		tasks.FillPercent = 0.9
		for i, t := range changed {
			if b.failAfter > 0 && i == b.failAfter {
				return errInjected
			}
			if err := putTask(tasks, index, t); err != nil {
				return err
			}
		}
		for _, id := range pruned {
			if err := deleteTask(tasks, index, id); err != nil {
				return err
			}
		}
		var s [8]byte
		binary.BigEndian.PutUint64(s[:], seq)
		if err := meta.Put(keySeq, s[:]); err != nil {
			return err
		}
		return meta.Put(keyCounts, counts)
	})
	if err != nil {
		return fmt.Errorf("board commit at #%d: %w", seq, err)
	}
	// The runner does not fold while it saves: everything dirty is now in
	// the file.
	b.mu.Lock()
	defer b.mu.Unlock()
	b.dirty = make(map[string]*trellis.Task, len(changed))
	if b.replaying && !db.NoSync {
		// This commit was synced, and with it every page written before.
		b.replaying = false
		return removeFile(b.markPath())
	}
	return nil
}

func putTask(tasks, index *bolt.Bucket, t *trellis.Task) error {
	id := []byte(t.TaskID)
	var at [8]byte
	binary.BigEndian.PutUint64(at[:], uint64(t.UpdatedAt.UnixNano()))
	all, err := index.CreateBucketIfNotExists(allBucket)
	if err != nil {
		return err
	}
	all.FillPercent = 0.9
	if old := all.Get(id); len(old) > 8 {
		status, queue, _ := bytes.Cut(old[8:], []byte{0})
		if string(queue) != t.Queue || string(status) != string(t.Status) {
			for _, name := range filterBuckets(string(queue), trellis.Status(status)) {
				if b := index.Bucket(name); b != nil {
					if err := b.Delete(id); err != nil {
						return err
					}
				}
			}
		}
	}
	if err := all.Put(id, append(append(append(at[:8:8], t.Status...), 0), t.Queue...)); err != nil {
		return err
	}
	for _, name := range filterBuckets(t.Queue, t.Status) {
		b, err := index.CreateBucketIfNotExists(name)
		if err != nil {
			return err
		}
		b.FillPercent = 0.9
		if err := b.Put(id, at[:]); err != nil {
			return err
		}
	}
	data, err := json.Marshal(t)
	if err != nil {
		return err
	}
	return tasks.Put(id, data)
}

// deleteTask removes a pruned task's row and index entries.
func deleteTask(tasks, index *bolt.Bucket, id string) error {
	key := []byte(id)
	if all := index.Bucket(allBucket); all != nil {
		if old := all.Get(key); len(old) > 8 {
			status, queue, _ := bytes.Cut(old[8:], []byte{0})
			for _, name := range filterBuckets(string(queue), trellis.Status(status)) {
				if b := index.Bucket(name); b != nil {
					if err := b.Delete(key); err != nil {
						return err
					}
				}
			}
		}
		if err := all.Delete(key); err != nil {
			return err
		}
	}
	return tasks.Delete(key)
}

// allBucket is the index of every task.
var allBucket = []byte{'a'}

// filterBuckets are the index buckets that hold a task of this queue and
// status, besides allBucket.
func filterBuckets(queue string, status trellis.Status) [][]byte {
	return [][]byte{filterBucket(queue, ""), filterBucket("", status), filterBucket(queue, status)}
}

// filterBucket is the index bucket of a filter (allBucket for none).
func filterBucket(queue string, status trellis.Status) []byte {
	switch {
	case queue != "" && status != "":
		return append(append(append([]byte{'x'}, queue...), 0), status...)
	case queue != "":
		return append([]byte{'q'}, queue...)
	case status != "":
		return append([]byte{'s'}, status...)
	}
	return allBucket
}

// Reset implements Projection: it deletes the file.
func (b *Board) Reset() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.resetLocked()
}

func (b *Board) resetLocked() error {
	if b.db != nil {
		if err := b.db.Close(); err != nil {
			return err
		}
		b.db = nil
	}
	b.dirty, b.counts, b.replaying = map[string]*trellis.Task{}, map[string]map[trellis.Status]int{}, false
	if err := removeFile(b.path); err != nil {
		return err
	}
	return removeFile(b.markPath())
}

// Close closes the file (after the runner's final save). A replay cut
// short is synced first, so its last commit stands.
func (b *Board) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.db == nil {
		return nil
	}
	if b.replaying {
		if err := b.db.Sync(); err != nil {
			_ = b.db.Close()
			b.db = nil
			return fmt.Errorf("board: sync: %w", err)
		}
		b.replaying = false
		if err := removeFile(b.markPath()); err != nil {
			_ = b.db.Close()
			b.db = nil
			return err
		}
	}
	err := b.db.Close()
	b.db = nil
	return err
}

// Task returns one task's packet, or nil.
func (b *Board) Task(id string) (*trellis.Task, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if t, ok := b.dirty[id]; ok {
		if t == nil {
			return nil, nil // pruned
		}
		return t.Clone(), nil
	}
	if b.db == nil {
		return nil, ErrClosed
	}
	var t *trellis.Task
	err := b.db.View(func(tx *bolt.Tx) error {
		var err error
		t, err = getTask(tx, id)
		return err
	})
	return t, err
}

// Each calls fn with every task, oldest first, until fn returns an error.
// It holds the board's read lock throughout: keep fn short.
func (b *Board) Each(fn func(*trellis.Task) error) error {
	req := trellis.ListRequest{Limit: trellis.MaxListLimit}
	return b.scan(req, func(t *trellis.Task) (bool, error) { return true, fn(t) })
}

// Tasks returns every task, oldest first. It holds the whole board in
// memory: for tests and small boards.
func (b *Board) Tasks() []*trellis.Task {
	out := []*trellis.Task{}
	_ = b.Each(func(t *trellis.Task) error { out = append(out, t); return nil })
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

// List returns one page of the rows matching req (normalized), oldest
// first (newest first with req.Newest), the cursor of the next page, and the counts (of every queue, or
// of req.Queue). The page costs an index range scan from the cursor on:
// proportional to the page for the queue and status filters, and to the
// rows skipped for since.
func (b *Board) List(req trellis.ListRequest) (*trellis.TaskList, error) {
	if req.Limit <= 0 || req.Limit > trellis.MaxListLimit {
		req.Limit = trellis.DefaultListLimit
	}
	out := &trellis.TaskList{Tasks: make([]trellis.TaskRow, 0, min(req.Limit, 64)), Counts: map[string]map[trellis.Status]int{}}
	var last string
	size := 0
	err := b.scan(req, func(t *trellis.Task) (bool, error) {
		row := Row(t)
		enc, err := json.Marshal(row)
		if err != nil {
			return false, err
		}
		if len(out.Tasks) == req.Limit || (len(out.Tasks) > 0 && size+len(enc) > trellis.MaxListBytes) {
			out.NextCursor = req.NextCursor(last)
			return false, nil
		}
		out.Tasks = append(out.Tasks, row)
		size += len(enc) + 1
		last = t.TaskID
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	for q, m := range b.countsLocked() {
		if req.Queue == "" || q == req.Queue {
			out.Counts[q] = m
		}
	}
	return out, nil
}

// scan calls fn with the tasks matching req's filters after req's cursor,
// in id order (descending with req.Newest), until fn says stop: the
// committed tasks from the index merged with the uncommitted ones.
func (b *Board) scan(req trellis.ListRequest, fn func(*trellis.Task) (bool, error)) error {
	from, err := req.CursorID()
	if err != nil {
		return err
	}
	// beyond reports whether id lies past the cursor in the listing's
	// order; first whether x comes before y.
	beyond := func(id string) bool { return id > from }
	first := func(x, y string) bool { return x < y }
	if req.Newest {
		beyond = func(id string) bool { return from == "" || id < from }
		first = func(x, y string) bool { return x > y }
	}
	since, err := req.SinceTime()
	if err != nil {
		return err
	}
	matches := func(t *trellis.Task) bool {
		return (req.Queue == "" || t.Queue == req.Queue) && (req.Status == "" || t.Status == req.Status) &&
			!t.UpdatedAt.Before(since) && req.MatchText(t.TaskID, t.Objective)
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.db == nil {
		return ErrClosed
	}
	var over []*trellis.Task
	for id, t := range b.dirty {
		if t != nil && beyond(id) && matches(t) {
			over = append(over, t)
		}
	}
	slices.SortFunc(over, func(x, y *trellis.Task) int {
		if req.Newest {
			return strings.Compare(y.TaskID, x.TaskID)
		}
		return strings.Compare(x.TaskID, y.TaskID)
	})
	sinceNanos := since.UnixNano()
	switch {
	case since.IsZero():
		sinceNanos = 0
	case since.After(time.Unix(0, math.MaxInt64)):
		// UnixNano overflows past 2262: nothing was updated that late.
		sinceNanos = math.MaxInt64
	case since.Before(time.Unix(0, 0)):
		// ... and before 1970 it would go wrong too: everything was
		// updated since.
		sinceNanos = 0
	}
	return b.db.View(func(tx *bolt.Tx) error {
		var k, v []byte
		var c *bolt.Cursor
		step := func() ([]byte, []byte) { return c.Next() }
		if ix := tx.Bucket(bucketIndex).Bucket(filterBucket(req.Queue, req.Status)); ix != nil {
			c = ix.Cursor()
			switch {
			case !req.Newest:
				k, v = c.Seek([]byte(from))
				if from != "" && string(k) == from {
					k, v = c.Next()
				}
			case from == "":
				k, v = c.Last()
				step = func() ([]byte, []byte) { return c.Prev() }
			default:
				// Seek lands on the first key at or after the cursor:
				// the page starts at the key before it.
				if k, _ = c.Seek([]byte(from)); k == nil {
					k, v = c.Last()
				} else {
					k, v = c.Prev()
				}
				step = func() ([]byte, []byte) { return c.Prev() }
			}
		}
		oi := 0
		for {
			var fromFile string
			for k != nil {
				id := string(k)
				_, shadowed := b.dirty[id]
				if !shadowed && len(v) >= 8 && int64(binary.BigEndian.Uint64(v[:8])) >= sinceNanos {
					fromFile = id
					break
				}
				k, v = step()
			}
			var t *trellis.Task
			switch {
			case oi < len(over) && (fromFile == "" || first(over[oi].TaskID, fromFile)):
				t = over[oi].Clone()
				oi++
			case fromFile != "":
				var err error
				if t, err = getTask(tx, fromFile); err != nil {
					return err
				}
				if t == nil {
					return fmt.Errorf("board: index names task %s that is not stored", fromFile)
				}
				k, v = step()
				if !req.MatchText(t.TaskID, t.Objective) {
					continue
				}
			default:
				return nil
			}
			more, err := fn(t)
			if err != nil || !more {
				return err
			}
		}
	})
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
