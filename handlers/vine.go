package handlers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/projections"
	"github.com/trellis/trellis/vine"
)

// VineConfig configures the VINE command handler.
type VineConfig struct {
	// Roots are the workspace roots: every .vine file and every reference a
	// graph expands must lie inside one (default: the current directory).
	Roots []string
	// MaxFileBytes bounds a .vine file (default 16 MiB).
	MaxFileBytes int64
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Vine is the command side of VINE graphs. Each graph is an aggregate on
// trellis.vine.<graph_id>.>; commands on one graph are serialized within a
// process and checked against the log across processes, and the .vine file
// is rewritten from the resulting state after each change.
type Vine struct {
	store *events.Store
	cfg   VineConfig

	mu     sync.Mutex
	graphs *lru[string, *graphEntry] // at most GraphCacheSize idle graphs
}

// graphEntry is a graph's cached state in this process.
type graphEntry struct {
	mu    sync.Mutex
	st    *events.GraphState
	seq   uint64
	known map[string]bool // hashes of canonical texts this process produced
}

// maxGraphAttempts bounds how often a graph command re-decides after
// losing a race to another process.
const maxGraphAttempts = 64

// maxKnownHashes bounds graphEntry.known.
const maxKnownHashes = 256

// NewVine returns the VINE command handler. Roots are made absolute and
// resolved through symbolic links.
func NewVine(store *events.Store, cfg VineConfig) *Vine {
	if len(cfg.Roots) == 0 {
		if wd, err := os.Getwd(); err == nil {
			cfg.Roots = []string{wd}
		}
	}
	roots := make([]string, 0, len(cfg.Roots))
	for _, r := range cfg.Roots {
		if abs, err := filepath.Abs(r); err == nil {
			r = abs
		}
		if real, err := filepath.EvalSymlinks(r); err == nil {
			r = real
		}
		roots = append(roots, r)
	}
	cfg.Roots = roots
	if cfg.MaxFileBytes <= 0 {
		cfg.MaxFileBytes = 16 << 20
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Vine{store: store, cfg: cfg, graphs: newLRU[string](GraphCacheSize, func(e *graphEntry) bool { return busy(&e.mu) })}
}

// Roots returns the workspace roots.
func (v *Vine) Roots() []string { return append([]string(nil), v.cfg.Roots...) }

// vineFile is a resolved .vine file.
type vineFile struct {
	abs, rel, graphID string
}

// resolve checks that file lies inside a workspace root and derives its
// graph id from the path relative to that root.
func (v *Vine) resolve(file string) (vineFile, error) {
	if strings.TrimSpace(file) == "" {
		return vineFile{}, trellis.FieldError("file", "must not be empty")
	}
	if !utf8.ValidString(file) || strings.ContainsRune(file, 0) {
		return vineFile{}, trellis.FieldError("file", "is not a valid path")
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		return vineFile{}, trellis.FieldError("file", "%v", err)
	}
	// Judge the real location: a symlinked directory must not lead out.
	real := abs
	if r, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		real = filepath.Join(r, filepath.Base(abs))
	}
	for _, root := range v.cfg.Roots {
		rel, err := filepath.Rel(root, real)
		if err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel) {
			rel = filepath.ToSlash(rel)
			return vineFile{abs: real, rel: rel, graphID: events.GraphID(rel)}, nil
		}
	}
	return vineFile{}, trellis.FieldError("file", "%s is outside the workspace roots (%s); start Trellis with --workspace covering it", file, strings.Join(v.cfg.Roots, ", "))
}

// readVineFile reads and checks a .vine file: size, text, parse, validate.
// A missing file returns (nil graph, "", nil).
func (v *Vine) readVineFile(path, field string) (*vine.Graph, string, error) {
	info, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", trellis.FieldError(field, "%v", err)
	}
	if info.IsDir() {
		return nil, "", trellis.FieldError(field, "%s is a directory, not a .vine file", path)
	}
	if info.Size() > v.cfg.MaxFileBytes {
		return nil, "", trellis.FieldError(field, "%s is %d bytes; .vine files up to %d bytes are accepted", path, info.Size(), v.cfg.MaxFileBytes)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, "", trellis.FieldError(field, "%v", err)
	}
	if bytes.IndexByte(data, 0) >= 0 || !utf8.Valid(data) {
		return nil, "", trellis.FieldError(field, "%s holds binary data, not UTF-8 text", path)
	}
	text := string(data)
	g, err := vine.Parse(text)
	if err == nil {
		err = vine.Validate(g)
	}
	if err != nil {
		return nil, text, vineError(field, err)
	}
	return &g, text, nil
}

