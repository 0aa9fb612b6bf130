package vine

import (
	"slices"
	"strings"
)

// Summary is a high-level overview of a graph.
type Summary struct {
	// Title is the `title` metadata, if any.
	Title string `json:"title,omitempty"`
	// RootID is the id of the root node.
	RootID string `json:"root_id"`
	// RootName is the root's short name.
	RootName string `json:"root_name"`
	// RootStatus is the root's status, or "ref" for a reference root.
	RootStatus string `json:"root_status"`
	// Total is the number of nodes.
	Total int `json:"total"`
	// LeafCount is the number of nodes without dependencies.
	LeafCount int `json:"leaf_count"`
	// RefCount is the number of references.
	RefCount int `json:"ref_count"`
	// ByStatus counts nodes per status, as in Progress.ByStatus.
	ByStatus map[string]int `json:"by_status"`
}

// NodeSummary identifies a node briefly.
type NodeSummary struct {
	// ID is the node id.
	ID string `json:"id"`
	// Kind is task or ref.
	Kind Kind `json:"kind"`
	// ShortName is the node's name.
	ShortName string `json:"shortName"`
	// Status is the task status; empty for references.
	Status Status `json:"status,omitempty"`
}

func summarize(n Node) NodeSummary {
	return NodeSummary{ID: n.ID, Kind: n.Kind, ShortName: n.ShortName, Status: n.Status}
}

// ResolvedDependency is a dependency of a task with the data a worker needs
// from it: status, decisions and attachments (or its uri for a reference).
type ResolvedDependency struct {
	// ID is the dependency's id.
	ID string `json:"id"`
	// Kind is task or ref.
	Kind Kind `json:"kind"`
	// ShortName is the dependency's name.
	ShortName string `json:"shortName"`
	// Status is the task status; empty for references and missing nodes.
	Status Status `json:"status,omitempty"`
	// URI is the referenced file of a reference.
	URI string `json:"vine,omitempty"`
	// Decisions are the dependency's decisions.
	Decisions []string `json:"decisions"`
	// Attachments are the dependency's attachments.
	Attachments []Attachment `json:"attachments"`
	// Missing is true when no node has this id (invalid graph).
	Missing bool `json:"missing,omitempty"`
}

// NodeContext is a node with its resolved dependencies and direct dependants,
// returned by Context and by the claim operation.
type NodeContext struct {
	// Node is the node itself (named "task" on the wire).
	Node Node `json:"task"`
	// ResolvedDependencies are its dependencies, sorted by id.
	ResolvedDependencies []ResolvedDependency `json:"resolved_dependencies"`
	// Dependants are the nodes that depend on it directly, in graph order
	// (filled by Context, left empty in claim results).
	Dependants []NodeSummary `json:"dependants,omitempty"`
}

// ValidationReport is the result of the "validate" read action on a valid graph.
type ValidationReport struct {
	// Valid is always true; an invalid graph yields a *ValidationError.
	Valid bool `json:"valid"`
	// Total is the number of nodes.
	Total int `json:"total"`
}

// GetSummary returns the root, totals, leaf count and counts by status.
func GetSummary(g Graph) (Summary, error) {
	root, ok := g.Root()
	if !ok {
		return Summary{}, &ValidationError{Constraint: ConstraintNoBlocks, Detail: "the graph has no blocks"}
	}
	p := Next(g).Progress
	s := Summary{Title: g.Title(), RootID: root.ID, RootName: root.ShortName, RootStatus: root.statusLabel(),
		Total: len(g.Nodes), ByStatus: p.ByStatus}
	for _, n := range g.Nodes {
		if len(n.Dependencies) == 0 {
			s.LeafCount++
		}
		if n.IsRef() {
			s.RefCount++
		}
	}
	return s, nil
}

// ListFilter selects nodes for List. Empty fields do not filter; both may be
// combined.
type ListFilter struct {
	// Status keeps tasks in this status ("ref" keeps references).
	Status string `json:"status,omitempty"`
	// Query keeps nodes whose id, name or description contains it,
	// case-insensitively.
	Query string `json:"query,omitempty"`
}

// List returns the nodes matching f, in graph order.
func List(g Graph, f ListFilter) ([]Node, error) {
	if f.Status != "" && f.Status != string(KindRef) && !Status(f.Status).Valid() {
		return nil, errf(CodeInvalid, "unknown status %q (want one of complete, started, reviewing, planning, notstarted, blocked, or ref)", f.Status)
	}
	q := strings.ToLower(f.Query)
	out := []Node{}
	for _, n := range g.Nodes {
		if f.Status != "" && n.statusLabel() != f.Status {
			continue
		}
		if q != "" && !matches(n, q) {
			continue
		}
		out = append(out, n)
	}
	return out, nil
}

// Search returns, in graph order, the nodes whose id, short name or
// description contains query, case-insensitively. The query must not be empty.
func Search(g Graph, query string) ([]Node, error) {
	if strings.TrimSpace(query) == "" {
		return nil, errf(CodeInvalid, "search query is empty")
	}
	return List(g, ListFilter{Query: query})
}

func matches(n Node, lowerQuery string) bool {
	return strings.Contains(strings.ToLower(n.ID), lowerQuery) ||
		strings.Contains(strings.ToLower(n.ShortName), lowerQuery) ||
		strings.Contains(strings.ToLower(n.Description), lowerQuery)
}

// Task returns the node with the given id, or an error of code CodeNotFound.
func Task(g Graph, id string) (Node, error) {
	if n, ok := g.Lookup(id); ok {
		return n, nil
	}
	return Node{}, notFound(id)
}

