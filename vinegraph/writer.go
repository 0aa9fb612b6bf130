package vinegraph

import (
	"context"
	"errors"
	"os"
	"sync"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/vine"
)

// Writing .vine files behind the log.
//
// The log is the truth: a change is made when its event is appended. The
// file follows it: each graph has one writer that rewrites the file from
// the newest state it is given, so the changes recorded while a write is
// under way are written together by the next one (a claim on a graph of
// 50,000 nodes does not wait for megabytes to be written and synced).
// Claims return once their event is recorded; the other changes (write,
// expand) and the write-back of a missing file wait for the write of their
// state, or of a newer one. A write never goes back to an older state,
// and every write is a compare and swap (writeFileCAS) against a file this
// process judged (read and reconciled) or wrote itself, so a person's
// save that no command has read yet is never overwritten: the next command
// merges it. A process that stops (Close) finishes its writes first; one
// that dies between an append and its write leaves the file at an earlier
// state of the log, which the next command recognises (every state's hash
// is in its event) and the next change brings up to date.

// fileWriter runs the per-graph writers of a Handler.
type fileWriter struct {
	mu      sync.Mutex
	cond    *sync.Cond
	graphs  map[string]*graphWrites
	tickets uint64 // jobs queued so far, over all graphs: a graph's entry forgotten and made again never hands out a ticket it handed out before
	running int    // graph writers running
	closing bool
}

// maxRest bounds the pause of a graph's writer between two writes.
const maxRest = 500 * time.Millisecond

// graphWrites is the write state of one graph's file.
type graphWrites struct {
	next    *writeJob // the newest state waiting to be written
	running bool
	tickets uint64 // the last ticket queued for this graph (see fileWriter.tickets)
	done    uint64 // the last ticket written (or given up: a newer state was on disk, or a save came first)
	written uint64 // the highest sequence written
	failed  uint64 // the ticket of the last write that failed
	err     error
	waiters int       // callers waiting in flush
	rest    time.Time // no write starts before, unless someone waits
}

// writeJob is one state to write to a file.
type writeJob struct {
	f      vineFile
	st     graphState
	read   fileRead // what the command that produced the state read
	ticket uint64   // the newest ticket this job covers
}

func newFileWriter() *fileWriter {
	w := &fileWriter{graphs: map[string]*graphWrites{}}
	w.cond = sync.NewCond(&w.mu)
	return w
}

// queue hands st to the graph's writer (replacing an older state waiting)
// and starts the writer if it is idle. It returns the job's ticket (see
// flush).
func (v *Handler) queue(f vineFile, st graphState, read fileRead) uint64 {
	w := v.writer
	w.mu.Lock()
	defer w.mu.Unlock()
	gw := w.graphs[f.graphID]
	if gw == nil {
		if len(w.graphs) >= maxFileMemory {
			for id, g := range w.graphs { // bounded: forget idle graphs
				if !g.running && g.next == nil {
					delete(w.graphs, id)
				}
			}
		}
		gw = &graphWrites{}
		w.graphs[f.graphID] = gw
	}
	w.tickets++
	gw.tickets = w.tickets
	if gw.next == nil || st.Seq >= gw.next.st.Seq {
		gw.next = &writeJob{f: f, st: st, read: read}
	}
	gw.next.ticket = gw.tickets
	if !gw.running {
		gw.running = true
		w.running++
		go v.writeLoop(gw)
	}
	return gw.tickets
}

// writeLoop writes the newest waiting state until none is left.
func (v *Handler) writeLoop(gw *graphWrites) {
	w := v.writer
	w.mu.Lock()
	defer w.mu.Unlock()
	for gw.next != nil {
		// Pacing: after a write the disk is left to the log as long as
		// the write took (the claims recorded meanwhile go to the file
		// together), unless a caller waits for the file.
		for wait := time.Until(gw.rest); wait > 0 && gw.waiters == 0 && !w.closing; wait = time.Until(gw.rest) {
			w.mu.Unlock()
			time.Sleep(min(wait, 5*time.Millisecond))
			w.mu.Lock()
		}
		job := gw.next
		gw.next = nil
		if job.st.Seq >= gw.written {
			w.mu.Unlock()
			start := time.Now()
			err := v.writeState(job)
			took := time.Since(start)
			w.mu.Lock()
			gw.rest = time.Now().Add(min(took, maxRest))
			if err != nil {
				gw.failed, gw.err = job.ticket, err
				v.cfg.Logger.Warn("vine: rewriting the file failed; the next change writes it again", "file", job.f.abs, "graph", job.f.graphID, "err", err)
			} else {
				gw.written = max(gw.written, job.st.Seq)
			}
		} // else a newer state is on disk already
		gw.done = job.ticket
		w.cond.Broadcast()
	}
	gw.running = false
	w.running--
	w.cond.Broadcast()
}