// vineError maps a vine package error onto a Trellis error.
func vineError(field string, err error) error {
	var te *trellis.Error
	if errors.As(err, &te) {
		return err
	}
	switch vine.ErrorCode(err) {
	case vine.CodeInvalid:
		return &trellis.Error{Code: trellis.CodeInvalid, Field: field, Message: err.Error(), Err: err}
	case vine.CodeNotFound:
		return &trellis.Error{Code: trellis.CodeNotFound, Message: err.Error(), Err: err}
	case vine.CodeConflict:
		return &trellis.Error{Code: trellis.CodeConflict, Message: err.Error(), Err: err}
	}
	return &trellis.Error{Code: trellis.CodeInternal, Message: err.Error(), Err: err}
}

func (v *Vine) entry(graphID string) *graphEntry {
	v.mu.Lock()
	defer v.mu.Unlock()
	e, ok := v.graphs.get(graphID)
	if !ok {
		e = &graphEntry{known: map[string]bool{}}
		v.graphs.put(graphID, e)
	}
	return e
}

// open locks the graph of file, brings its state up to date with the log,
// takes a new file under care (imported) and records a hand edit of the
// file (hand_edited) before the caller's command runs. The caller unlocks
// the returned entry.
func (v *Vine) open(ctx context.Context, file, actor string) (*graphEntry, vineFile, *openReport, error) {
	f, err := v.resolve(file)
	if err != nil {
		return nil, f, nil, err
	}
	e := v.entry(f.graphID)
	e.mu.Lock()
	rep, err := v.reconcile(ctx, e, f, actor)
	if err != nil {
		e.mu.Unlock()
		return nil, f, nil, err
	}
	return e, f, rep, nil
}

// openReport says what open had to record.
type openReport struct {
	imported, handEdit, rewritten bool
}

func (v *Vine) reconcile(ctx context.Context, e *graphEntry, f vineFile, actor string) (*openReport, error) {
	rep := &openReport{}
	if err := v.catchUp(ctx, e, f.graphID); err != nil {
		return nil, err
	}
	g, text, err := v.readVineFile(f.abs, "file")
	if e.st == nil {
		// Not in the log yet: the file is imported as it is.
		if err != nil {
			return nil, err
		}
		if g == nil {
			return nil, &trellis.Error{Code: trellis.CodeNotFound, Field: "file", Message: fmt.Sprintf("%s does not exist and no graph of that path is in the log", f.abs)}
		}
		if err := v.appendSnapshot(ctx, e, f, events.GraphImported, *g, actor); err != nil {
			return nil, err
		}
		rep.imported = true
		return rep, v.writeGraph(e, f)
	}
	if g == nil && err == nil {
		// The file is gone: the log still has the graph; write it back.
		rep.rewritten = true
		return rep, v.writeGraph(e, f)
	}
	if err == nil && !e.known[events.TextHash(text)] {
		// Maybe another process appended and wrote the file since we
		// caught up: catch up again before judging the file.
		if err := v.catchUp(ctx, e, f.graphID); err != nil {
			return nil, err
		}
	}
	if err == nil && e.known[events.TextHash(text)] {
		return rep, nil // what Trellis last wrote (or wrote earlier)
	}
	if err != nil {
		return nil, &trellis.Error{Code: trellis.CodeInvalid, Field: "file", Err: err, Message: fmt.Sprintf(
			"%s differs from the graph in the log and is not a valid graph (%v); fix the file, or restore the last recorded version with `trellis vine export %s --out %s`",
			f.abs, trellis.AsError(err).Message, f.graphID, f.abs)}
	}
	if g.Equal(e.st.Graph) {
		e.remember(text)
		return rep, nil // same graph, other formatting
	}
	if stale, err := v.isPastState(ctx, f.graphID, *g); err != nil {
		return nil, err
	} else if stale {
		// Another process appended after this file was written and has not
		// rewritten it yet: not a hand edit.
		rep.rewritten = true
		return rep, v.writeGraph(e, f)
	}
	if err := v.appendSnapshot(ctx, e, f, events.GraphHandEdited, *g, actor); err != nil {
		return nil, err
	}
	rep.handEdit = true
	return rep, v.writeGraph(e, f)
}

