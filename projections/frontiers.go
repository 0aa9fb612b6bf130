package projections

import (
	"fmt"

	"github.com/trellis/trellis"
	"path/filepath"
	"sort"
	"sync"

	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/vine"
)

// Frontiers keeps every VINE graph's execution frontier current from the
// log. A status change (set_status, claim, update) updates the graph's
// frontier index incrementally, with work proportional to the changed
// node's edges; structural changes rebuild that graph's index. Reads answer
// from the index without walking dependencies. It is persisted as a
// snapshot of every graph's canonical text.
type Frontiers struct {
	path string

	mu     sync.RWMutex
	graphs map[string]*frontierEntry
}

type frontierEntry struct {
	path  string
	index *vine.FrontierIndex
}

// frontiersSnapshot is the persisted form.
type frontiersSnapshot struct {
	Version int                `json:"version"`
	LastSeq uint64             `json:"last_seq"`
	Graphs  []frontierSnapshot `json:"graphs"`
}

type frontierSnapshot struct {
	GraphID string `json:"graph_id"`
	Path    string `json:"path"`
	TextGz  string `json:"text_gz"`
}

const frontiersVersion = 1

// NewFrontiers returns the projection persisted at <dir>/frontiers.json.
func NewFrontiers(dir string) *Frontiers {
	return &Frontiers{path: filepath.Join(dir, "frontiers.json"), graphs: map[string]*frontierEntry{}}
}

// Name implements Projection.
func (f *Frontiers) Name() string { return "frontiers" }

// Stream implements Projection.
func (f *Frontiers) Stream() string { return events.StreamVine }

// Load implements Projection.
func (f *Frontiers) Load() (uint64, error) {
	var snap frontiersSnapshot
	if ok, err := readSnapshot(f.path, "frontier", &snap); !ok || err != nil {
		return 0, err
	}
	if snap.Version != frontiersVersion {
		return 0, nil
	}
	graphs := map[string]*frontierEntry{}
	for _, g := range snap.Graphs {
		text, err := events.Decompress(g.TextGz)
		if err != nil {
			return 0, err
		}
		parsed, err := vine.Parse(text)
		if err != nil {
			return 0, fmt.Errorf("frontier snapshot of %s: %w", g.GraphID, err)
		}
		graphs[g.GraphID] = &frontierEntry{path: g.Path, index: vine.NewFrontierIndex(parsed)}
	}
	f.mu.Lock()
	f.graphs = graphs
	f.mu.Unlock()
	return snap.LastSeq, nil
}

// Apply implements Projection.
func (f *Frontiers) Apply(rec events.Recorded) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	e := f.graphs[rec.AggregateID]
	if rec.Type == events.GraphBatchApplied && e != nil {
		var p events.GraphBatchPayload
		if err := rec.DecodePayload(&p); err != nil {
			return err
		}
		if statusOnly(p.Ops) {
			// The batch was validated when it was decided: a status change
			// costs only the changed node's edges.
			for _, op := range p.Ops {
				st := op.Status
				if op.Op == vine.OpClaim {
					st = vine.StatusStarted
				}
				if err := e.index.SetStatus(op.ID, st); err != nil {
					return fmt.Errorf("graph %s: batch %s no longer applies: %w: %w", rec.AggregateID, rec.ID, events.ErrBadEvent, err)
				}
			}
			return nil
		}
		if _, err := e.index.Apply(p.Ops); err != nil {
			return fmt.Errorf("graph %s: batch %s no longer applies: %w: %w", rec.AggregateID, rec.ID, events.ErrBadEvent, err)
		}
		return nil
	}
	var st *events.GraphState
	if e != nil {
		st = &events.GraphState{GraphID: rec.AggregateID, Path: e.path, Graph: e.index.Graph()}
	}
	next, err := events.ApplyGraph(st, rec)
	if err != nil {
		return err
	}
	if next == nil || next == st {
		return nil
	}
	f.graphs[rec.AggregateID] = &frontierEntry{path: next.Path, index: vine.NewFrontierIndex(next.Graph.Clone())}
	return nil
}

// statusOnly reports whether a batch only sets statuses (set_status,
// claim).
func statusOnly(ops []vine.Op) bool {
	for _, op := range ops {
		if op.Op != vine.OpSetStatus && op.Op != vine.OpClaim {
			return false
		}
	}
	return len(ops) > 0
}

// Save implements Projection.
func (f *Frontiers) Save(seq uint64) error {
	f.mu.RLock()
	ids := make([]string, 0, len(f.graphs))
	for id := range f.graphs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	snap := frontiersSnapshot{Version: frontiersVersion, LastSeq: seq}
	for _, id := range ids {
		e := f.graphs[id]
		text, err := vine.Serialize(e.index.Graph())
		if err != nil {
			f.mu.RUnlock()
			return fmt.Errorf("graph %s: %w", id, err)
		}
		gz, err := events.Compress(text)
		if err != nil {
			f.mu.RUnlock()
			return err
		}
		snap.Graphs = append(snap.Graphs, frontierSnapshot{GraphID: id, Path: e.path, TextGz: gz})
	}
	f.mu.RUnlock()
	return writeSnapshot(f.path, snap)
}

// Reset implements Projection.
func (f *Frontiers) Reset() error {
	f.mu.Lock()
	f.graphs = map[string]*frontierEntry{}
	f.mu.Unlock()
	return removeFile(f.path)
}

// Frontier returns a graph's frontier, and false for an unknown graph.
func (f *Frontiers) Frontier(graphID string) (vine.Frontier, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	e, ok := f.graphs[graphID]
	if !ok {
		return vine.Frontier{}, false
	}
	return e.index.Frontier(), true
}

// Graph returns a clone of a graph's current state, and false for an
// unknown graph.
func (f *Frontiers) Graph(graphID string) (vine.Graph, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	e, ok := f.graphs[graphID]
	if !ok {
		return vine.Graph{}, false
	}
	return e.index.Graph().Clone(), true
}

// GraphIDs lists the graphs the projection knows.
func (f *Frontiers) GraphIDs() []string {
	f.mu.RLock()
	defer f.mu.RUnlock()
	out := make([]string, 0, len(f.graphs))
	for id := range f.graphs {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// Summaries returns every graph's summary, by graph id.
func (f *Frontiers) Summaries() []trellis.VineGraphSummary {
	f.mu.RLock()
	defer f.mu.RUnlock()
	out := make([]trellis.VineGraphSummary, 0, len(f.graphs))
	for id, e := range f.graphs {
		out = append(out, trellis.VineGraphSummary{GraphID: id, Path: e.path, Title: e.index.Graph().Title(), Progress: e.index.Progress()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GraphID < out[j].GraphID })
	return out
}

// View returns a graph's path, a clone of its state and its frontier, read
// together, and false for an unknown graph.
func (f *Frontiers) View(graphID string) (string, vine.Graph, vine.Frontier, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	e, ok := f.graphs[graphID]
	if !ok {
		return "", vine.Graph{}, vine.Frontier{}, false
	}
	return e.path, e.index.Graph().Clone(), e.index.Frontier(), true
}
