package codememory

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/chunking"
	"github.com/trellis/trellis/command"
	"github.com/trellis/trellis/events"
)

// IngestConfig configures an ingest.
type IngestConfig struct {
	// Root is the directory to ingest.
	Root string
	// Repo names the repository (default: the root's base name).
	Repo string
	// Rules decide what is never read (default chunking.DefaultRules()).
	Rules *chunking.Rules
	// MaxFileBytes skips larger files (default 1 MiB).
	MaxFileBytes int64
	// Workers append files concurrently (default 8).
	Workers int
	// Progress, when set, is called as files are done.
	Progress func(done, total int)
}

// IngestSummary reports an ingest.
type IngestSummary struct {
	Repo          string       `json:"repo"`
	Root          string       `json:"root"`
	FilesSeen     int          `json:"files_seen"`
	FilesSkipped  int          `json:"files_skipped"`
	FilesChanged  int          `json:"files_changed"`
	FilesNew      int          `json:"files_new"`
	FilesDeleted  int          `json:"files_deleted"`
	Unchanged     int          `json:"files_unchanged"`
	ChunksAdded   int          `json:"chunks_added"`
	ChunksRemoved int          `json:"chunks_removed"`
	Events        int          `json:"events"`
	Seconds       float64      `json:"seconds"`
	Skipped       []SkipReport `json:"skipped"`
	// Embedding reports the chunk embedding that followed the ingest (CLI
	// with an embedding model), timed apart.
	Embedding *EmbedSummary `json:"embedding,omitempty"`
}

// SkipReport says why a file was not ingested.
type SkipReport struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

var repoNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// RepoName derives a valid repository name from a directory.
func RepoName(root string) string {
	base := filepath.Base(filepath.Clean(root))
	var b strings.Builder
	for _, r := range base {
		if r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	name := strings.Trim(b.String(), "-")
	if name == "" {
		name = "repo"
	}
	if len(name) > 64 {
		name = name[:64]
	}
	return name
}

// Ingest walks the tree and appends, per changed file, one file_indexed
// event: the file's state (also in its headers) and its chunk difference
// (the added chunks with their content, the removed ids); a difference too
// large for one message is stored through the log's large-payload path (one
// event per file, whatever its size). Unchanged files (same mtime and size, or same content hash) cost
// no parsing and no events; deleted files get file_deleted. Unreadable,
// binary, sensitive and oversized files are skipped and reported; the
// ingest goes on with the rest.
func Ingest(ctx context.Context, store *events.Store, cfg IngestConfig) (*IngestSummary, error) {
	start := time.Now()
	root, err := filepath.Abs(cfg.Root)
	if err != nil {
		return nil, trellis.FieldError("path", "%v", err)
	}
	info, err := os.Stat(root)
	if err != nil {
		return nil, trellis.FieldError("path", "%v", err)
	}
	if !info.IsDir() {
		return nil, trellis.FieldError("path", "%s is not a directory", root)
	}
	if cfg.Repo == "" {
		cfg.Repo = RepoName(root)
	}
	if !repoNameRE.MatchString(cfg.Repo) {
		return nil, trellis.FieldError("repo", "%q is not a repository name: use 1-64 characters of A-Z a-z 0-9 _ -", cfg.Repo)
	}
	if cfg.Rules == nil {
		r := chunking.DefaultRules()
		cfg.Rules = &r
	}
	if cfg.MaxFileBytes <= 0 {
		cfg.MaxFileBytes = 1 << 20
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 8
	}
	sum := &IngestSummary{Repo: cfg.Repo, Root: root, Skipped: []SkipReport{}}
	// What the log holds: the last file_indexed / file_deleted per file.
	known := map[string]events.FileState{}
	err = store.LastHeadersPerSubject(ctx, events.StreamChunks, events.RepoStateSubjects(cfg.Repo), func(h events.HeaderRecord) error {
		st, err := events.FileStateFromHeaders(h)
		if err == nil {
			known[st.Path] = st
		}
		return err
	})
	if err != nil {
		return nil, command.StoreError("load repository state", err)
	}
	files, skipped := walk(root, cfg.Rules)
	sum.Skipped = append(sum.Skipped, skipped...)
	sum.FilesSeen = len(files) + len(skipped)
	var mu sync.Mutex
	seen := map[string]bool{}
	for _, f := range files {
		seen[f.rel] = true
	}
	jobs := make(chan walkedFile)
	var wg sync.WaitGroup
	var firstErr error
	done := 0
	for w := 0; w < cfg.Workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for f := range jobs {
				res, err := ingestFile(ctx, store, cfg, f, known[f.rel])
				mu.Lock()
				done++
				if cfg.Progress != nil {
					cfg.Progress(done, len(files))
				}
				switch {
				case err != nil && firstErr == nil:
					firstErr = err
				case res.skip != "":
					sum.Skipped = append(sum.Skipped, SkipReport{Path: f.rel, Reason: res.skip})
				case res.unchanged:
					sum.Unchanged++
				default:
					if res.isNew {
						sum.FilesNew++
					} else {
						sum.FilesChanged++
					}
				}
				sum.ChunksAdded += res.added
				sum.ChunksRemoved += res.removed
				sum.Events += res.events
				if res.deleted {
					sum.FilesDeleted++
				}
				mu.Unlock()
			}
		}()
	}
	for _, f := range files {
		if ctx.Err() != nil {
			break
		}
		jobs <- f
	}
	close(jobs)
	wg.Wait()
	if firstErr != nil {
		return sum, firstErr
	}
	// Files the log holds that are gone now.
	var gone []string
	for p, st := range known {
		if !st.Deleted && !seen[p] {
			gone = append(gone, p)
		}
	}
	sort.Strings(gone)
	for _, p := range gone {
		n, err := deleteFile(ctx, store, cfg.Repo, known[p])
		if err != nil {
			return sum, err
		}
		sum.FilesDeleted++
		sum.ChunksRemoved += n
		sum.Events++
	}
	sum.FilesSkipped = len(sum.Skipped)
	sort.Slice(sum.Skipped, func(i, j int) bool { return sum.Skipped[i].Path < sum.Skipped[j].Path })
	sum.Seconds = time.Since(start).Seconds()
	return sum, nil
}