// isPastState reports whether g equals any state the graph had in its
// history (a file left behind by a concurrent writer). The result hashes
// the events record answer it without replaying; events without one are
// replayed.
func (v *Vine) isPastState(ctx context.Context, graphID string, g vine.Graph) (bool, error) {
	recs, _, err := v.store.Load(ctx, events.StreamVine, events.GraphFilter(graphID))
	if err != nil {
		return false, storeError("load graph", err)
	}
	canonical, err := vine.Serialize(g)
	if err != nil {
		return false, nil
	}
	want, hashed := events.TextHash(canonical), true
	for _, r := range recs {
		h := events.ResultHash(r)
		if h == want {
			return true, nil
		}
		hashed = hashed && h != ""
	}
	if hashed {
		return false, nil
	}
	var st *events.GraphState
	for _, r := range recs {
		if st, err = events.ApplyGraph(st, r); err != nil {
			return false, trellis.Errorf(trellis.CodeInternal, "fold graph %s: %w", graphID, err)
		}
		if st.Graph.Equal(g) {
			return true, nil
		}
	}
	return false, nil
}

// catchUp folds the events the cached state has not seen.
func (v *Vine) catchUp(ctx context.Context, e *graphEntry, graphID string) error {
	recs, _, err := v.store.LoadFrom(ctx, events.StreamVine, events.GraphFilter(graphID), e.seq+1)
	if err != nil {
		return storeError("load graph", err)
	}
	for _, r := range recs {
		st, err := events.ApplyGraph(e.st, r)
		if err != nil {
			return trellis.Errorf(trellis.CodeInternal, "fold graph %s: %w", graphID, err)
		}
		e.st, e.seq = st, r.Seq
		if h := events.ResultHash(r); h != "" {
			e.rememberHash(h)
		}
	}
	return nil
}

func (e *graphEntry) remember(text string) { e.rememberHash(events.TextHash(text)) }

func (e *graphEntry) rememberHash(h string) {
	if len(e.known) >= maxKnownHashes {
		clear(e.known)
	}
	e.known[h] = true
}

// appendEvent appends a graph event with the aggregate's expected last
// sequence. A stale expectation is a conflict for the caller to retry.
func (v *Vine) appendEvent(ctx context.Context, e *graphEntry, graphID, typ, actor string, payload any) (uint64, error) {
	env, err := events.NewEnvelope(v.cfg.Now(), typ, graphID, actor, events.VineSchema, payload)
	if err != nil {
		return 0, err
	}
	ack, err := v.store.Append(ctx, events.VineSubject(graphID, typ), env, events.Expect{Filter: events.GraphFilter(graphID), LastSeq: e.seq}, "")
	if errors.Is(err, events.ErrPayloadTooLarge) {
		return 0, trellis.FieldError("file", "the graph is too large to record as one event (%v)", err)
	}
	if err != nil {
		if errors.Is(err, events.ErrWrongLastSequence) {
			return 0, err
		}
		return 0, storeError("append "+typ, err)
	}
	return ack.Seq, nil
}

func (v *Vine) appendSnapshot(ctx context.Context, e *graphEntry, f vineFile, typ string, g vine.Graph, actor string) error {
	text, err := vine.Serialize(g)
	if err != nil {
		return vineError("file", err)
	}
	gz, err := events.Compress(text)
	if err != nil {
		return trellis.Errorf(trellis.CodeInternal, "compress graph: %w", err)
	}
	p := events.GraphSnapshotPayload{Path: f.rel, TextGz: gz, Hash: events.TextHash(text), Nodes: len(g.Nodes)}
	seq, err := v.appendEvent(ctx, e, f.graphID, typ, actor, p)
	if errors.Is(err, events.ErrWrongLastSequence) {
		return trellis.Errorf(trellis.CodeConflict, "graph %s changed while its file was being reconciled; try again", f.graphID)
	}
	if err != nil {
		return err
	}
	e.st = &events.GraphState{GraphID: f.graphID, Path: f.rel, Graph: g, Events: 1}
	e.seq = seq
	return nil
}

