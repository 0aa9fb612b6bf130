package vine

import (
	"maps"
	"slices"
	"strings"
)

// Frontier classes of a node, as Next would list it.
const (
	classNone     uint8 = iota // not listed
	classStart                 // ReadyToStart
	classComplete              // ReadyToComplete
	classBlocked               // Blocked
	classExpand                // NeedsExpansion
	numClasses
)

// FrontierIndex holds a graph and its frontier state, updated incrementally,
// so that a long-lived projection can keep the frontier of a graph current
// without recomputing it: a status change costs time proportional to the
// changed node's edges, and Frontier only walks the nodes picking each by a
// precomputed class.
//
// The index follows the rules of Next exactly, on any graph Next accepts
// (valid or not): a dependency is satisfied only by a concrete task in
// complete or reviewing (a reference or a missing node never satisfies one);
// duplicate ids resolve to their first node, as in Graph.Index.
//
// It keeps, per node, the number of its dependency edges that are not
// satisfied, the number of its dependants' edges coming from tasks in
// started, reviewing or complete (consumers), and its class; globally, the
// number of satisfied tasks (for the reviewing-root special case), the
// complete count, the count per class and the count per status label.
//
// A FrontierIndex is not safe for concurrent use; callers serialise access.
type FrontierIndex struct {
	g   Graph
	pos map[string]int // id → position of its first node

	// Resolved dependency edges (missing targets left out), CSR layout:
	// node i depends on depTo[depOff[i]:depOff[i+1]], one entry per edge.
	depOff []int32
	depTo  []int32
	// Reverse edges: node j is depended on by useFrom[useOff[j]:useOff[j+1]].
	useOff  []int32
	useFrom []int32

	unsat      []int32 // per node: dependency edges not satisfied (missing targets included)
	consumers  []int32 // per node: edges to it from tasks in started, reviewing or complete
	class      []uint8 // per node: its frontier class
	classCount [numClasses]int

	satisfied int            // tasks in complete or reviewing
	complete  int            // tasks in complete
	byStatus  map[string]int // nodes per status label, as in Progress.ByStatus
}

// NewFrontierIndex builds the index of g in time linear in nodes plus edges.
// The index owns g afterwards: it changes node statuses in place, so callers
// that keep using g pass a clone (g.Clone()). g is not validated.
func NewFrontierIndex(g Graph) *FrontierIndex {
	x := &FrontierIndex{}
	x.rebuild(g)
	return x
}

// Graph returns the current graph. It shares memory with the index: do not
// modify it, and note that a later SetStatus changes the status of a node in
// place in the returned graph's node slice (a later Apply replaces the slice
// instead). Clone it to keep a snapshot.
func (x *FrontierIndex) Graph() Graph { return x.g }

// SetStatus sets the status of the task id, in the held graph and in the
// frontier state, in time proportional to the task's dependencies and
// dependants. It fails with CodeNotFound for an unknown id and with
// CodeInvalid for a reference (or any node that is not a concrete task) or
// an unknown status; on error nothing changes. Unlike the claim operation it
// checks no readiness: any valid status may be set.
func (x *FrontierIndex) SetStatus(id string, s Status) error {
	i, ok := x.pos[id]
	if !ok {
		return notFound(id)
	}
	n := &x.g.Nodes[i]
	if n.Kind != KindTask {
		if n.IsRef() {
			return errf(CodeInvalid, "%q is a reference, not a task; expand it first", id)
		}
		return errf(CodeInvalid, "%q is not a task (kind %q)", id, n.Kind)
	}
	if !s.Valid() {
		return errf(CodeInvalid, "unknown status %q (want one of complete, started, reviewing, planning, notstarted, blocked)", s)
	}
	old := n.Status
	if old == s {
		return nil
	}
	n.Status = s
	x.statusChanged(i, old)
	return nil
}

// Apply runs the package-level Apply on the held graph and, on success,
// makes its result the held graph. When every operation is set_status,
// claim, update or update_ref_uri (no structural change) the frontier state
// is updated incrementally for the nodes those operations touched;
// otherwise it is rebuilt in linear time. On error the index is unchanged
// and the error is Apply's.
//
// The returned BatchResult.Graph has its own node slice, so later SetStatus
// calls on the index do not change it; its nodes' lists are shared with the
// index and must not be modified.
func (x *FrontierIndex) Apply(ops []Op) (BatchResult, error) {
	res, err := Apply(x.g, ops)
	if err != nil {
		return BatchResult{}, err
	}
	ng := res.Graph
	res.Graph.Nodes = slices.Clone(ng.Nodes)
	if touched, ok := x.touchedInPlace(ng, ops); ok {
		old := x.g.Nodes
		x.g = ng
		for _, i := range touched {
			if prev := old[i].Status; prev != ng.Nodes[i].Status {
				x.statusChanged(i, prev)
			}
		}
		return res, nil
	}
	x.rebuild(ng)
	return res, nil
}