// walkedFile is a regular file found by walk.
type walkedFile struct {
	abs, rel string
	info     fs.FileInfo
}

// walk lists the regular files under root that the rules let through,
// loading .gitignore files as it descends. Symbolic links are not followed
// (no loops, nothing outside the root); unreadable directories are
// reported and skipped.
func walk(root string, rules *chunking.Rules) ([]walkedFile, []SkipReport) {
	var files []walkedFile
	var skipped []SkipReport
	ignores := map[string]*chunking.GitIgnore{}
	ignored := func(rel string, isDir bool) bool {
		for dir := filepath.Dir(rel); ; dir = filepath.Dir(dir) {
			key := dir
			if key == "." {
				key = ""
			}
			if gi := ignores[key]; gi != nil && gi.Match(rel, isDir) {
				return true
			}
			if dir == "." || dir == "/" {
				return false
			}
		}
	}
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if err != nil {
			if rel != "." {
				skipped = append(skipped, SkipReport{Path: rel, Reason: "unreadable: " + err.Error()})
			}
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if rel == "." {
			loadGitIgnore(root, "", ignores)
			return nil
		}
		isDir := d.IsDir()
		if ex, _ := rules.Excluded(rel, isDir); ex || ignored(rel, isDir) {
			if isDir {
				return fs.SkipDir
			}
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			skipped = append(skipped, SkipReport{Path: rel, Reason: "symbolic link (not followed)"})
			return nil
		}
		if isDir {
			loadGitIgnore(p, rel, ignores)
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			skipped = append(skipped, SkipReport{Path: rel, Reason: "unreadable: " + err.Error()})
			return nil
		}
		files = append(files, walkedFile{abs: p, rel: rel, info: info})
		return nil
	})
	return files, skipped
}

func loadGitIgnore(dir, rel string, into map[string]*chunking.GitIgnore) {
	data, err := os.ReadFile(filepath.Join(dir, ".gitignore"))
	if err == nil {
		into[rel] = chunking.ParseGitIgnore(rel, data)
	}
}

