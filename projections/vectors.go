package projections

import (
	"container/heap"
	"encoding/gob"
	"fmt"
	"math"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/trellis/trellis/events"
)

// Vectors is the vector-search projection of one embedding model: the
// live chunks (with what filters need: repository, path, extension, chunk
// type, tags) and the vectors chunks_embedded events recorded for them.
// Search is an exact flat scan (cosine similarity of unit vectors) over the
// chunks that pass the filters.
//
// A vector is kept when its chunk is removed: the chunk may come back (a
// reverted file) and must not be embedded twice. The state is saved as a
// snapshot file at most every SaveEvery (and on Close); after a restart the
// runner replays the events after the snapshot's sequence.
type Vectors struct {
	model string
	file  string
	// SaveEvery bounds how often Save writes the snapshot (default 30 s).
	SaveEvery time.Duration

	mu       sync.RWMutex
	state    vectorState
	dirty    bool
	lastSave time.Time
	// slab is the live vectors, row after row, rebuilt after changes.
	slab     []float32
	slabRows []string
	slabOK   bool
}

// vectorState is what the snapshot holds.
type vectorState struct {
	Seq     uint64
	Model   string
	Dims    int
	Chunks  map[string]VectorChunk
	Vectors map[string][]float32
	// Last is each (repo) aggregate's last chunks_embedded sequence, for
	// the embedder's concurrency check.
	Last map[string]uint64
}

// VectorChunk is what the projection knows of a live chunk.
type VectorChunk struct {
	Repo      string
	Path      string
	ChunkType string
	Tags      []string
}

// NewVectors returns the projection of model's vectors, keeping its
// snapshot in dir.
func NewVectors(dir, model string) *Vectors {
	return &Vectors{model: model, file: filepath.Join(dir, "vectors-"+events.ModelToken(model)+".gob"), SaveEvery: 30 * time.Second,
		state: newVectorState(model)}
}

func newVectorState(model string) vectorState {
	return vectorState{Model: model, Chunks: map[string]VectorChunk{}, Vectors: map[string][]float32{}, Last: map[string]uint64{}}
}

// Name implements Projection.
func (v *Vectors) Name() string { return "vectors" }

// Stream implements Projection.
func (v *Vectors) Stream() string { return events.StreamChunks }

// Model is the embedding model whose vectors the projection holds.
func (v *Vectors) Model() string { return v.model }

// Load implements Projection: reads the snapshot, if any.
func (v *Vectors) Load() (uint64, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	f, err := os.Open(v.file)
	if os.IsNotExist(err) {
		v.state = newVectorState(v.model)
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	st := newVectorState(v.model)
	if err := gob.NewDecoder(f).Decode(&st); err != nil || st.Model != v.model {
		// An unreadable snapshot is rebuilt from the log.
		v.state = newVectorState(v.model)
		return 0, nil
	}
	v.state, v.slabOK, v.lastSave = st, false, time.Now()
	return st.Seq, nil
}

// Apply implements Projection.
func (v *Vectors) Apply(rec events.Recorded) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	add := func(cs []events.ChunkRecord) {
		for _, c := range cs {
			v.state.Chunks[c.ChunkID] = VectorChunk{Repo: c.Repo, Path: c.SourcePath, ChunkType: c.ChunkType, Tags: c.Tags}
		}
	}
	switch rec.Type {
	case events.ChunksAdded:
		var p events.ChunksAddedPayload
		if err := rec.DecodePayload(&p); err != nil {
			return err
		}
		add(p.Chunks)
	case events.FileIndexed:
		var p events.FileIndexedPayload
		if err := rec.DecodePayload(&p); err != nil {
			return err
		}
		add(p.Added)
		for _, id := range p.Removed {
			delete(v.state.Chunks, id)
		}
	case events.FileDeleted:
		var p events.FileDeletedPayload
		if err := rec.DecodePayload(&p); err != nil {
			return err
		}
		for _, id := range p.ChunkIDs {
			delete(v.state.Chunks, id)
		}
	case events.ChunksEmbedded:
		var p events.ChunksEmbeddedPayload
		if err := rec.DecodePayload(&p); err != nil {
			return err
		}
		if p.Model != v.model {
			return nil
		}
		if v.state.Dims != 0 && p.Dims != v.state.Dims {
			return fmt.Errorf("chunks_embedded #%d: dimension %d, the model's vectors have %d", rec.Seq, p.Dims, v.state.Dims)
		}
		for _, cv := range p.Vectors {
			vec, err := events.DecodeVector(cv.Vector, p.Dims)
			if err != nil {
				return fmt.Errorf("chunks_embedded #%d: %s: %w", rec.Seq, cv.ChunkID, err)
			}
			v.state.Vectors[cv.ChunkID] = unit(vec)
		}
		v.state.Dims = p.Dims
		if repo := repoOf(rec.Subject); repo != "" {
			v.state.Last[repo] = rec.Seq
		}
	default:
		return nil
	}
	v.state.Seq = rec.Seq
	v.dirty, v.slabOK = true, false
	return nil
}