// Context returns the node with its resolved dependencies (status, decisions,
// attachments) and its direct dependants.
func Context(g Graph, id string) (NodeContext, error) {
	idx := g.Index()
	i, ok := idx[id]
	if !ok {
		return NodeContext{}, notFound(id)
	}
	tc := contextOf(g.Nodes, idx, i)
	tc.Dependants = []NodeSummary{}
	for _, m := range g.Nodes {
		if slices.Contains(m.Dependencies, id) {
			tc.Dependants = append(tc.Dependants, summarize(m))
		}
	}
	return tc, nil
}

// contextOf builds the context of nodes[i] without dependants: the task and
// its resolved dependencies.
func contextOf(nodes []Node, idx map[string]int, i int) NodeContext {
	n := nodes[i]
	tc := NodeContext{Node: n.Clone(), ResolvedDependencies: make([]ResolvedDependency, 0, len(n.Dependencies))}
	for _, d := range n.Dependencies {
		j, ok := idx[d]
		if !ok {
			tc.ResolvedDependencies = append(tc.ResolvedDependencies, ResolvedDependency{ID: d, Missing: true, Decisions: []string{}, Attachments: []Attachment{}})
			continue
		}
		dn := nodes[j]
		rd := ResolvedDependency{ID: dn.ID, Kind: dn.Kind, ShortName: dn.ShortName, Status: dn.Status, URI: dn.URI,
			Decisions: append([]string{}, dn.Decisions...), Attachments: append([]Attachment{}, dn.Attachments...)}
		tc.ResolvedDependencies = append(tc.ResolvedDependencies, rd)
	}
	return tc
}

// Descendants returns, in graph order, every node that transitively depends
// on id: the blast radius of a change to it. Linear in nodes plus edges.
func Descendants(g Graph, id string) ([]NodeSummary, error) {
	idx := g.Index()
	start, ok := idx[id]
	if !ok {
		return nil, notFound(id)
	}
	// Reverse adjacency: dependants of each node.
	count := make([]int32, len(g.Nodes)+1)
	for _, n := range g.Nodes {
		for _, d := range n.Dependencies {
			if j, ok := idx[d]; ok {
				count[j+1]++
			}
		}
	}
	for i := 1; i < len(count); i++ {
		count[i] += count[i-1]
	}
	rev := make([]int32, count[len(g.Nodes)])
	fill := append([]int32(nil), count[:len(g.Nodes)]...)
	for i, n := range g.Nodes {
		for _, d := range n.Dependencies {
			if j, ok := idx[d]; ok {
				rev[fill[j]] = int32(i)
				fill[j]++
			}
		}
	}
	seen := make([]bool, len(g.Nodes))
	seen[start] = true
	stack := []int32{int32(start)}
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, u := range rev[count[v]:count[v+1]] {
			if !seen[u] {
				seen[u] = true
				stack = append(stack, u)
			}
		}
	}
	out := []NodeSummary{}
	for i, ok := range seen {
		if ok && i != start {
			out = append(out, summarize(g.Nodes[i]))
		}
	}
	return out, nil
}

// Refs returns the reference nodes, in graph order.
func Refs(g Graph) []Node {
	out := []Node{}
	for _, n := range g.Nodes {
		if n.IsRef() {
			out = append(out, n)
		}
	}
	return out
}

// Read actions accepted by Read.
const (
	// ReadSummary answers with a Summary.
	ReadSummary = "summary"
	// ReadList answers with the nodes matching status and query.
	ReadList = "list"
	// ReadTask answers with one node.
	ReadTask = "task"
	// ReadContext answers with a NodeContext.
	ReadContext = "context"
	// ReadDescendants answers with the transitive dependants of a node.
	ReadDescendants = "descendants"
	// ReadSearch answers with the nodes matching a query.
	ReadSearch = "search"
	// ReadRefs answers with the reference nodes.
	ReadRefs = "refs"
	// ReadValidate answers with a ValidationReport or the validation error.
	ReadValidate = "validate"
)

// ReadRequest is a read query as data (the vine_read tool's arguments).
type ReadRequest struct {
	// Action is one of summary, list, task, context, descendants, search,
	// refs, validate.
	Action string `json:"action"`
	// ID is the node for task, context and descendants.
	ID string `json:"id,omitempty"`
	// Status filters list.
	Status string `json:"status,omitempty"`
	// Query filters list and is required by search.
	Query string `json:"query,omitempty"`
}

// Read answers a read query. The result is a Summary, []Node, Node,
// NodeContext, []NodeSummary or ValidationReport depending on the action.
func Read(g Graph, r ReadRequest) (any, error) {
	needID := func() error {
		if r.ID == "" {
			return errf(CodeInvalid, "id is required for action %q", r.Action)
		}
		return nil
	}
	switch r.Action {
	case ReadSummary:
		return GetSummary(g)
	case ReadList:
		return List(g, ListFilter{Status: r.Status, Query: r.Query})
	case ReadTask:
		if err := needID(); err != nil {
			return nil, err
		}
		return Task(g, r.ID)
	case ReadContext:
		if err := needID(); err != nil {
			return nil, err
		}
		return Context(g, r.ID)
	case ReadDescendants:
		if err := needID(); err != nil {
			return nil, err
		}
		return Descendants(g, r.ID)
	case ReadSearch:
		return Search(g, r.Query)
	case ReadRefs:
		return Refs(g), nil
	case ReadValidate:
		if err := Validate(g); err != nil {
			return nil, err
		}
		return ValidationReport{Valid: true, Total: len(g.Nodes)}, nil
	}
	return nil, errf(CodeInvalid, "unknown read action %q (want %s)", r.Action,
		"summary, list, task, context, descendants, search, refs or validate")
}
