package vinegraph

import (
	"slices"
	"sync"

	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/vine"
)

// derivedCache keeps, per graph, what was derived from its latest state
// in this process: its canonical text with the place of every block
// (vine.Text) and its frontier index, so that a claim on a large graph
// neither serializes the whole graph nor computes its frontier again; and
// the graph the last command decided on that state, so that folding the
// command's own event takes it instead of applying the batch a second
// time. Entries are keyed by the state (states are never changed, only
// replaced), so an entry of an older state is simply not used.
type derivedCache struct {
	mu sync.Mutex
	m  map[string]*derived
}

// derived is what was derived from one state of a graph.
type derived struct {
	st      *events.GraphState
	text    *vine.Text
	fx      *vine.FrontierIndex // nil until a claim needs it; follows st
	index   map[string]int      // st.Graph.Index(), nil until needed; only read
	decided *decidedBatch       // the last batch decided on st
}

// decidedBatch is a batch decided on a state: the text of the graph it
// leaves, the blocks it changed and where to report the progress after it.
type decidedBatch struct {
	hash     string
	text     *vine.Text
	changed  []int
	whole    bool
	progress *vine.Progress
}

// maxDerived bounds the graphs whose derived state a process keeps (a
// 50,000-node graph keeps about 30 MB: its text, index and frontier).
const maxDerived = 16

func newDerivedCache() *derivedCache { return &derivedCache{m: map[string]*derived{}} }

// entry returns the entry of st, making a fresh one (without text) when
// the graph's entry is of another state. The caller holds c.mu.
func (c *derivedCache) entry(graphID string, st *events.GraphState) *derived {
	d := c.m[graphID]
	if d != nil && d.st == st {
		return d
	}
	if d == nil && len(c.m) >= maxDerived {
		for k := range c.m { // bounded: forget any one
			delete(c.m, k)
			break
		}
	}
	d = &derived{st: st}
	c.m[graphID] = d
	return d
}

// text returns the canonical text of st, kept for the next change.
func (c *derivedCache) text(graphID string, st *events.GraphState) (*vine.Text, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := c.entry(graphID, st)
	if d.text == nil {
		t, err := vine.NewText(st.Graph)
		if err != nil {
			return nil, err
		}
		d.text = t
	}
	return d.text, nil
}

// put keeps the text of a state just recorded (an import or a merged hand
// edit) and builds its frontier index.
func (c *derivedCache) put(graphID string, st *events.GraphState, text *vine.Text) {
	fx := vine.NewFrontierIndex(vine.Graph{Metadata: st.Graph.Metadata, Nodes: slices.Clone(st.Graph.Nodes)})
	c.mu.Lock()
	defer c.mu.Unlock()
	d := c.entry(graphID, st)
	d.text, d.fx = text, fx
}

// index returns st.Graph.Index(), kept while only statuses change.
func (c *derivedCache) index(graphID string, st *events.GraphState) map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := c.entry(graphID, st)
	if d.index == nil {
		d.index = st.Graph.Index()
	}
	return d.index
}

// cachedText returns the canonical text of st when it is kept.
func (c *derivedCache) cachedText(graphID string, st *events.GraphState) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d := c.m[graphID]; d != nil && d.st == st && d.text != nil {
		return d.text.String(), true
	}
	return "", false
}

// firstReady returns the first task of st ready to start, from the
// frontier index (built on first use, then kept up to date by claims).
func (c *derivedCache) firstReady(graphID string, st *events.GraphState) (vine.Node, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := c.entry(graphID, st)
	if d.fx == nil {
		// The index changes statuses in place: it gets its own node slice.
		d.fx = vine.NewFrontierIndex(vine.Graph{Metadata: st.Graph.Metadata, Nodes: slices.Clone(st.Graph.Nodes)})
	}
	i := d.fx.FirstReadyToStart()
	if i < 0 {
		return vine.Node{}, false
	}
	return st.Graph.Nodes[i], true
}

// decide records the batch decided on st.
func (c *derivedCache) decide(graphID string, st *events.GraphState, b *decidedBatch) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entry(graphID, st).decided = b
}

// fold folds rec onto st, taking the graph of the batch decided on st when
// rec is that batch's event (the same resulting text hash): the batch is
// not applied again, and the state's text and frontier index move on with
// it. Any other event is folded by events.ApplyGraph.
func (c *derivedCache) fold(st *events.GraphState, rec events.Recorded) (*events.GraphState, error) {
	if st == nil || rec.Type != events.GraphBatchApplied {
		return events.ApplyGraph(st, rec)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	d := c.m[st.GraphID]
	if d == nil || d.st != st || d.decided == nil || rec.Schema > events.VineSchema {
		return events.ApplyGraph(st, rec)
	}
	var p events.GraphBatchPayload
	if err := rec.DecodePayload(&p); err != nil || p.Hash == "" || p.Hash != d.decided.hash {
		return events.ApplyGraph(st, rec)
	}
	b := d.decided
	next := &events.GraphState{GraphID: st.GraphID, Path: st.Path, Graph: b.text.Graph(), Events: st.Events + 1, Hash: p.Hash}
	fx, index := d.fx, d.index
	if b.whole {
		index = nil
	}
	for _, i := range b.changed {
		if st.Graph.Nodes[i].ID != next.Graph.Nodes[i].ID {
			index = nil
		}
	}
	if fx != nil && !b.whole {
		for _, i := range b.changed {
			was, now := st.Graph.Nodes[i], next.Graph.Nodes[i]
			if was.ID != now.ID || was.Kind != now.Kind || !slices.Equal(was.Dependencies, now.Dependencies) {
				fx = nil // the frontier's structure changed: built again when needed
				break
			}
			if was.Status != now.Status && fx.SetStatus(now.ID, now.Status) != nil {
				fx = nil
				break
			}
		}
	} else {
		fx = nil
	}
	if fx != nil && b.progress != nil {
		*b.progress = fx.Progress()
	}
	d.decided = nil
	c.m[st.GraphID] = &derived{st: next, text: b.text, fx: fx, index: index}
	return next, nil
}
