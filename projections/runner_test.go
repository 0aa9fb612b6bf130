package projections

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/taskqueue"
)

// counter is a projection whose fold is not idempotent (it counts events),
// persisted as a JSON snapshot of the count and the sequence.
type counter struct {
	path string
	gate uint64 // the sequence whose Apply stops half-way

	mutated chan struct{} // closed once the gated event has changed the state
	release chan struct{} // the gated Apply returns once this is closed

	mu sync.Mutex
	n  int
}

type counterSnapshot struct {
	N   int    `json:"n"`
	Seq uint64 `json:"seq"`
}

func (c *counter) Name() string   { return "counter" }
func (c *counter) Stream() string { return events.StreamQueue }
func (c *counter) Reset() error   { c.n = 0; return removeFile(c.path) }

func (c *counter) Load() (uint64, error) {
	var s counterSnapshot
	if ok, err := readSnapshot(c.path, "counter", &s); !ok || err != nil {
		return 0, err
	}
	c.mu.Lock()
	c.n = s.N
	c.mu.Unlock()
	return s.Seq, nil
}

func (c *counter) Apply(rec events.Recorded) error {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
	if rec.Seq == c.gate {
		close(c.mutated)
		<-c.release
	}
	return nil
}

func (c *counter) Save(seq uint64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return writeSnapshot(c.path, counterSnapshot{N: c.n, Seq: seq})
}

func appendAdded(t *testing.T, ctx context.Context, store *events.Store, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		id := events.NewID(time.Now())
		env, err := events.NewEnvelope(time.Now(), taskqueue.Added, id, "test", taskqueue.Schema,
			taskqueue.AddedPayload{Queue: "default", Objective: "o"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := store.Append(ctx, taskqueue.Subject("default", id, taskqueue.Added), env, events.Expect{Filter: taskqueue.Filter(id)}, ""); err != nil {
			t.Fatal(err)
		}
	}
}

// blockedIn reports whether some goroutine is waiting for a mutex inside
// function fn.
func blockedIn(fn string) bool {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, fn) && strings.Contains(g, "sync.(*Mutex).Lock") {
			return true
		}
	}
	return false
}

// TestSaveWaitsForApplyInFlight: a save requested while an event is half
// folded must not persist that event's effect under the previous sequence
// (after a crash the event would be folded twice). Either the save waits
// for the fold (it is seen blocked on the runner's lock) or it persists a
// snapshot, and then that snapshot must count exactly the events up to its
// sequence.
func TestSaveWaitsForApplyInFlight(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := &counter{path: filepath.Join(t.TempDir(), "counter.json"), gate: 3, mutated: make(chan struct{}), release: make(chan struct{})}
	r := NewRunner(b.Store, c, nil)
	r.saveEvery = time.Hour // only the test saves
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	appendAdded(t, ctx, b.Store, 3)
	<-c.mutated

	saved := make(chan error, 1)
	go func() { saved <- r.Save() }()
	// Wait until the save either finished (it did not wait for the fold)
	// or is blocked on the runner's lock (it waits).
	for done := false; !done; {
		select {
		case err := <-saved:
			saved <- err
			done = true
		default:
			if blockedIn("projections.(*Runner).Save") {
				done = true
			} else {
				runtime.Gosched()
			}
		}
	}
	close(c.release)
	if err := <-saved; err != nil {
		t.Fatal(err)
	}
	if err := r.WaitFor(ctx, 3); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(c.path)
	if err != nil {
		t.Fatal(err)
	}
	var snap counterSnapshot
	if err := json.Unmarshal(data, &snap); err != nil {
		t.Fatal(err)
	}
	if uint64(snap.N) != snap.Seq {
		t.Fatalf("snapshot holds %d events but records sequence %d: after a crash, events %d..%d would be folded twice",
			snap.N, snap.Seq, snap.Seq+1, snap.N)
	}
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
}