// touchedInPlace returns the positions of the nodes ops changed, sorted and
// distinct, when the batch that turned the held graph into ng made no
// change that matters to the frontier other than task statuses: the same
// nodes in the same order, with the same ids, kinds and dependencies.
func (x *FrontierIndex) touchedInPlace(ng Graph, ops []Op) ([]int, bool) {
	old := x.g.Nodes
	if len(ng.Nodes) != len(old) {
		return nil, false
	}
	touched := make([]int, 0, len(ops))
	for _, op := range ops {
		switch op.Op {
		case OpSetStatus, OpClaim, OpUpdate, OpUpdateRefURI:
		default:
			return nil, false
		}
		i, ok := x.pos[strings.TrimSpace(op.ID)]
		if !ok {
			return nil, false
		}
		a, b := &old[i], &ng.Nodes[i]
		if a.ID != b.ID || a.Kind != b.Kind || !slices.Equal(a.Dependencies, b.Dependencies) {
			return nil, false // e.g. update canonicalised non-canonical dependencies
		}
		touched = append(touched, i)
	}
	slices.Sort(touched)
	return slices.Compact(touched), true
}

// Frontier returns the execution frontier of the held graph, identical to
// Next(x.Graph()) (also when JSON-encoded). It walks the nodes once, picking
// each by its maintained class, and checks no dependencies. The returned
// lists hold copies of the nodes, which share their lists with the held
// graph: do not modify them.
func (x *FrontierIndex) Frontier() Frontier {
	f := Frontier{
		ReadyToStart:    make([]Node, 0, x.classCount[classStart]),
		ReadyToComplete: make([]Node, 0, x.classCount[classComplete]),
		Blocked:         make([]Node, 0, x.classCount[classBlocked]),
		NeedsExpansion:  make([]Node, 0, x.classCount[classExpand]),
		Progress:        x.Progress(),
	}
	left := len(x.class) - x.classCount[classNone]
	for i, c := range x.class {
		if left == 0 {
			break
		}
		switch c {
		case classNone:
			continue
		case classStart:
			f.ReadyToStart = append(f.ReadyToStart, x.g.Nodes[i])
		case classComplete:
			f.ReadyToComplete = append(f.ReadyToComplete, x.g.Nodes[i])
		case classBlocked:
			f.Blocked = append(f.Blocked, x.g.Nodes[i])
		case classExpand:
			f.NeedsExpansion = append(f.NeedsExpansion, x.g.Nodes[i])
		}
		left--
	}
	return f
}

// Progress returns the progress snapshot of the held graph, identical to
// Next(x.Graph()).Progress, in time proportional to the number of status
// labels (it copies the counts per status).
func (x *FrontierIndex) Progress() Progress {
	p := Progress{
		Total:      len(x.g.Nodes),
		Complete:   x.complete,
		Percentage: percentHalfUp(x.complete, len(x.g.Nodes)),
		ReadyCount: x.classCount[classStart],
		ByStatus:   maps.Clone(x.byStatus),
	}
	if root, ok := x.g.Root(); ok {
		p.RootID = root.ID
		p.RootStatus = root.statusLabel()
	}
	return p
}

// consumes reports whether a task in status s consumes its dependencies'
// output (started, reviewing or complete).
func consumes(s Status) bool { return s == StatusStarted || s.satisfies() }