// fileResult is what ingesting one file did.
type fileResult struct {
	skip                   string
	unchanged, isNew       bool
	deleted                bool
	added, removed, events int
}

func ingestFile(ctx context.Context, store *events.Store, cfg IngestConfig, f walkedFile, st events.FileState) (fileResult, error) {
	var res fileResult
	mtime, size := f.info.ModTime().UnixNano(), f.info.Size()
	if st.Path != "" && !st.Deleted && st.MTime == mtime && st.Size == size {
		res.unchanged = true
		return res, nil
	}
	drop := func(reason string) (fileResult, error) {
		res.skip = reason
		if st.Path != "" && !st.Deleted {
			// It was indexed before: its chunks must go.
			n, err := deleteFile(ctx, store, cfg.Repo, st)
			res.deleted, res.removed, res.events = err == nil, n, 1
			return res, err
		}
		return res, nil
	}
	if size > cfg.MaxFileBytes {
		return drop(fmt.Sprintf("too large: %d bytes (limit %d)", size, cfg.MaxFileBytes))
	}
	content, err := os.ReadFile(f.abs)
	if err != nil {
		return drop("unreadable: " + err.Error())
	}
	if sens, why := cfg.Rules.SensitiveContent(f.rel, content); sens {
		return drop("sensitive: " + why)
	}
	sum := sha256.Sum256(content)
	hash := hex.EncodeToString(sum[:])
	if st.Path != "" && !st.Deleted && st.ContentHash == hash {
		res.unchanged = true
		return res, nil
	}
	chunks, skip, err := chunking.ChunkFile(f.rel, content)
	if err != nil {
		return drop("chunking failed: " + err.Error())
	}
	if skip != nil {
		return drop(skip.Reason)
	}
	files := fileRunner(store, cfg.Repo)
	start, err := committedState(ctx, store, f.rel, st)
	if err != nil {
		return res, err
	}
	hdr := nats.Header{}
	hdr.Set(events.HeaderFilePath, f.rel)
	hdr.Set(events.HeaderFileMTime, strconv.FormatInt(mtime, 10))
	hdr.Set(events.HeaderFileSize, strconv.FormatInt(size, 10))
	hdr.Set(events.HeaderFileHash, hash)
	var added []events.ChunkRecord
	var removed []string
	// The difference is decided against the file's last commit in the log
	// and appended expecting exactly that commit: when another ingest got
	// there first, the runner catches up and decides again, so no chunk is
	// left behind. One event per changed file, whatever its size (a large
	// one goes through the log's large-payload path), so a file is never
	// half recorded.
	_, err = files.Run(ctx, start, "ingest", func(cur *events.FileState) (command.Decision, error) {
		fresh := cur == nil || cur.Deleted
		if !fresh && cur.ContentHash == hash && cur.MTime == mtime && cur.Size == size {
			return command.Decision{}, errUnchanged
		}
		old := map[string]bool{}
		if !fresh {
			for _, id := range cur.ChunkIDs {
				old[id] = true
			}
		}
		added, removed = nil, nil
		ids := make([]string, 0, len(chunks))
		now := map[string]bool{}
		for _, c := range chunks {
			ids = append(ids, c.ChunkID)
			now[c.ChunkID] = true
			if !old[c.ChunkID] {
				added = append(added, record(cfg.Repo, c))
			}
		}
		if !fresh {
			for _, id := range cur.ChunkIDs {
				if !now[id] {
					removed = append(removed, id)
				}
			}
		}
		res.isNew = fresh
		return command.Decision{Subject: events.ChunkSubject(cfg.Repo, f.rel, events.FileIndexed), Type: events.FileIndexed, Header: hdr,
			Payload: events.FileIndexedPayload{Path: f.rel, MTime: mtime, Size: size, ContentHash: hash,
				Language: chunking.Language(f.rel), ChunkIDs: ids, Added: added, Removed: removed}}, nil
	})
	if errors.Is(err, errUnchanged) {
		res.unchanged = true
		return res, nil
	}
	if err != nil {
		return res, fileError(f.rel, "append file_indexed", err)
	}
	res.events = 1
	res.added, res.removed = len(added), len(removed)
	return res, nil
}

