package vinegraph

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/command"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/vine"
)

// GraphCacheSize bounds the VINE graphs a process keeps folded between
// commands (see Config.CacheSize). An evicted graph is simply loaded again
// from the log when next used; the concurrency check of every append
// (DESIGN.md rule 2) keeps decisions right either way.
const GraphCacheSize = 256

// Config configures the VINE domain: the command handler and the
// frontier projection behind its reads.
type Config struct {
	// Roots are the workspace roots: every .vine file and every reference a
	// graph expands must lie inside one (default: the current directory). A
	// relative file resolves against the first root.
	Roots []string
	// Served is true when the handler runs in a server shared by clients
	// (trellis serve): an error about the roots then says to restart the
	// server with --workspace, since a client's own flag does not reach it.
	Served bool
	// MaxFileBytes bounds a .vine file (default 16 MiB).
	MaxFileBytes int64
	// CacheSize bounds the graphs this process keeps folded between
	// commands (default GraphCacheSize; an evicted graph is folded from the
	// log again).
	CacheSize int
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Dir holds the frontier projection's files (handlers.NewService sets
	// it to <data>/projections).
	Dir string
	// ReadTimeout bounds how long a read waits for the frontier projection
	// to catch up with the log (default 10 s).
	ReadTimeout time.Duration
	// Logger receives projection warnings (default slog.Default()).
	Logger *slog.Logger
}

// Handler is the command side of VINE graphs. Each graph is an aggregate on
// trellis.vine.<graph_id>.>; commands on one graph are serialized within a
// process and checked against the log across processes, and the .vine file
// is rewritten from the resulting state after each change.
type Handler struct {
	store   *events.Store
	cfg     Config
	graphs  *command.Runner[*events.GraphState]
	files   *fileMemory
	writer  *fileWriter
	derived *derivedCache
}

// graphKind is the VINE graph aggregate: every event of
// trellis.vine.<graph_id>, folded by events.ApplyGraph (which never
// changes the state it is given, so states are shared, not cloned).
var graphKind = command.Kind[*events.GraphState]{
	Name:   "graph",
	Stream: events.StreamVine,
	Filter: events.GraphFilter,
	Fold:   events.ApplyGraph,
	Schema: events.VineSchema,
}

// graphState is a graph as a command sees it.
type graphState = command.State[*events.GraphState]

// NewHandler returns the VINE command handler. Roots are made absolute and
// resolved through symbolic links.
func NewHandler(store *events.Store, cfg Config) *Handler {
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
	if cfg.CacheSize <= 0 {
		cfg.CacheSize = GraphCacheSize
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	v := &Handler{store: store, cfg: cfg, files: newFileMemory(), writer: newFileWriter(), derived: newDerivedCache()}
	kind := graphKind
	kind.Fold = v.derived.fold
	v.graphs = command.New(store, kind, command.Config{
		Now: cfg.Now, CacheSize: cfg.CacheSize,
		// Many agents on one graph contend here: allow many rounds.
		MaxAttempts: 64,
	})
	return v
}

// Roots returns the workspace roots.
func (v *Handler) Roots() []string { return append([]string(nil), v.cfg.Roots...) }

// vineFile is a resolved .vine file.
type vineFile struct {
	abs, rel, graphID string
}

// resolve checks that file lies inside a workspace root and derives its
// graph id from the path relative to that root.
func (v *Handler) resolve(file string) (vineFile, error) {
	if strings.TrimSpace(file) == "" {
		return vineFile{}, trellis.FieldError("file", "must not be empty")
	}
	if !utf8.ValidString(file) || strings.ContainsRune(file, 0) {
		return vineFile{}, trellis.FieldError("file", "is not a valid path")
	}
	abs := filepath.Clean(file)
	if !filepath.IsAbs(abs) {
		if len(v.cfg.Roots) == 0 {
			return vineFile{}, trellis.FieldError("file", "%s is relative and no workspace root is configured; give an absolute path", file)
		}
		abs = filepath.Join(v.cfg.Roots[0], abs)
	}
	// Judge the real location: neither a symlinked directory nor the file
	// itself, a symlink, may lead out.
	real, err := realPath(abs)
	if err != nil {
		return vineFile{}, trellis.FieldError("file", "%v", err)
	}
	if rel, ok := v.inRoots(real); ok {
		return vineFile{abs: real, rel: rel, graphID: events.GraphID(rel)}, nil
	}
	return vineFile{}, trellis.FieldError("file", "%s", v.outsideRoots(abs))
}

// Inside resolves path (absolute, or relative to the first root) through
// symbolic links and checks that it lies inside a workspace root: every
// other path a request names (an ingest root) is judged as VINE files
// are. field names the request field in the error.
func (v *Handler) Inside(field, path string) (string, error) {
	if strings.TrimSpace(path) == "" || !utf8.ValidString(path) || strings.ContainsRune(path, 0) {
		return "", trellis.FieldError(field, "is not a valid path")
	}
	abs := filepath.Clean(path)
	if !filepath.IsAbs(abs) {
		if len(v.cfg.Roots) == 0 {
			return "", trellis.FieldError(field, "%s is relative and no workspace root is configured", path)
		}
		abs = filepath.Join(v.cfg.Roots[0], abs)
	}
	real, err := realPath(abs)
	if err != nil {
		return "", trellis.FieldError(field, "%v", err)
	}
	if _, ok := v.inRoots(real); !ok {
		return "", trellis.FieldError(field, "%s", v.outsideRoots(abs))
	}
	return real, nil
}

// inRoots returns real's path relative to the workspace root holding it
// (slash-separated), or false when none does. real is resolved through
// symbolic links (realPath), as the roots are.
func (v *Handler) inRoots(real string) (string, bool) {
	for _, root := range v.cfg.Roots {
		rel, err := filepath.Rel(root, real)
		if err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel) {
			return filepath.ToSlash(rel), true
		}
	}
	return "", false
}