// repoOf returns the repository token of a trellis.chunks.<repo>... subject.
func repoOf(subject string) string {
	parts := strings.SplitN(subject, ".", 4)
	if len(parts) < 4 {
		return ""
	}
	return parts[2]
}

// unit scales a vector to length 1 (a zero vector stays zero).
func unit(vec []float32) []float32 {
	var s float64
	for _, x := range vec {
		s += float64(x) * float64(x)
	}
	if s == 0 {
		return vec
	}
	inv := float32(1 / math.Sqrt(s))
	for i := range vec {
		vec[i] *= inv
	}
	return vec
}

// Save implements Projection: writes the snapshot when something changed
// and SaveEvery has passed since the last write.
func (v *Vectors) Save(seq uint64) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.dirty || time.Since(v.lastSave) < v.SaveEvery {
		return nil
	}
	return v.saveLocked()
}

func (v *Vectors) saveLocked() error {
	if err := os.MkdirAll(filepath.Dir(v.file), 0o755); err != nil {
		return err
	}
	tmp := v.file + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if err := gob.NewEncoder(f).Encode(&v.state); err != nil {
		f.Close()
		return fmt.Errorf("vectors snapshot: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, v.file); err != nil {
		return err
	}
	v.dirty, v.lastSave = false, time.Now()
	return nil
}

// Close writes the snapshot if anything changed.
func (v *Vectors) Close() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.dirty {
		return nil
	}
	return v.saveLocked()
}

// Reset implements Projection.
func (v *Vectors) Reset() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.state, v.dirty, v.slabOK = newVectorState(v.model), false, false
	if err := os.Remove(v.file); err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
}

// Stats reports the live chunks and how many of them have a vector.
func (v *Vectors) Stats() (chunks, embedded, dims int) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	for id := range v.state.Chunks {
		if v.state.Vectors[id] != nil {
			embedded++
		}
	}
	return len(v.state.Chunks), embedded, v.state.Dims
}

// Ready reports whether any chunk has a vector of the model (O(1): a
// search asks it to choose its default mode).
func (v *Vectors) Ready() bool {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return len(v.state.Vectors) > 0
}