// errUnchanged is the refusal of a file command the log already holds.
var errUnchanged = errors.New("unchanged")

// fileRunner runs the commands of a repository's file aggregates
// (trellis.chunks.<repo>.<file token>.>; the aggregate id is the path).
// Ingest is a one-shot process: no cache.
func fileRunner(store *events.Store, repo string) *command.Runner[*events.FileState] {
	return command.New(store, command.Kind[*events.FileState]{
		Name:   "file",
		Stream: events.StreamChunks,
		Filter: func(path string) string { return events.FileFilter(repo, path) },
		Fold: func(st *events.FileState, rec events.Recorded) (*events.FileState, error) {
			if rec.Type != events.FileIndexed && rec.Type != events.FileDeleted {
				return st, nil // chunks_added parts (older ingests) carry no state
			}
			fs, err := events.DecodeFileState(rec)
			if err != nil {
				return st, err
			}
			return &fs, nil
		},
		Schema: events.ChunksSchema,
	}, command.Config{CacheSize: -1})
}

// committedState is the file's last commit as the ingest's headers-only
// read found it (its chunk ids read from that event), or no state for a
// file the log does not hold: the state the ingest decides against.
func committedState(ctx context.Context, store *events.Store, path string, st events.FileState) (command.State[*events.FileState], error) {
	if st.Path == "" {
		return command.State[*events.FileState]{ID: path}, nil
	}
	rec, err := store.Get(ctx, events.StreamChunks, st.Seq)
	if err != nil {
		return command.State[*events.FileState]{}, command.StoreError("load file "+path, err)
	}
	fs, err := events.DecodeFileState(rec)
	if err != nil {
		return command.State[*events.FileState]{}, trellis.Errorf(trellis.CodeInternal, "file state of %s: %w", path, err)
	}
	return command.State[*events.FileState]{ID: path, Value: &fs, Seq: st.Seq, Head: events.Hash(rec.Envelope)}, nil
}

// fileError maps a file command's error.
func fileError(path, what string, err error) error {
	if errors.Is(err, command.ErrConflict) {
		return trellis.Errorf(trellis.CodeConflict, "%s keeps changing in the log during the ingest (another ingest running?); run it again", path)
	}
	return command.StoreError(what+" "+path, err)
}

func record(repo string, c chunking.Chunk) events.ChunkRecord {
	tags := c.Tags
	if tags == nil {
		tags = []string{}
	}
	return events.ChunkRecord{ChunkID: c.ChunkID, Repo: repo, SourcePath: c.SourcePath, StartLine: c.StartLine, EndLine: c.EndLine,
		ChunkType: c.ChunkType, Name: c.Name, Language: c.Language, Tags: tags, ContentHash: c.ContentHash, Content: c.Content}
}

func deleteFile(ctx context.Context, store *events.Store, repo string, st events.FileState) (int, error) {
	start, err := committedState(ctx, store, st.Path, st)
	if err != nil {
		return 0, err
	}
	hdr := nats.Header{}
	hdr.Set(events.HeaderFilePath, st.Path)
	hdr.Set(events.HeaderDeleted, "true")
	var n int
	_, err = fileRunner(store, repo).Run(ctx, start, "ingest", func(cur *events.FileState) (command.Decision, error) {
		if cur == nil || cur.Deleted {
			return command.Decision{}, errUnchanged
		}
		n = len(cur.ChunkIDs)
		return command.Decision{Subject: events.ChunkSubject(repo, st.Path, events.FileDeleted), Type: events.FileDeleted, Header: hdr,
			Payload: events.FileDeletedPayload{Path: st.Path, ChunkIDs: cur.ChunkIDs}}, nil
	})
	if errors.Is(err, errUnchanged) {
		return 0, nil
	}
	if err != nil {
		return 0, fileError(st.Path, "append file_deleted", err)
	}
	return n, nil
}