// realPath resolves p (absolute and clean) through symbolic links: the
// whole path when it exists, else its nearest existing parent with the
// rest appended, so a path to be created is judged where the write would
// really land. A symbolic link that leads nowhere (or into a loop) is an
// error: a write through it would land wherever it points once it exists.
func realPath(p string) (string, error) {
	rest, cur := "", p
	for {
		if _, err := os.Lstat(cur); err == nil {
			r, err := filepath.EvalSymlinks(cur)
			if err != nil {
				return "", fmt.Errorf("%s is a symbolic link that cannot be followed", cur)
			}
			return filepath.Join(r, rest), nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("%s cannot be examined", cur)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return p, nil
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

// resolveChild resolves a child .vine file a request names (extract_to_ref
// and add_ref's vine, update_ref_uri's uri, vine_expand's child_file)
// against the directory of the parent graph f: through symbolic links,
// inside the workspace roots, named *.vine, and, when fresh (a file
// Trellis is to create), not existing yet.
func (v *Handler) resolveChild(f vineFile, uri string, fresh bool) (string, error) {
	p, err := vine.ResolveURI(filepath.Dir(f.abs), uri, v.cfg.Roots)
	if err != nil {
		return "", err
	}
	if filepath.Ext(p) != ".vine" {
		return "", fmt.Errorf("%q is not a .vine file name", uri)
	}
	real, err := realPath(p)
	if err != nil {
		return "", err
	}
	if _, ok := v.inRoots(real); !ok {
		return "", fmt.Errorf("%q leads to %s, outside the workspace roots %s", uri, real, strings.Join(v.cfg.Roots, ", "))
	}
	if filepath.Ext(real) != ".vine" {
		return "", fmt.Errorf("%q leads to %s, not a .vine file", uri, real)
	}
	if fresh {
		if _, err := os.Lstat(p); err == nil {
			return "", fmt.Errorf("%q exists already: extract_to_ref writes a new file and never overwrites one", uri)
		}
	}
	return real, nil
}

// outsideRoots explains that path is outside the workspace roots and how
// to fix it.
func (v *Handler) outsideRoots(path string) string {
	roots := strings.Join(v.cfg.Roots, ", ")
	if v.cfg.Served {
		return fmt.Sprintf("%s is outside the workspace roots of the running server (%s); restart it with "+
			"`trellis serve --workspace DIR` where DIR holds the file (comma-separate several roots, e.g. --workspace %s,%s); "+
			"--workspace on a client command does not change a running server's roots", path, roots, firstOr(v.cfg.Roots, "ROOT"), filepath.Dir(path))
	}
	return fmt.Sprintf("%s is outside the workspace roots (%s); run with --workspace DIR (env TRELLIS_WORKSPACE, comma-separated) where DIR holds the file, e.g. --workspace %s",
		path, roots, filepath.Dir(path))
}

func firstOr(list []string, def string) string {
	if len(list) == 0 {
		return def
	}
	return list[0]
}

// readVineFile reads and checks a .vine file: size, text, parse, validate.
// A missing file returns (nil graph, "", nil).
func (v *Handler) readVineFile(path, field string) (*vine.Graph, string, error) {
	text, exists, err := v.readVineText(path, field)
	if err != nil || !exists {
		return nil, text, err
	}
	return parseVineText(path, field, text)
}

// readVineText reads a .vine file and checks its size and that it is text;
// exists is false for a missing file.
func (v *Handler) readVineText(path, field string) (text string, exists bool, err error) {
	info, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", true, trellis.FieldError(field, "%v", err)
	}
	if info.IsDir() {
		return "", true, trellis.FieldError(field, "%s is a directory, not a .vine file", path)
	}
	if info.Size() > v.cfg.MaxFileBytes {
		return "", true, trellis.FieldError(field, "%s is %d bytes; .vine files up to %d bytes are accepted", path, info.Size(), v.cfg.MaxFileBytes)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", true, trellis.FieldError(field, "%v", err)
	}
	if bytes.IndexByte(data, 0) >= 0 || !utf8.Valid(data) {
		return "", true, trellis.FieldError(field, "%s holds binary data, not UTF-8 text", path)
	}
	if len(data) == 0 {
		return "", true, nil
	}
	// data is never written again: the text is made of it, not copied
	// (a graph's file may be megabytes, read by every command).
	return unsafe.String(&data[0], len(data)), true, nil
}

// parseVineText parses and validates the text of the .vine file path.
func parseVineText(path, field, text string) (*vine.Graph, string, error) {
	g, err := vine.Parse(text)
	if err != nil {
		return nil, text, parseError(field, path, err)
	}
	if err := vine.Validate(g); err != nil {
		return nil, text, vineError(field, err)
	}
	return &g, text, nil
}

// parseError reports a file that does not parse as VINE without echoing
// any of its content: the file may be anything a path can name (a .env,
// /etc/passwd through a link), and the caller may not read it. The line,
// the problem and what was wanted are kept.
func parseError(field, path string, err error) error {
	var pe *vine.ParseError
	if !errors.As(err, &pe) {
		return vineError(field, err)
	}
	msg := fmt.Sprintf("%s is not a valid VINE file: %s at line %d", path, pe.What, pe.Line)
	if want, _, ok := strings.Cut(pe.Detail, ", got "); ok && strings.HasPrefix(want, "want ") {
		msg += " (" + want + ")"
	}
	return &trellis.Error{Code: trellis.CodeInvalid, Field: field, Message: msg}
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

// open locks the graph of file and brings its state up to date with the
// log (see reconcile). The caller calls the returned unlock.
func (v *Handler) open(ctx context.Context, file, actor string) (graphState, vineFile, *openReport, func(), error) {
	f, err := v.resolve(file)
	if err != nil {
		return graphState{}, f, nil, nil, err
	}
	unlock := v.graphs.Lock(f.graphID)
	st, rep, err := v.reconcile(ctx, f, actor)
	if err != nil {
		unlock()
		return st, f, nil, nil, err
	}
	return st, f, rep, unlock, nil
}

// openReport says what reconcile recorded and found.
type openReport struct {
	imported, handEdit bool
	// missing: the file does not exist (the log has the graph).
	missing bool
	// read is what the file held when it was read: the file is rewritten
	// only if it still holds exactly that.
	read fileRead
	// conflicts are the hand edits that could not be merged (the log's
	// version kept).
	conflicts []vine.MergeConflict
}

// HandEditActor is the actor of a hand_edited event: a person edited the
// .vine file; the payload names the command that noticed it.
const HandEditActor = "hand-edit"

// reconcile compares the file with the log and records what the log does
// not know yet: a file the log does not know is recorded (imported), a
// valid hand edit of the file is merged three-way (base: the text this
// process last wrote to the file or merged from it; theirs: the file;
// ours: the log) and
// the merge recorded (hand_edited, by HandEditActor), so the log learns
// what the file holds before the caller's command runs. Edits that
// conflict with the log keep the log's version and are reported; a hand
// edit never reverts a recorded claim. It never writes the file. The
// graph's lock is held.
func (v *Handler) reconcile(ctx context.Context, f vineFile, actor string) (graphState, *openReport, error) {
	for attempt := 1; ; attempt++ {
		st, rep, err := v.reconcileOnce(ctx, f, actor)
		if !errors.Is(err, errJudgedStale) {
			return st, rep, err
		}
		if attempt == 8 {
			return st, rep, trellis.Errorf(trellis.CodeConflict, "graph %s kept changing while its file was being reconciled; try again", f.graphID)
		}
		select {
		case <-ctx.Done():
			return st, rep, ctx.Err()
		case <-time.After(command.DefaultBackoff(attempt)):
		}
	}
}

// reconcileOnce is one attempt of reconcile; errJudgedStale when the log
// moved on before its judgement was recorded.
func (v *Handler) reconcileOnce(ctx context.Context, f vineFile, actor string) (graphState, *openReport, error) {
	rep := &openReport{}
	st, err := v.graphs.Load(ctx, f.graphID)
	if err != nil {
		return st, nil, command.StoreError("load graph", err)
	}
	if mem := v.files.get(f.graphID); st.Exists() && mem.trust.stamp != (fileStamp{}) && mem.trust.stamp == mem.stamp &&
		mem.written != "" && int64(len(mem.written)) <= v.cfg.MaxFileBytes {
		if now, ok := settledStamp(f.abs); ok && now == mem.trust {
			// The file this process wrote last, untouched since (see
			// fileTrust): known text, as below, without reading 7 MB.
			rep.read = fileRead{exists: true, stamp: now.stamp}
			return st, rep, nil
		}
	}
	before := stampOf(f.abs)
	text, exists, ferr := v.readVineText(f.abs, "file")
	rep.read = fileRead{exists: exists}
	if after := stampOf(f.abs); rep.read.exists && before == after {
		rep.read.stamp = after // else saved while read: no rewrite this time
	}
	mem := v.files.get(f.graphID)
	if st.Exists() && exists && ferr == nil && v.isKnownText(f.graphID, st.Value, mem, text) {
		// The text of the log's state, or the one this process last wrote
		// or is writing: compared as it is, without hashing it.
		return st, rep, nil
	}
	h := events.TextHash(text)
	if exists {
		rep.read.hash = h
	}
	if st.Exists() && exists && !(ferr == nil && (h == st.Value.Hash || mem.knows(h))) && v.writer.busy(f.graphID) {
		// A text this process does not know while its writer is
		// replacing the file: judged once the write is done (the base of
		// a merge is the text it wrote), read again.
		_ = v.flush(f.graphID, v.writer.ticket(f.graphID))
		return v.reconcileOnce(ctx, f, actor)
	}
	if st.Exists() && exists && ferr == nil && (h == st.Value.Hash || mem.knows(h)) {
		// What the log holds, what this process wrote or is writing (the
		// log may be ahead: the next write catches up), or a text already
		// merged: nothing to parse.
		return st, rep, nil
	}
	var g *vine.Graph
	if exists && ferr == nil {
		g, _, ferr = parseVineText(f.abs, "file", text)
	}
	if !st.Exists() {
		// Not in the log yet: the file is imported as it is.
		if ferr != nil {
			return st, nil, ferr
		}
		if g == nil {
			return st, nil, &trellis.Error{Code: trellis.CodeNotFound, Field: "file", Message: fmt.Sprintf("%s does not exist and no graph of that path is in the log", f.abs)}
		}
		if st, err = v.appendSnapshot(ctx, st, f, events.GraphImported, *g, actor, "", nil); err != nil {
			return st, nil, err
		}
		v.files.wrote(f.graphID, text, h, fileStamp{}, true)
		rep.imported = true
		return st, rep, nil
	}
	if g == nil && ferr == nil {
		// The file is gone: the log still has the graph.
		rep.missing = true
		return st, rep, nil
	}
	if ferr != nil {
		return st, nil, &trellis.Error{Code: trellis.CodeInvalid, Field: "file", Err: ferr, Message: fmt.Sprintf(
			"%s differs from the graph in the log and is not a valid graph (%v); fix the file, or restore the last recorded version with `trellis vine export %s --out %s`",
			f.abs, trellis.AsError(ferr).Message, f.graphID, f.abs)}
	}
	if g.Equal(st.Value.Graph) {
		v.files.judged(f.graphID, h)
		return st, rep, nil // same graph, other formatting
	}
	base := st.Value.Graph
	if mem.written != "" {
		if b, err := vine.Parse(mem.written); err == nil {
			base = b
		}
	} else if stale, err := v.isPastState(ctx, f.graphID, *g); err != nil {
		return st, nil, err
	} else if stale {
		// This process never wrote the file (it started since): a past
		// state is taken for a file another process has not rewritten
		// yet, not a hand edit. The next change rewrites it.
		return st, rep, nil
	}
	merged, conflicts := vine.Merge3(base, *g, st.Value.Graph)
	if err := vine.Validate(merged); err != nil {
		return st, nil, &trellis.Error{Code: trellis.CodeInvalid, Field: "file", Err: err, Message: fmt.Sprintf(
			"the hand edit of %s cannot be merged with the graph in the log: the result is not a valid graph (%v); fix the file, or restore the recorded version with `trellis vine export %s --out %s`",
			f.abs, err, f.graphID, f.abs)}
	}
	rep.conflicts = conflicts
	if !merged.Equal(st.Value.Graph) || len(conflicts) > 0 {
		if st, err = v.appendSnapshot(ctx, st, f, events.GraphHandEdited, merged, HandEditActor, actor, conflicts); err != nil {
			return st, nil, err
		}
		rep.handEdit = true
	}
	// The file's text is now merged into the log: it is the base of the
	// next hand edit's merge (a later save of the same buffer only adds
	// what is new in it).
	v.files.wrote(f.graphID, text, h, fileStamp{}, false)
	v.files.judged(f.graphID, h)
	return st, rep, nil
}

// isKnownText reports whether text is the canonical text of st (when this
// process keeps it) or a text it wrote or is writing to the file.
func (v *Handler) isKnownText(graphID string, st *events.GraphState, mem fileMem, text string) bool {
	if text == "" {
		return false // an empty file is never a graph
	}
	if text == mem.written || text == mem.writingText {
		return true
	}
	cur, ok := v.derived.cachedText(graphID, st)
	return ok && text == cur
}

// restore writes a missing file back from the log; an existing file is
// left alone (a merged hand edit is written with the next change).
func (v *Handler) restore(ctx context.Context, st graphState, f vineFile, rep *openReport) error {
	if !rep.missing {
		return nil
	}
	return v.writeGraph(ctx, st, f, rep.read)
}

// isPastState reports whether g equals any state the graph had in its
// history (a file left behind by a concurrent writer). The result hashes
// the events record answer it without replaying; events without one are
// replayed.
func (v *Handler) isPastState(ctx context.Context, graphID string, g vine.Graph) (bool, error) {
	recs, _, err := v.store.Load(ctx, events.StreamVine, events.GraphFilter(graphID))
	if err != nil {
		return false, command.StoreError("load graph", err)
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

// graphError maps an error of the command runner or the store onto a
// Trellis error.
func graphError(graphID, what string, err error) error {
	var te *trellis.Error
	switch {
	case errors.As(err, &te):
		return err
	case errors.Is(err, command.ErrConflict):
		return trellis.Errorf(trellis.CodeConflict, "graph %s keeps changing concurrently; try again", graphID)
	case errors.Is(err, events.ErrPayloadTooLarge):
		return trellis.FieldError("file", "the graph is too large to record (%v)", err)
	}
	return command.StoreError(what, err)
}

func (v *Handler) appendSnapshot(ctx context.Context, st graphState, f vineFile, typ string, g vine.Graph, actor, noticedBy string, conflicts []vine.MergeConflict) (graphState, error) {
	vt, err := vine.NewText(g)
	if err != nil {
		return st, vineError("file", err)
	}
	text := vt.String()
	gz, err := events.Compress(text)
	if err != nil {
		return st, trellis.Errorf(trellis.CodeInternal, "compress graph: %w", err)
	}
	// The snapshot was judged against st: when the runner finds the log
	// moved on (another process claimed or wrote meanwhile) and decides
	// again on the newer state, appending the snapshot would undo what
	// was recorded since (even events this build does not fold). Only the
	// first decision, on st itself, may append; reconcile judges again.
	judged := -1
	if st.Value != nil {
		judged = st.Value.Events
	}
	decided := false
	next, err := v.graphs.Run(ctx, st, actor, func(cur *events.GraphState) (command.Decision, error) {
		again := decided
		decided = true
		if again || (typ == events.GraphImported && cur != nil) || (typ != events.GraphImported && (cur == nil || cur.Events != judged)) {
			return command.Decision{}, fmt.Errorf("graph %s: %w", f.graphID, errJudgedStale)
		}
		return command.Decision{Subject: events.VineSubject(f.graphID, typ), Type: typ,
			Payload: events.GraphSnapshotPayload{Path: f.rel, TextGz: gz, Hash: events.TextHash(text), Nodes: len(g.Nodes),
				NoticedBy: noticedBy, Conflicts: conflicts}}, nil
	})
	if err != nil {
		if errors.Is(err, command.ErrConflict) || errors.Is(err, errJudgedStale) {
			return st, fmt.Errorf("graph %s: %w", f.graphID, errJudgedStale)
		}
		return st, graphError(f.graphID, "append "+typ, err)
	}
	// The next changes start from this state: its text and frontier
	// index are kept for them.
	v.derived.put(f.graphID, next.Value, vt)
	return next, nil
}

// errJudgedStale reports a file judged against a state of the graph that
// the log has moved past before the judgement was recorded.
var errJudgedStale = errors.New("the graph changed while its file was being reconciled")

// submit runs one graph command combined with the others submitted for
// the same graph at the same time (command.Runner.Submit): the round
// reconciles the file once, decides the commands in order, appends their
// events as one chain and hands the state to the file's writer once (see
// writer.go). With wait, the caller also waits for the file to be
// written; a claim does not (its event is the claim).
func (v *Handler) submit(ctx context.Context, f vineFile, actor string, wait bool, decide func(*events.GraphState) (command.Decision, error)) (graphState, error) {
	var rep *openReport
	st, err := v.graphs.Submit(ctx, f.graphID, command.Command[*events.GraphState]{Actor: actor, Decide: decide}, &command.Hooks[*events.GraphState]{
		Prepare: func(ctx context.Context, _ string) (graphState, error) {
			st, r, err := v.reconcile(ctx, f, actor)
			rep = r
			return st, err
		},
		Finish: func(ctx context.Context, st graphState, appended bool) error {
			if appended && rep != nil {
				v.queue(f, st, rep.read)
				return nil
			}
			return v.restore(ctx, st, f, rep)
		},
	})
	if err == nil && wait {
		// The round's writer job covers this command's state: the leader
		// queued it before any caller of the round returned.
		err = v.flush(f.graphID, v.writer.ticket(f.graphID))
	}
	return st, err
}

// mutate runs build against the current graph and records the batch it
// returns (combined with other commands on the graph), then rewrites the
// file. It returns the batch result.
func (v *Handler) mutate(ctx context.Context, file, actor string, wait bool, build func(cur *events.GraphState) ([]vine.Op, error)) (*trellis.VineWriteResult, *vine.BatchResult, error) {
	f, err := v.resolve(file)
	if err != nil {
		return nil, nil, err
	}
	var res vine.BatchResult
	var progress vine.Progress // after the batch, when the fold of its event knows it
	st, err := v.submit(ctx, f, actor, wait, func(cur *events.GraphState) (command.Decision, error) {
		progress = vine.Progress{}
		ops, err := build(cur)
		if err != nil {
			return command.Decision{}, err
		}
		// cur is a recorded state, valid: a batch of status changes is not
		// validated again.
		if res, err = vine.ApplyValid(cur.Graph, v.derived.index(f.graphID, cur), ops); err != nil {
			return command.Decision{}, vineError("operations", err)
		}
		base, err := v.derived.text(f.graphID, cur)
		if err != nil {
			return command.Decision{}, vineError("operations", err)
		}
		// The text of the result: only the blocks the batch changed are
		// written again.
		text, changed, whole, err := base.Update(res.Graph)
		if err != nil {
			return command.Decision{}, vineError("operations", err)
		}
		if !whole && len(changed) == 0 || whole && res.Graph.Equal(cur.Graph) {
			// Nothing to record (a task set to the status it has): no
			// event, so a repeated completion is recorded once.
			return command.Decision{}, errBatchUnchanged
		}
		h := events.TextHash(text.String())
		v.derived.decide(f.graphID, cur, &decidedBatch{hash: h, text: text, changed: changed, whole: whole, progress: &progress})
		return command.Decision{Subject: events.VineSubject(f.graphID, events.GraphBatchApplied), Type: events.GraphBatchApplied,
			Payload: events.GraphBatchPayload{Ops: ops, Summary: res.Summary, Hash: h}}, nil
	})
	if errors.Is(err, errNothingReady) {
		// Nothing to change: a success that leaves the file alone
		// (written back only when it is missing).
		fr := vine.Next(st.Value.Graph)
		return &trellis.VineWriteResult{GraphID: f.graphID, Progress: fr.Progress, Frontier: fr}, nil, err
	}
	if errors.Is(err, errBatchUnchanged) {
		fr := vine.Next(st.Value.Graph)
		return &trellis.VineWriteResult{GraphID: f.graphID, Summary: res.Summary, Results: res.Results, Progress: fr.Progress, Frontier: fr}, &res, nil
	}
	if err != nil {
		return nil, nil, graphError(f.graphID, "append batch", err)
	}
	written, err := v.writeExtracted(f, res)
	if err != nil {
		return nil, nil, err
	}
	if !wait && progress.RootID != "" {
		// A claim reports the progress only: the frontier index's.
		return &trellis.VineWriteResult{GraphID: f.graphID, Summary: res.Summary, Results: res.Results, Progress: progress,
			Written: append([]string{f.abs}, written...)}, &res, nil
	}
	fr := vine.Next(st.Value.Graph)
	return &trellis.VineWriteResult{GraphID: f.graphID, Summary: res.Summary, Results: res.Results, Progress: fr.Progress, Frontier: fr,
		Written: append([]string{f.abs}, written...)}, &res, nil
}

// writeExtracted writes the child files that extract_to_ref produced
// (inside the workspace roots).
func (v *Handler) writeExtracted(f vineFile, res vine.BatchResult) ([]string, error) {
	var written []string
	for _, r := range res.Results {
		if r.Extracted == nil {
			continue
		}
		path, err := v.resolveChild(f, r.Extracted.Vine, true)
		if err != nil {
			return written, trellis.FieldError("operations", "%v", err)
		}
		text, err := vine.Serialize(r.Extracted.Graph)
		if err != nil {
			return written, vineError("operations", err)
		}
		if err := writeNewFile(path, []byte(text)); err != nil {
			return written, trellis.Errorf(trellis.CodeInternal, "write %s: %w", path, err)
		}
		written = append(written, path)
	}
	return written, nil
}

// Write applies one atomic batch (vine_write). Operations that would leave
// the graph invalid fail as a whole; the log and the file are unchanged.
func (v *Handler) Write(ctx context.Context, req trellis.VineWriteRequest) (*trellis.VineWriteResult, error) {
	if len(req.Operations) == 0 {
		return nil, trellis.FieldError("operations", "must hold at least one operation")
	}
	if err := v.checkExtractTargets(req); err != nil {
		return nil, err
	}
	res, _, err := v.mutate(ctx, req.File, events.ActorOr(req.Agent), true, func(*events.GraphState) ([]vine.Op, error) { return req.Operations, nil })
	return res, err
}

// checkExtractTargets rejects extract_to_ref targets outside the workspace
// before anything is recorded.
func (v *Handler) checkExtractTargets(req trellis.VineWriteRequest) error {
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
		if _, err := v.resolveChild(f, uri, op.Op == vine.OpExtractToRef); err != nil {
			return trellis.FieldError(fmt.Sprintf("operations[%d]", i), "%s: %v", op.Op, err)
		}
	}
	return nil
}

// Claim atomically claims one ready task for an agent: the given one (a
// conflict when it is not ready, for example another agent got it first),
// or else the first task ready to start (agents claiming at once take
// distinct tasks, decided in one round). It returns a nil task when none
// is ready.
func (v *Handler) Claim(ctx context.Context, req trellis.VineClaimRequest) (*trellis.VineClaimResult, error) {
	if err := trellis.ValidateWorkerID(req.Agent); err != nil {
		return nil, trellis.FieldError("agent", "%s", trellis.AsError(err).Message)
	}
	res, batch, err := v.mutate(ctx, req.File, req.Agent, false, func(cur *events.GraphState) ([]vine.Op, error) {
		if req.ID != "" {
			return []vine.Op{{Op: vine.OpClaim, ID: req.ID}}, nil
		}
		// The first task ready to start, in graph order (Next's first),
		// from the graph's frontier index.
		if n, ok := v.derived.firstReady(cur.GraphID, cur); ok {
			return []vine.Op{{Op: vine.OpClaim, ID: n.ID}}, nil
		}
		return nil, errNothingReady
	})
	if errors.Is(err, errNothingReady) {
		return &trellis.VineClaimResult{GraphID: res.GraphID, Progress: res.Progress}, nil
	}
	if err != nil {
		return nil, err
	}
	return &trellis.VineClaimResult{GraphID: res.GraphID, Node: batch.Results[0].Claimed, Progress: res.Progress}, nil
}

var errNothingReady = errors.New("no task is ready to start")

// errBatchUnchanged: a batch that changes nothing is not recorded.
var errBatchUnchanged = errors.New("the batch changes nothing")

// Expand inlines the child graph of a reference node (vine_expand). The
// child file is resolved against the parent's directory and must lie
// inside the workspace roots; the child graph is recorded in the event, so
// replay does not depend on the child file.
func (v *Handler) Expand(ctx context.Context, req trellis.VineExpandRequest) (*trellis.VineWriteResult, error) {
	if strings.TrimSpace(req.RefID) == "" {
		return nil, trellis.FieldError("ref_id", "must not be empty")
	}
	if strings.TrimSpace(req.ChildFile) == "" {
		return nil, trellis.FieldError("child_file", "must not be empty")
	}
	f, err := v.resolve(req.File)
	if err != nil {
		return nil, err
	}
	childPath, err := v.resolveChild(f, req.ChildFile, false)
	if err != nil {
		return nil, trellis.FieldError("child_file", "%v", err)
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
	rel, _ := filepath.Rel(filepath.Dir(f.abs), childPath)
	st, err := v.submit(ctx, f, events.ActorOr(req.Agent), true, func(cur *events.GraphState) (command.Decision, error) {
		g, err := vine.Expand(cur.Graph, req.RefID, *child)
		if err != nil {
			return command.Decision{}, vineError("ref_id", err)
		}
		text, err := vine.Serialize(g)
		if err != nil {
			return command.Decision{}, vineError("ref_id", err)
		}
		return command.Decision{Subject: events.VineSubject(f.graphID, events.GraphExpanded), Type: events.GraphExpanded,
			Payload: events.GraphExpandedPayload{RefID: req.RefID, ChildPath: filepath.ToSlash(rel), TextGz: gz, Hash: events.TextHash(text)}}, nil
	})
	if err != nil {
		return nil, graphError(f.graphID, "append expansion", err)
	}
	g := st.Value.Graph
	fr := vine.Next(g)
	return &trellis.VineWriteResult{GraphID: f.graphID, Summary: fmt.Sprintf("expanded %q from %s (%d nodes now)", req.RefID, req.ChildFile, len(g.Nodes)),
		Results: []vine.OpResult{}, Progress: fr.Progress, Frontier: fr, Written: []string{f.abs}}, nil
}

// Graph returns the current graph of file, its id and its sequence, after
// reconciling the file (written back only when it is missing).
func (v *Handler) Graph(ctx context.Context, file string) (vine.Graph, string, uint64, error) {
	st, f, rep, unlock, err := v.open(ctx, file, "trellis")
	if err != nil {
		return vine.Graph{}, "", 0, err
	}
	defer unlock()
	if err := v.restore(ctx, st, f, rep); err != nil {
		return vine.Graph{}, "", 0, err
	}
	return st.Value.Graph, f.graphID, st.Seq, nil
}

// Import takes a file under care, or reconciles it with the log.
func (v *Handler) Import(ctx context.Context, req trellis.VineFileRequest) (*trellis.VineGraphInfo, error) {
	st, f, rep, unlock, err := v.open(ctx, req.File, events.ActorOr(req.Agent))
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := v.restore(ctx, st, f, rep); err != nil {
		return nil, err
	}
	return &trellis.VineGraphInfo{GraphID: f.graphID, File: f.abs, Path: f.rel, Imported: rep.imported, HandEdit: rep.handEdit,
		Progress: vine.Next(st.Value.Graph).Progress}, nil
}

// Export returns a graph's canonical text from the log, by graph id or by
// file.
func (v *Handler) Export(ctx context.Context, req trellis.VineExportRequest) (*trellis.VineExportResult, error) {
	id := strings.TrimSpace(req.Graph)
	if id == "" {
		return nil, trellis.FieldError("graph", "must not be empty: give a graph id or a .vine file")
	}
	if !events.IsGraphID(id) {
		f, err := v.resolve(id)
		if err != nil {
			return nil, err
		}
		id = f.graphID
	}
	st, err := v.graphs.Load(ctx, id)
	if err != nil {
		return nil, graphError(id, "load graph", err)
	}
	if !st.Exists() {
		return nil, trellis.Errorf(trellis.CodeNotFound, "no graph %s in the log", id)
	}
	text, err := vine.Serialize(st.Value.Graph)
	if err != nil {
		return nil, vineError("graph", err)
	}
	return &trellis.VineExportResult{GraphID: id, Path: st.Value.Path, Text: text}, nil
}

// writeNewFile writes a file that must not exist yet, atomically: a
// temporary file beside it is linked into place, which fails when the
// name exists (a file, a directory or a symbolic link), so nothing is
// ever overwritten or written through a link.
func writeNewFile(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Link(tmp.Name(), path)
}