// flush waits until the job of ticket (see queue) is done: the file holds
// its state or a newer one, or a person's save came first (the next
// command merges it). It returns the error of the write that covered it.
func (v *Handler) flush(graphID string, ticket uint64) error {
	w := v.writer
	w.mu.Lock()
	defer w.mu.Unlock()
	gw := w.graphs[graphID]
	if gw == nil {
		return nil
	}
	gw.waiters++
	defer func() { gw.waiters-- }()
	for gw.done < ticket {
		w.cond.Wait()
	}
	if gw.err != nil && gw.failed == gw.done {
		return gw.err
	}
	return nil
}

// ticket returns the last ticket queued for graphID.
func (w *fileWriter) ticket(graphID string) uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	if gw := w.graphs[graphID]; gw != nil {
		return gw.tickets
	}
	return 0
}

// busy reports whether graphID's writer is writing or has a state waiting.
func (w *fileWriter) busy(graphID string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	gw := w.graphs[graphID]
	return gw != nil && (gw.running || gw.next != nil)
}

// Close waits for the files being written, without pauses between
// writes. A command finishing after Close still queues its write, which
// starts at once (the file follows unless the process exits first: then
// the next change brings it up to date, see reconcile).
func (v *Handler) Close() {
	w := v.writer
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closing = true
	for w.running > 0 {
		w.cond.Wait()
	}
}

// writeState rewrites the file from job's state, atomically, if it still
// holds what the command read or what this process last wrote (see
// writeFileCAS): a file saved by someone meanwhile is left for the next
// command to merge.
func (v *Handler) writeState(job *writeJob) error {
	f := job.f
	text, ok := v.derived.cachedText(f.graphID, job.st.Value)
	if !ok {
		var err error
		if text, err = vine.Serialize(job.st.Value.Graph); err != nil {
			return vineError("file", err)
		}
	}
	h := job.st.Value.Hash
	if h == "" {
		h = events.TextHash(text)
	}
	mem := v.files.get(f.graphID)
	want := job.read
	if mem.stamp != (fileStamp{}) && stampOf(f.abs) == mem.stamp {
		// The file is what this process wrote last (the command read it
		// before that write landed): a state of the log, safe to replace.
		want = fileRead{exists: true, stamp: mem.stamp}
	}
	v.files.update(f.graphID, func(m *fileMem) { m.writing, m.writingText = h, text })
	stamp, placed, err := writeFileCAS(f.abs, []byte(text), want)
	if errors.Is(err, errFileChanged) {
		// Another server's writer may have replaced the file with an
		// older state of the log meanwhile: that is no person's save, and
		// leaving it would keep the file behind the log until the next
		// command (TestFileBehindAnotherWriterIsReplaced).
		if read, ok := v.behind(job); ok {
			stamp, placed, err = writeFileCAS(f.abs, []byte(text), read)
		}
	}
	if err != nil {
		v.files.update(f.graphID, func(m *fileMem) { m.writing, m.writingText = "", "" })
		if errors.Is(err, errFileChanged) {
			return nil
		}
		return trellis.Errorf(trellis.CodeInternal, "write %s: %w", f.abs, err)
	}
	v.files.wrote(f.graphID, text, h, stamp, true)
	if trust, ok := settledBy(f.abs, placed); ok {
		v.files.settled(f.graphID, h, stamp, trust)
	}
	v.files.update(f.graphID, func(m *fileMem) { m.writing, m.writingText = "", "" })
	return nil
}

// behind reports whether the file, changed since job's command read it,
// holds a state of the log older than job's — what another server's
// writer leaves when it wrote a state before this one — and returns the
// read to replace it with. A text no event of the graph resulted in (a
// person's save) or a newer state is not behind.
func (v *Handler) behind(job *writeJob) (fileRead, bool) {
	stamp := stampOf(job.f.abs)
	data, err := os.ReadFile(job.f.abs)
	if err != nil || stamp == (fileStamp{}) || stampOf(job.f.abs) != stamp {
		return fileRead{}, false
	}
	h := events.TextHash(string(data))
	ctx, cancel := context.WithTimeout(context.Background(), behindLoadTimeout)
	defer cancel()
	recs, _, err := v.store.Load(ctx, events.StreamVine, events.GraphFilter(job.f.graphID))
	if err != nil {
		return fileRead{}, false
	}
	var at uint64
	for _, r := range recs {
		if events.ResultHash(r) == h {
			at = r.Seq
		}
	}
	if at == 0 || at >= job.st.Seq {
		return fileRead{}, false
	}
	return fileRead{exists: true, hash: h, stamp: stamp}, true
}

// behindLoadTimeout bounds the read of a graph's events that behind makes.
const behindLoadTimeout = 10 * time.Second

// writeGraph rewrites the .vine file from the state and waits for the
// write (see writeState).
func (v *Handler) writeGraph(_ context.Context, st graphState, f vineFile, read fileRead) error {
	return v.flush(f.graphID, v.queue(f, st, read))
}