// rebuild recomputes the whole state for g in time linear in nodes plus edges.
func (x *FrontierIndex) rebuild(g Graph) {
	nodes := g.Nodes
	n := len(nodes)
	pos := make(map[string]int, n)
	edges := 0
	for i := range nodes {
		if _, dup := pos[nodes[i].ID]; !dup {
			pos[nodes[i].ID] = i
		}
		edges += len(nodes[i].Dependencies)
	}
	unsat := make([]int32, n)
	depOff := make([]int32, n+1)
	depTo := make([]int32, 0, edges)
	useOff := make([]int32, n+1)
	for i := range nodes {
		for _, d := range nodes[i].Dependencies {
			j, ok := pos[d]
			if !ok {
				unsat[i]++ // a missing node never satisfies a dependency
				continue
			}
			depTo = append(depTo, int32(j))
			useOff[j+1]++
		}
		depOff[i+1] = int32(len(depTo))
	}
	for j := 1; j <= n; j++ {
		useOff[j] += useOff[j-1]
	}
	useFrom := make([]int32, len(depTo))
	cursor := slices.Clone(useOff[:n])
	consumers := make([]int32, n)
	byStatus := make(map[string]int, 7)
	for _, s := range Statuses() {
		byStatus[string(s)] = 0
	}
	satisfied, complete := 0, 0
	for i := range nodes {
		nd := &nodes[i]
		byStatus[nd.statusLabel()]++
		isTask := nd.Kind == KindTask
		if isTask && nd.Status.satisfies() {
			satisfied++
		}
		if isTask && nd.Status == StatusComplete {
			complete++
		}
		consuming := isTask && consumes(nd.Status)
		for _, j := range depTo[depOff[i]:depOff[i+1]] {
			useFrom[cursor[j]] = int32(i)
			cursor[j]++
			if !nodes[j].satisfied() {
				unsat[i]++
			}
			if consuming {
				consumers[j]++
			}
		}
	}
	*x = FrontierIndex{
		g: g, pos: pos,
		depOff: depOff, depTo: depTo, useOff: useOff, useFrom: useFrom,
		unsat: unsat, consumers: consumers, class: make([]uint8, n),
		satisfied: satisfied, complete: complete, byStatus: byStatus,
	}
	for i := range nodes {
		c := x.classify(i)
		x.class[i] = c
		x.classCount[c]++
	}
}

// classify returns the class of node i from its kind, status and counters,
// following Next.
func (x *FrontierIndex) classify(i int) uint8 {
	if x.unsat[i] != 0 {
		return classNone
	}
	n := &x.g.Nodes[i]
	switch {
	case n.Kind == KindRef:
		return classExpand
	case n.Status == StatusNotStarted || n.Status == StatusPlanning:
		return classStart
	case n.Status == StatusBlocked:
		return classBlocked
	case n.Status == StatusReviewing:
		// The reviewing-root special case: every other node is a task in
		// complete or reviewing, i.e. every node satisfies.
		if x.consumers[i] > 0 || i == 0 && x.satisfied == len(x.g.Nodes) {
			return classComplete
		}
	}
	return classNone
}

// reclass recomputes the class of node i and the class counts.
func (x *FrontierIndex) reclass(i int) {
	if c := x.classify(i); c != x.class[i] {
		x.classCount[x.class[i]]--
		x.classCount[c]++
		x.class[i] = c
	}
}

// statusChanged updates the state after task i's status changed from old to
// its current status: counts, its dependants' unsatisfied counters when it
// starts or stops satisfying, its dependencies' consumer counters when it
// starts or stops consuming, and the classes of every node touched (plus the
// root, whose special case depends on the satisfied count).
func (x *FrontierIndex) statusChanged(i int, old Status) {
	cur := x.g.Nodes[i].Status
	x.addLabel(string(old), -1)
	x.addLabel(string(cur), 1)
	if old == StatusComplete {
		x.complete--
	}
	if cur == StatusComplete {
		x.complete++
	}
	if was, is := old.satisfies(), cur.satisfies(); was != is {
		delta := int32(1) // stopped satisfying: one more unsatisfied edge per dependant edge
		if is {
			delta = -1
			x.satisfied++
		} else {
			x.satisfied--
		}
		for _, k := range x.useFrom[x.useOff[i]:x.useOff[i+1]] {
			x.unsat[k] += delta
			x.reclass(int(k))
		}
	}
	if was, is := consumes(old), consumes(cur); was != is {
		delta := int32(1)
		if was {
			delta = -1
		}
		for _, j := range x.depTo[x.depOff[i]:x.depOff[i+1]] {
			x.consumers[j] += delta
			x.reclass(int(j))
		}
	}
	x.reclass(i)
	x.reclass(0)
}

// addLabel adds d to the count of a status label. Labels other than the six
// statuses are dropped when their count reaches zero, as Next never lists
// them then.
func (x *FrontierIndex) addLabel(label string, d int) {
	c := x.byStatus[label] + d
	if c == 0 && !Status(label).Valid() {
		delete(x.byStatus, label)
		return
	}
	x.byStatus[label] = c
}

// FirstReadyToStart returns the position of the first node in graph order
// that Next lists as ready to start (a task, never a reference), or -1.
func (x *FrontierIndex) FirstReadyToStart() int {
	if x.classCount[classStart] == 0 {
		return -1
	}
	for i, c := range x.class {
		if c == classStart {
			return i
		}
	}
	return -1
}
