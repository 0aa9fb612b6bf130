package handlers

import "sync"

// knownTexts remembers, per graph, the hashes of canonical texts this
// process wrote or already judged, so a file Trellis wrote is recognised
// without comparing graphs. Bounded: the oldest graphs are forgotten
// first, and a graph keeps at most maxKnownPerGraph hashes (forgetting only
// costs a comparison).
type knownTexts struct {
	mu     sync.Mutex
	graphs map[string]map[string]bool
	order  []string
}

const (
	maxKnownGraphs   = 1024
	maxKnownPerGraph = 256
)

func newKnownTexts() *knownTexts { return &knownTexts{graphs: map[string]map[string]bool{}} }

func (k *knownTexts) has(graphID, hash string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.graphs[graphID][hash]
}

func (k *knownTexts) add(graphID, hash string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	m, ok := k.graphs[graphID]
	if !ok {
		if len(k.order) >= maxKnownGraphs {
			delete(k.graphs, k.order[0])
			k.order = k.order[1:]
		}
		m = map[string]bool{}
		k.graphs[graphID] = m
		k.order = append(k.order, graphID)
	}
	if len(m) >= maxKnownPerGraph {
		clear(m)
	}
	m[hash] = true
}
