package vine

// Frontier is the execution frontier of a graph (`vine next`): what can be
// acted on now, and a progress snapshot. Lists are in graph order.
type Frontier struct {
	// ReadyToStart are notstarted or planning tasks whose dependencies are
	// all satisfied.
	ReadyToStart []Node `json:"ready_to_start"`
	// ReadyToComplete are reviewing tasks whose output is being consumed.
	ReadyToComplete []Node `json:"ready_to_complete"`
	// Blocked are blocked tasks whose dependencies are all satisfied.
	Blocked []Node `json:"blocked"`
	// NeedsExpansion are references whose dependencies are all satisfied.
	NeedsExpansion []Node `json:"needs_expansion"`
	// Progress summarises the whole graph.
	Progress Progress `json:"progress"`
}

// Progress is the progress snapshot of a graph.
type Progress struct {
	// Total is the number of nodes, references included.
	Total int `json:"total"`
	// Complete is the number of tasks in status complete.
	Complete int `json:"complete"`
	// Percentage is Complete*100/Total rounded half up (0 for an empty graph).
	Percentage int `json:"percentage"`
	// ReadyCount is len(ReadyToStart).
	ReadyCount int `json:"ready_count"`
	// RootID is the id of the root node.
	RootID string `json:"root_id"`
	// RootStatus is the root's status, or "ref" when the root is a reference.
	RootStatus string `json:"root_status"`
	// ByStatus counts nodes per status; all six statuses are always present,
	// and references are counted under "ref" when there are any.
	ByStatus map[string]int `json:"by_status"`
}

// Next computes the execution frontier of g. A dependency is satisfied when
// it names a concrete task in complete or reviewing; an unexpanded reference
// or a missing node never satisfies one. Walking nodes in graph order, each
// node whose dependencies are all satisfied is classified:
//
//   - a reference → NeedsExpansion;
//   - notstarted or planning → ReadyToStart;
//   - blocked → Blocked;
//   - reviewing → ReadyToComplete when at least one dependant is started,
//     reviewing or complete (its output is being consumed). A reviewing root
//     is ReadyToComplete when every other node is a concrete task in complete
//     or reviewing.
//
// Next does not validate g; it runs in time linear in nodes plus edges.
func Next(g Graph) Frontier {
	f := Frontier{
		ReadyToStart:    []Node{},
		ReadyToComplete: []Node{},
		Blocked:         []Node{},
		NeedsExpansion:  []Node{},
		Progress:        Progress{Total: len(g.Nodes), ByStatus: make(map[string]int, 7)},
	}
	for _, s := range Statuses() {
		f.Progress.ByStatus[string(s)] = 0
	}
	if len(g.Nodes) == 0 {
		return f
	}
	idx := make(map[string]int, len(g.Nodes))
	for i, n := range g.Nodes {
		if _, dup := idx[n.ID]; !dup {
			idx[n.ID] = i
		}
	}
	// consumed[i]: some dependant of node i is started, reviewing or complete.
	consumed := make([]bool, len(g.Nodes))
	satisfiedCount := 0
	for _, n := range g.Nodes {
		f.Progress.ByStatus[n.statusLabel()]++
		if n.Kind != KindTask {
			continue
		}
		if n.satisfied() {
			satisfiedCount++
		}
		if n.Status == StatusComplete {
			f.Progress.Complete++
		}
		if n.Status == StatusStarted || n.Status.satisfies() {
			for _, d := range n.Dependencies {
				if j, ok := idx[d]; ok {
					consumed[j] = true
				}
			}
		}
	}
	for i, n := range g.Nodes {
		if !depsSatisfied(g, idx, n) {
			continue
		}
		switch {
		case n.Kind == KindRef:
			f.NeedsExpansion = append(f.NeedsExpansion, n)
		case n.Status == StatusNotStarted || n.Status == StatusPlanning:
			f.ReadyToStart = append(f.ReadyToStart, n)
		case n.Status == StatusBlocked:
			f.Blocked = append(f.Blocked, n)
		case n.Status == StatusReviewing:
			if consumed[i] || i == 0 && satisfiedCount-1 == len(g.Nodes)-1 {
				f.ReadyToComplete = append(f.ReadyToComplete, n)
			}
		}
	}
	root := g.Nodes[0]
	f.Progress.RootID = root.ID
	f.Progress.RootStatus = root.statusLabel()
	f.Progress.ReadyCount = len(f.ReadyToStart)
	f.Progress.Percentage = percentHalfUp(f.Progress.Complete, f.Progress.Total)
	return f
}

// depsSatisfied reports whether every dependency of n is a concrete task in
// complete or reviewing.
func depsSatisfied(g Graph, idx map[string]int, n Node) bool {
	for _, d := range n.Dependencies {
		j, ok := idx[d]
		if !ok || !g.Nodes[j].satisfied() {
			return false
		}
	}
	return true
}

// percentHalfUp returns part*100/total rounded half up in integer arithmetic.
func percentHalfUp(part, total int) int {
	if total <= 0 {
		return 0
	}
	return (part*200 + total) / (2 * total)
}