// writeGraph rewrites the .vine file from the cached state, atomically.
func (v *Vine) writeGraph(e *graphEntry, f vineFile) error {
	text, err := vine.Serialize(e.st.Graph)
	if err != nil {
		return vineError("file", err)
	}
	return v.writeText(e, f, text)
}

// writeText writes the canonical text of the cached state.
func (v *Vine) writeText(e *graphEntry, f vineFile, text string) error {
	if err := projections.WriteFileAtomic(f.abs, []byte(text)); err != nil {
		return trellis.Errorf(trellis.CodeInternal, "write %s: %w", f.abs, err)
	}
	e.remember(text)
	return nil
}

// mutate runs build against the current graph and records the batch it
// returns; when another process appended first, it catches up and builds
// again. It returns the batch result after the file is rewritten.
func (v *Vine) mutate(ctx context.Context, file, actor string, build func(g vine.Graph) ([]vine.Op, error)) (*trellis.VineWriteResult, *vine.BatchResult, error) {
	e, f, _, err := v.open(ctx, file, actor)
	if err != nil {
		return nil, nil, err
	}
	defer e.mu.Unlock()
	for attempt := 0; ; attempt++ {
		ops, err := build(e.st.Graph)
		if err != nil {
			return nil, nil, err
		}
		res, err := vine.Apply(e.st.Graph, ops)
		if err != nil {
			return nil, nil, vineError("operations", err)
		}
		text, err := vine.Serialize(res.Graph)
		if err != nil {
			return nil, nil, vineError("operations", err)
		}
		seq, err := v.appendEvent(ctx, e, f.graphID, events.GraphBatchApplied, actor, events.GraphBatchPayload{Ops: ops, Summary: res.Summary, Hash: events.TextHash(text)})
		if errors.Is(err, events.ErrWrongLastSequence) {
			// Another process appended first: catch up and decide again.
			// Many agents on one graph contend here, so allow many rounds
			// and spread them with a little jitter.
			if attempt+1 >= maxGraphAttempts {
				return nil, nil, trellis.Errorf(trellis.CodeConflict, "graph %s keeps changing concurrently; try again", f.graphID)
			}
			time.Sleep(time.Duration(rand.IntN(1000*(attempt+1))) * time.Microsecond)
			if err := v.catchUp(ctx, e, f.graphID); err != nil {
				return nil, nil, err
			}
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		e.st = &events.GraphState{GraphID: f.graphID, Path: f.rel, Graph: res.Graph, Events: e.st.Events + 1}
		e.seq = seq
		written, err := v.writeAll(e, f, res, text)
		if err != nil {
			return nil, nil, err
		}
		fr := vine.Next(res.Graph)
		return &trellis.VineWriteResult{GraphID: f.graphID, Summary: res.Summary, Results: res.Results, Progress: fr.Progress, Frontier: fr, Written: written}, &res, nil
	}
}

// writeAll rewrites the graph's file and writes the child files that
// extract_to_ref produced (inside the workspace roots).
func (v *Vine) writeAll(e *graphEntry, f vineFile, res vine.BatchResult, text string) ([]string, error) {
	if err := v.writeText(e, f, text); err != nil {
		return nil, err
	}
	written := []string{f.abs}
	for _, r := range res.Results {
		if r.Extracted == nil {
			continue
		}
		path, err := vine.ResolveURI(filepath.Dir(f.abs), r.Extracted.Vine, v.cfg.Roots)
		if err != nil {
			return written, vineError("operations", err)
		}
		text, err := vine.Serialize(r.Extracted.Graph)
		if err != nil {
			return written, vineError("operations", err)
		}
		if err := projections.WriteFileAtomic(path, []byte(text)); err != nil {
			return written, trellis.Errorf(trellis.CodeInternal, "write %s: %w", path, err)
		}
		written = append(written, path)
	}
	return written, nil
}

// Write applies one atomic batch (vine_write). Operations that would leave
// the graph invalid fail as a whole; the log and the file are unchanged.
func (v *Vine) Write(ctx context.Context, req trellis.VineWriteRequest) (*trellis.VineWriteResult, error) {
	if len(req.Operations) == 0 {
		return nil, trellis.FieldError("operations", "must hold at least one operation")
	}
	if err := v.checkExtractTargets(req); err != nil {
		return nil, err
	}
	res, _, err := v.mutate(ctx, req.File, agentOr(req.Agent), func(vine.Graph) ([]vine.Op, error) { return req.Operations, nil })
	return res, err
}

// checkExtractTargets rejects extract_to_ref targets outside the workspace
// before anything is recorded.
func (v *Vine) checkExtractTargets(req trellis.VineWriteRequest) error {
	for i, op := range req.Operations {
		if op.Op != vine.OpExtractToRef && op.Op != vine.OpAddRef && op.Op != vine.OpUpdateRefURI {
			continue
		}
		uri := op.Vine
		if op.Op == vine.OpUpdateRefURI {
			uri = op.URI
		}
		if uri == "" {
			continue // the batch reports the missing argument
		}
		f, err := v.resolve(req.File)
		if err != nil {
			return err
		}
		if _, err := vine.ResolveURI(filepath.Dir(f.abs), uri, v.cfg.Roots); err != nil {
			return trellis.FieldError(fmt.Sprintf("operations[%d]", i), "%v", err)
		}
	}
	return nil
}

// Claim atomically claims one ready task for an agent: the given one (a
// conflict when it is not ready, for example another agent got it first),
// or else the first task ready to start, moving on to the next one when
// another agent wins the race. It returns a nil task when none is ready.
func (v *Vine) Claim(ctx context.Context, req trellis.VineClaimRequest) (*trellis.VineClaimResult, error) {
	if err := trellis.ValidateWorkerID(req.Agent); err != nil {
		return nil, trellis.FieldError("agent", "%s", trellis.AsError(err).Message)
	}
	var graphID string
	res, batch, err := v.mutate(ctx, req.File, req.Agent, func(g vine.Graph) ([]vine.Op, error) {
		if req.ID != "" {
			return []vine.Op{{Op: vine.OpClaim, ID: req.ID}}, nil
		}
		ready := vine.Next(g).ReadyToStart
		for _, n := range ready {
			if !n.IsRef() {
				return []vine.Op{{Op: vine.OpClaim, ID: n.ID}}, nil
			}
		}
		return nil, errNothingReady
	})
	if errors.Is(err, errNothingReady) {
		f, rerr := v.resolve(req.File)
		if rerr != nil {
			return nil, rerr
		}
		graphID = f.graphID
		e := v.entry(graphID)
		e.mu.Lock()
		progress := vine.Next(e.st.Graph).Progress
		e.mu.Unlock()
		return &trellis.VineClaimResult{GraphID: graphID, Progress: progress}, nil
	}
	if err != nil {
		return nil, err
	}
	return &trellis.VineClaimResult{GraphID: res.GraphID, Task: batch.Results[0].Claimed, Progress: res.Progress}, nil
}

var errNothingReady = errors.New("no task is ready to start")

// Expand inlines the child graph of a reference node (vine_expand). The
// child file is resolved against the parent's directory and must lie
// inside the workspace roots; the child graph is recorded in the event, so
// replay does not depend on the child file.
func (v *Vine) Expand(ctx context.Context, req trellis.VineExpandRequest) (*trellis.VineWriteResult, error) {
	if strings.TrimSpace(req.RefID) == "" {
		return nil, trellis.FieldError("ref_id", "must not be empty")
	}
	if strings.TrimSpace(req.ChildFile) == "" {
		return nil, trellis.FieldError("child_file", "must not be empty")
	}
	e, f, _, err := v.open(ctx, req.File, agentOr(req.Agent))
	if err != nil {
		return nil, err
	}
	defer e.mu.Unlock()
	childPath, err := vine.ResolveURI(filepath.Dir(f.abs), req.ChildFile, v.cfg.Roots)
	if err != nil {
		return nil, trellis.FieldError("child_file", "%v", err)
	}
	if _, err := v.resolve(childPath); err != nil {
		return nil, trellis.FieldError("child_file", "%s", trellis.AsError(err).Message)
	}
	child, _, err := v.readVineFile(childPath, "child_file")
	if err != nil {
		return nil, err
	}
	if child == nil {
		return nil, trellis.FieldError("child_file", "%s does not exist", childPath)
	}
	childText, err := vine.Serialize(*child)
	if err != nil {
		return nil, vineError("child_file", err)
	}
	gz, err := events.Compress(childText)
	if err != nil {
		return nil, trellis.Errorf(trellis.CodeInternal, "compress child graph: %w", err)
	}
	for attempt := 0; ; attempt++ {
		g, err := vine.Expand(e.st.Graph, req.RefID, *child)
		if err != nil {
			return nil, vineError("ref_id", err)
		}
		text, err := vine.Serialize(g)
		if err != nil {
			return nil, vineError("ref_id", err)
		}
		rel, _ := filepath.Rel(filepath.Dir(f.abs), childPath)
		seq, err := v.appendEvent(ctx, e, f.graphID, events.GraphExpanded, agentOr(req.Agent), events.GraphExpandedPayload{
			RefID: req.RefID, ChildPath: filepath.ToSlash(rel), TextGz: gz, Hash: events.TextHash(text),
		})
		if errors.Is(err, events.ErrWrongLastSequence) {
			if attempt+1 >= maxGraphAttempts {
				return nil, trellis.Errorf(trellis.CodeConflict, "graph %s keeps changing concurrently; try again", f.graphID)
			}
			time.Sleep(time.Duration(rand.IntN(1000*(attempt+1))) * time.Microsecond)
			if err := v.catchUp(ctx, e, f.graphID); err != nil {
				return nil, err
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		e.st = &events.GraphState{GraphID: f.graphID, Path: f.rel, Graph: g, Events: e.st.Events + 1}
		e.seq = seq
		if err := v.writeText(e, f, text); err != nil {
			return nil, err
		}
		fr := vine.Next(g)
		return &trellis.VineWriteResult{GraphID: f.graphID, Summary: fmt.Sprintf("expanded %q from %s (%d nodes now)", req.RefID, req.ChildFile, len(g.Nodes)),
			Results: []vine.OpResult{}, Progress: fr.Progress, Frontier: fr, Written: []string{f.abs}}, nil
	}
}

// Graph returns the current graph of file (after reconciling the file) and
// its id and sequence.
func (v *Vine) Graph(ctx context.Context, file string) (vine.Graph, string, uint64, error) {
	e, f, _, err := v.open(ctx, file, "trellis")
	if err != nil {
		return vine.Graph{}, "", 0, err
	}
	defer e.mu.Unlock()
	return e.st.Graph, f.graphID, e.seq, nil
}

// Import takes a file under care, or reconciles it with the log.
func (v *Vine) Import(ctx context.Context, req trellis.VineFileRequest) (*trellis.VineGraphInfo, error) {
	e, f, rep, err := v.open(ctx, req.File, agentOr(req.Agent))
	if err != nil {
		return nil, err
	}
	defer e.mu.Unlock()
	return &trellis.VineGraphInfo{GraphID: f.graphID, File: f.abs, Path: f.rel, Imported: rep.imported, HandEdit: rep.handEdit,
		Progress: vine.Next(e.st.Graph).Progress}, nil
}

// Export returns a graph's canonical text from the log, by graph id or by
// file.
func (v *Vine) Export(ctx context.Context, req trellis.VineExportRequest) (*trellis.VineExportResult, error) {
	id := strings.TrimSpace(req.Graph)
	if id == "" {
		return nil, trellis.FieldError("graph", "must not be empty: give a graph id or a .vine file")
	}
	if !isGraphID(id) {
		f, err := v.resolve(id)
		if err != nil {
			return nil, err
		}
		id = f.graphID
	}
	recs, _, err := v.store.Load(ctx, events.StreamVine, events.GraphFilter(id))
	if err != nil {
		return nil, storeError("load graph", err)
	}
	if len(recs) == 0 {
		return nil, trellis.Errorf(trellis.CodeNotFound, "no graph %s in the log", id)
	}
	var st *events.GraphState
	for _, r := range recs {
		if st, err = events.ApplyGraph(st, r); err != nil {
			return nil, trellis.Errorf(trellis.CodeInternal, "fold graph %s: %w", id, err)
		}
	}
	text, err := vine.Serialize(st.Graph)
	if err != nil {
		return nil, vineError("graph", err)
	}
	return &trellis.VineExportResult{GraphID: id, Path: st.Path, Text: text}, nil
}

// isGraphID reports whether s looks like a graph id ("g" + 20 hex).
func isGraphID(s string) bool {
	if len(s) != 21 || s[0] != 'g' {
		return false
	}
	for _, r := range s[1:] {
		if !strings.ContainsRune("0123456789abcdef", r) {
			return false
		}
	}
	return true
}

func agentOr(a string) string {
	if a == "" {
		return "trellis"
	}
	return a
}
