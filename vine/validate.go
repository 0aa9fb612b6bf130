package vine

import (
	"fmt"
	"strings"
)

// Validate checks every VINE constraint, in this order, and returns a
// *ValidationError for the first one broken (listing every node involved in
// that constraint):
//
//   - at least one block;
//   - every node well formed: id in the id grammar, kind task or ref, a valid
//     status on tasks and none on references, a non-empty name, a uri on
//     references ("invalid node");
//   - unique ids across tasks and references ("duplicate id");
//   - every dependency target exists ("unknown dependency");
//   - no cycles, reported as a path a -> b -> a ("cycle");
//   - every node reachable from the root along dependency edges ("island");
//   - no attachments on references ("attachment on reference").
//
// Validate runs in time linear in nodes plus edges.
func Validate(g Graph) error {
	if len(g.Nodes) == 0 {
		return &ValidationError{Constraint: ConstraintNoBlocks, Detail: "the graph has no blocks; the first block is the root"}
	}
	if err := checkWellFormed(g); err != nil {
		return err
	}
	idx := make(map[string]int, len(g.Nodes))
	var dups []string
	var reported map[string]bool
	for i, n := range g.Nodes {
		if _, dup := idx[n.ID]; dup {
			if !reported[n.ID] {
				if reported == nil {
					reported = make(map[string]bool)
				}
				reported[n.ID] = true
				dups = append(dups, n.ID)
			}
			continue
		}
		idx[n.ID] = i
	}
	if len(dups) > 0 {
		return &ValidationError{Constraint: ConstraintDuplicateID, IDs: dups,
			Detail: fmt.Sprintf("id %s is used by more than one node", quoteList(dups))}
	}
	adj, err := buildAdjacency(g, idx)
	if err != nil {
		return err
	}
	if cyc := adj.findCycle(g); cyc != nil {
		return &ValidationError{Constraint: ConstraintCycle, IDs: cyc, Detail: strings.Join(cyc, " -> ")}
	}
	if islands := adj.unreachable(g); len(islands) > 0 {
		return &ValidationError{Constraint: ConstraintIsland, IDs: islands,
			Detail: fmt.Sprintf("%s not reachable from the root %q along dependency edges", quoteList(islands), g.Nodes[0].ID)}
	}
	var refs []string
	for _, n := range g.Nodes {
		if n.Kind == KindRef && len(n.Attachments) > 0 {
			refs = append(refs, n.ID)
		}
	}
	if len(refs) > 0 {
		return &ValidationError{Constraint: ConstraintAttachmentOnRef, IDs: refs,
			Detail: fmt.Sprintf("reference %s carries attachments; only tasks may", quoteList(refs))}
	}
	return nil
}

func checkWellFormed(g Graph) error {
	for i, n := range g.Nodes {
		var problem string
		switch {
		case !ValidID(n.ID):
			problem = fmt.Sprintf("node %d: id %q is outside the id grammar [a-zA-Z0-9-]+(/[a-zA-Z0-9-]+)*", i, n.ID)
		case n.Kind != KindTask && n.Kind != KindRef:
			problem = fmt.Sprintf("node %q: unknown kind %q (want task or ref)", n.ID, n.Kind)
		case n.Kind == KindTask && !n.Status.Valid():
			problem = fmt.Sprintf("task %q: unknown status %q", n.ID, n.Status)
		case n.Kind == KindRef && n.Status != "":
			problem = fmt.Sprintf("reference %q has a status (%q); references have none", n.ID, n.Status)
		case n.Kind == KindRef && n.URI == "":
			problem = fmt.Sprintf("reference %q has no vine uri", n.ID)
		case n.ShortName == "":
			problem = fmt.Sprintf("node %q has an empty name", n.ID)
		default:
			continue
		}
		return &ValidationError{Constraint: ConstraintInvalidNode, IDs: []string{n.ID}, Detail: problem}
	}
	return nil
}

// adjacency is a compressed dependency list: the dependencies of node i are
// targets[offsets[i]:offsets[i+1]], as node positions.
type adjacency struct {
	offsets []int32
	targets []int32
}

func (a adjacency) deps(i int) []int32 { return a.targets[a.offsets[i]:a.offsets[i+1]] }

// buildAdjacency resolves every dependency, failing on unknown targets.
func buildAdjacency(g Graph, idx map[string]int) (adjacency, error) {
	edges := 0
	for _, n := range g.Nodes {
		edges += len(n.Dependencies)
	}
	a := adjacency{offsets: make([]int32, len(g.Nodes)+1), targets: make([]int32, 0, edges)}
	var missing []string
	var details []string
	for i, n := range g.Nodes {
		for _, d := range n.Dependencies {
			j, ok := idx[d]
			if !ok {
				missing = append(missing, n.ID, d)
				details = append(details, fmt.Sprintf("%q -> %q", n.ID, d))
				continue
			}
			a.targets = append(a.targets, int32(j))
		}
		a.offsets[i+1] = int32(len(a.targets))
	}
	if len(missing) > 0 {
		return a, &ValidationError{Constraint: ConstraintUnknownDependency, IDs: missing,
			Detail: fmt.Sprintf("%s: no node has that id", strings.Join(details, ", "))}
	}
	return a, nil
}

// findCycle returns a dependency cycle as a path whose last id repeats the
// first, or nil. Iterative depth-first search, linear time.
func (a adjacency) findCycle(g Graph) []string {
	const (
		white = iota
		grey
		black
	)
	n := len(g.Nodes)
	state := make([]uint8, n)
	type frame struct{ node, next int32 }
	var stack []frame
	for s := range n {
		if state[s] != white {
			continue
		}
		stack = append(stack[:0], frame{int32(s), a.offsets[s]})
		state[s] = grey
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			if top.next == a.offsets[top.node+1] {
				state[top.node] = black
				stack = stack[:len(stack)-1]
				continue
			}
			t := a.targets[top.next]
			top.next++
			switch state[t] {
			case white:
				state[t] = grey
				stack = append(stack, frame{t, a.offsets[t]})
			case grey:
				k := len(stack) - 1
				for stack[k].node != t {
					k--
				}
				path := make([]string, 0, len(stack)-k+1)
				for _, f := range stack[k:] {
					path = append(path, g.Nodes[f.node].ID)
				}
				return append(path, g.Nodes[t].ID)
			}
		}
	}
	return nil
}

// unreachable lists, in graph order, the nodes not reachable from the root.
func (a adjacency) unreachable(g Graph) []string {
	seen := make([]bool, len(g.Nodes))
	queue := make([]int32, 1, len(g.Nodes))
	seen[0] = true
	for len(queue) > 0 {
		v := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		for _, t := range a.deps(int(v)) {
			if !seen[t] {
				seen[t] = true
				queue = append(queue, t)
			}
		}
	}
	var out []string
	for i, ok := range seen {
		if !ok {
			out = append(out, g.Nodes[i].ID)
		}
	}
	return out
}