// Pending returns up to limit live chunks without a vector (sorted by id),
// and the last chunks_embedded sequence of each repository.
func (v *Vectors) Pending(limit int) ([]string, map[string]uint64) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	var ids []string
	for id := range v.state.Chunks {
		if v.state.Vectors[id] == nil {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	if limit > 0 && len(ids) > limit {
		ids = ids[:limit]
	}
	last := make(map[string]uint64, len(v.state.Last))
	for r, s := range v.state.Last {
		last[r] = s
	}
	return ids, last
}

// Has reports whether chunk id has a vector.
func (v *Vectors) Has(id string) bool {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.state.Vectors[id] != nil
}

// Scored is a chunk id with its similarity.
type Scored struct {
	ChunkID string
	Score   float64
}

// rebuildSlab lays the live chunks' vectors out row after row.
func (v *Vectors) rebuildSlab() {
	ids := make([]string, 0, len(v.state.Chunks))
	for id := range v.state.Chunks {
		if v.state.Vectors[id] != nil {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	d := v.state.Dims
	slab := make([]float32, len(ids)*d)
	for i, id := range ids {
		copy(slab[i*d:(i+1)*d], v.state.Vectors[id])
	}
	v.slab, v.slabRows, v.slabOK = slab, ids, true
}

// Search returns the n chunks most similar to query (cosine), best first,
// among those that pass the filters.
func (v *Vectors) Search(query []float32, n int, f Filters) ([]Scored, error) {
	v.mu.RLock()
	if !v.slabOK {
		v.mu.RUnlock()
		v.mu.Lock()
		if !v.slabOK {
			v.rebuildSlab()
		}
		v.mu.Unlock()
		v.mu.RLock()
	}
	defer v.mu.RUnlock()
	d := v.state.Dims
	if len(v.slabRows) == 0 || n <= 0 {
		return []Scored{}, nil
	}
	if len(query) != d {
		return nil, fmt.Errorf("vector search: the query has dimension %d, the index %d", len(query), d)
	}
	q := unit(append([]float32(nil), query...))
	pass := v.filter(f)
	rows := len(v.slabRows)
	workers := 1
	if rows*d > 2_000_000 {
		workers = runtime.GOMAXPROCS(0)
	}
	tops := make([]scoreHeap, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			h := make(scoreHeap, 0, n+1)
			lo, hi := w*rows/workers, (w+1)*rows/workers
			for r := lo; r < hi; r++ {
				if pass != nil && !pass(v.slabRows[r]) {
					continue
				}
				s := dot(q, v.slab[r*d:(r+1)*d])
				if len(h) < n {
					heap.Push(&h, rowScore{r, s})
				} else if s > h[0].score {
					h[0] = rowScore{r, s}
					heap.Fix(&h, 0)
				}
			}
			tops[w] = h
		}(w)
	}
	wg.Wait()
	var all []rowScore
	for _, h := range tops {
		all = append(all, h...)
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].score != all[j].score {
			return all[i].score > all[j].score
		}
		return v.slabRows[all[i].row] < v.slabRows[all[j].row]
	})
	if len(all) > n {
		all = all[:n]
	}
	out := make([]Scored, len(all))
	for i, rs := range all {
		out[i] = Scored{ChunkID: v.slabRows[rs.row], Score: float64(rs.score)}
	}
	return out, nil
}

// filter returns the predicate of the filters on a chunk id (nil: all
// pass). It reads v.state under the caller's lock.
func (v *Vectors) filter(f Filters) func(id string) bool {
	prefix := strings.Trim(f.PathPrefix, "/")
	ext := strings.ToLower(f.FileType)
	if ext != "" && !strings.HasPrefix(ext, ".") {
		ext = "." + ext
	}
	if prefix == "" && ext == "" && f.ChunkType == "" && f.Tag == "" && f.Repo == "" {
		return nil
	}
	return func(id string) bool {
		c := v.state.Chunks[id]
		if f.Repo != "" && c.Repo != f.Repo || f.ChunkType != "" && c.ChunkType != f.ChunkType {
			return false
		}
		if ext != "" && strings.ToLower(path.Ext(c.Path)) != ext {
			return false
		}
		if prefix != "" && !strings.HasPrefix(c.Path, prefix) {
			return false
		}
		if f.Tag != "" {
			for _, t := range c.Tags {
				if t == f.Tag {
					return true
				}
			}
			return false
		}
		return true
	}
}

// dot is the dot product of two vectors of the same length, eight values
// a step into four sums (no bounds checks in the loop).
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	for len(a) >= 8 {
		s0 += a[0]*b[0] + a[4]*b[4]
		s1 += a[1]*b[1] + a[5]*b[5]
		s2 += a[2]*b[2] + a[6]*b[6]
		s3 += a[3]*b[3] + a[7]*b[7]
		a, b = a[8:], b[8:]
	}
	for i := range a {
		s0 += a[i] * b[i]
	}
	return s0 + s1 + s2 + s3
}

type rowScore struct {
	row   int
	score float32
}

// scoreHeap is a min-heap of scores: its root is the worst of the top n.
type scoreHeap []rowScore

func (h scoreHeap) Len() int           { return len(h) }
func (h scoreHeap) Less(i, j int) bool { return h[i].score < h[j].score }
func (h scoreHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *scoreHeap) Push(x any)        { *h = append(*h, x.(rowScore)) }
func (h *scoreHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
