package vine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Operation names accepted in Op.Op.
const (
	// OpCreate starts a new empty graph.
	OpCreate = "create"
	// OpAddTask appends a task.
	OpAddTask = "add_task"
	// OpRemoveTask removes a node and the edges to it.
	OpRemoveTask = "remove_task"
	// OpSetStatus sets a task's status.
	OpSetStatus = "set_status"
	// OpClaim starts a task that is ready to start.
	OpClaim = "claim"
	// OpUpdate changes a node's name or description and appends decisions
	// and attachments.
	OpUpdate = "update"
	// OpAddDep adds a dependency edge.
	OpAddDep = "add_dep"
	// OpRemoveDep removes a dependency edge.
	OpRemoveDep = "remove_dep"
	// OpAddRef appends a reference node.
	OpAddRef = "add_ref"
	// OpUpdateRefURI changes a reference's file.
	OpUpdateRefURI = "update_ref_uri"
	// OpExtractToRef moves a task into a child graph behind a reference.
	OpExtractToRef = "extract_to_ref"
)

// Op is one mutation, as data: it decodes from the JSON objects of the
// vine_write tool ({"op": "set_status", "id": "a", "status": "started"}) and
// can be stored in events. Which fields an operation reads:
//
//   - create {}: start a new empty graph; must be the first operation, and a
//     later add_task supplies the root.
//   - add_task {id, name, status?, description?, dependsOn?, annotations?}:
//     append a task at the end of graph order (status defaults to notstarted).
//   - remove_task {id}: remove a node (never the root) and every edge to it.
//   - set_status {id, status}: set a task's status (not on references).
//   - claim {id}: set a task that is ready to start to started; fails with
//     CodeConflict otherwise. Its OpResult carries the task's context.
//   - update {id, name?, description?, decisions?, attachments?, annotations?}:
//     decisions and attachments are appended; annotations are merged key by
//     key, and a key with an empty list removes that annotation.
//   - add_dep / remove_dep {taskId, depId}: add or remove an edge.
//   - add_ref {id, name, vine, description?, dependsOn?, decisions?}: append a
//     reference node.
//   - update_ref_uri {id, uri}: change a reference's file.
//   - extract_to_ref {id, vine, refName?}: move a task into a new child graph
//     (returned in OpResult.Extracted) and leave a reference in its place.
//
// Ids, names and uris are trimmed; a decision given as "> text" is stored as
// "text"; CRLF in a description becomes LF. An argument the operation does
// not take is an error.
type Op struct {
	// Op is the operation name.
	Op string `json:"op"`
	// ID is the node the operation creates or changes.
	ID string `json:"id,omitempty"`
	// Name is the short name (add_task, add_ref, update); empty means unset.
	Name string `json:"name,omitempty"`
	// Status is the new status (add_task, set_status).
	Status Status `json:"status,omitempty"`
	// Description replaces the description when not nil.
	Description *string `json:"description,omitempty"`
	// DependsOn are the dependencies of a new node.
	DependsOn []string `json:"dependsOn,omitempty"`
	// Annotations are header annotations (add_task, update).
	Annotations map[string][]string `json:"annotations,omitempty"`
	// Decisions are appended (update) or set (add_ref).
	Decisions []string `json:"decisions,omitempty"`
	// Attachments are appended (update).
	Attachments []Attachment `json:"attachments,omitempty"`
	// TaskID is the dependant of an edge (add_dep, remove_dep).
	TaskID string `json:"taskId,omitempty"`
	// DepID is the dependency of an edge (add_dep, remove_dep).
	DepID string `json:"depId,omitempty"`
	// Vine is the referenced file (add_ref, extract_to_ref).
	Vine string `json:"vine,omitempty"`
	// URI is the new referenced file (update_ref_uri).
	URI string `json:"uri,omitempty"`
	// RefName is the name of the reference left by extract_to_ref; defaults
	// to the task's name.
	RefName string `json:"refName,omitempty"`
}

// OpResult reports one applied operation.
type OpResult struct {
	// Op is the operation name.
	Op string `json:"op"`
	// Summary describes what was done.
	Summary string `json:"summary"`
	// Claimed is the claimed node with its resolved dependencies, as of the
	// claim (claim only).
	Claimed *NodeContext `json:"claimed,omitempty"`
	// Extracted is the child graph to write (extract_to_ref only).
	Extracted *ExtractedGraph `json:"extracted,omitempty"`
	// Unchanged is true when the operation changed nothing (set_status to
	// the status the task already has, e.g. a second agent completing a
	// task another completed first): count it once.
	Unchanged bool `json:"unchanged,omitempty"`
}

// ExtractedGraph is a child graph produced by extract_to_ref.
type ExtractedGraph struct {
	// ID is the extracted task, now a reference in the parent.
	ID string `json:"id"`
	// Vine is the uri the reference points to, where Graph should be written.
	Vine string `json:"vine"`
	// Graph is the child graph, its root being the extracted task.
	Graph Graph `json:"graph"`
}

// BatchResult is the outcome of a successful Apply.
type BatchResult struct {
	// Graph is the graph after the batch.
	Graph Graph `json:"graph"`
	// Summary is a one-line account, "N operation(s) applied: ...".
	Summary string `json:"summary"`
	// Results has one entry per operation, in order.
	Results []OpResult `json:"results"`
}

// DecodeOps decodes a JSON array of operations, rejecting unknown fields so
// a misspelt argument is reported instead of ignored.
func DecodeOps(data []byte) ([]Op, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var ops []Op
	if err := dec.Decode(&ops); err != nil {
		return nil, &Error{Code: CodeInvalid, Msg: "decode operations", Err: err}
	}
	return ops, nil
}

// Apply applies ops to g as one atomic batch: operations run in order, each
// checking its own arguments, and the resulting graph is validated once at
// the end (so a batch may pass through invalid intermediate states). On any
// error nothing is applied and g is unchanged; the error is an *OpError for
// a failed operation or wraps a *ValidationError for the final check. Use
// ErrorCode to classify it (a claim on a task that is not ready to start has
// CodeConflict).
//
// Apply never modifies g; the result shares unchanged nodes with it.
func Apply(g Graph, ops []Op) (BatchResult, error) {
	return apply(g, ops, true, nil)
}

// apply is Apply, validating the result when validate is set, with g's
// index when it is given (status batches only: the index is not changed).
func apply(g Graph, ops []Op, validate bool, index map[string]int) (BatchResult, error) {
	if len(ops) == 0 {
		return BatchResult{}, errf(CodeInvalid, "no operations to apply")
	}
	b := newBatch(g, index)
	res := BatchResult{Results: make([]OpResult, 0, len(ops))}
	for i, op := range ops {
		r, err := b.apply(i, op)
		if err != nil {
			return BatchResult{}, &OpError{Index: i, Op: op.Op, Err: err}
		}
		r.Op = op.Op
		res.Results = append(res.Results, r)
	}
	out := b.graph()
	// Without validate only statuses changed (ApplyValid): the
	// constraints hold as they did in g.
	if validate {
		if err := Validate(out); err != nil {
			return BatchResult{}, fmt.Errorf("batch of %d operation(s) rejected: %w", len(ops), err)
		}
	}
	res.Graph = out
	parts := make([]string, len(res.Results))
	for i, r := range res.Results {
		parts[i] = r.Summary
	}
	res.Summary = fmt.Sprintf("%d operation(s) applied: %s.", len(ops), strings.Join(parts, "; "))
	return res, nil
}

// ApplyValid is Apply for a graph known to be valid (a state recorded in
// the log, which was validated when it was recorded): a batch whose
// operations only change task statuses (set_status, claim) cannot break a
// constraint, so its result is not validated again, which on a large
// graph is most of the cost of a claim. index, when not nil, is
// g.Index() kept by the caller (it is only read). Any other batch is
// Apply's.
func ApplyValid(g Graph, index map[string]int, ops []Op) (BatchResult, error) {
	for _, op := range ops {
		if op.Op != OpSetStatus && op.Op != OpClaim {
			return Apply(g, ops)
		}
	}
	return apply(g, ops, false, index)
}

// batch is the working state of Apply. The input's node slice is copied on
// the first write to it, and each node's lists on the first write to that
// node, so the input is never modified.
type batch struct {
	meta     map[string]string
	nodes    []Node
	copied   bool   // nodes is private (not the input's backing array)
	owned    []bool // nodes[i]'s lists no longer share memory with the input
	removed  []bool
	nRemoved int
	index    map[string]int // live ids only
}

func newBatch(g Graph, index map[string]int) *batch {
	if index == nil {
		index = g.Index()
	}
	return &batch{
		meta:    maps.Clone(g.Metadata),
		nodes:   g.Nodes,
		owned:   make([]bool, len(g.Nodes)),
		removed: make([]bool, len(g.Nodes)),
		index:   index,
	}
}

// set replaces nodes[i], copying the node slice first if needed.
func (b *batch) set(i int, n Node) {
	b.writable()
	b.nodes[i] = n
}

// writable makes b.nodes private.
func (b *batch) writable() {
	if !b.copied {
		b.nodes = slices.Clone(b.nodes)
		b.copied = true
	}
}

func (b *batch) delim() string {
	if d, ok := b.meta[MetaDelimiter]; ok {
		return d
	}
	return DefaultDelimiter
}

// own makes nodes[i] safe to modify in place.
func (b *batch) own(i int) *Node {
	b.writable()
	if !b.owned[i] {
		b.nodes[i] = b.nodes[i].Clone()
		b.owned[i] = true
	}
	return &b.nodes[i]
}

func (b *batch) append(n Node) {
	b.writable()
	b.index[n.ID] = len(b.nodes)
	b.nodes = append(b.nodes, n)
	b.owned = append(b.owned, true)
	b.removed = append(b.removed, false)
}

func (b *batch) rootIndex() int {
	for i := range b.nodes {
		if !b.removed[i] {
			return i
		}
	}
	return -1
}

func (b *batch) lookup(id string) (int, error) {
	if id == "" {
		return 0, errf(CodeInvalid, "id is required")
	}
	i, ok := b.index[id]
	if !ok {
		return 0, notFound(id)
	}
	return i, nil
}

func (b *batch) graph() Graph {
	if b.nRemoved == 0 {
		if !b.copied { // nothing written: still a fresh slice header for the caller
			b.nodes = slices.Clone(b.nodes)
		}
		return Graph{Metadata: b.meta, Nodes: slices.Clip(b.nodes)}
	}
	nodes := make([]Node, 0, len(b.nodes)-b.nRemoved)
	for i, n := range b.nodes {
		if !b.removed[i] {
			nodes = append(nodes, n)
		}
	}
	return Graph{Metadata: b.meta, Nodes: nodes}
}

// checkWritable reports a node whose text would not read back unchanged.
func (b *batch) checkWritable(n *Node) error {
	if err := checkNode(n, b.delim()); err != nil {
		return &Error{Code: CodeInvalid, Msg: "rejected", Err: err}
	}
	return nil
}

// opFields lists the arguments an operation reads (VINE.md names), from
// its OpSpec.
func opFields(name string) ([]string, bool) {
	spec, ok := lookupOp(name)
	return spec.fields(), ok
}

// checkFields rejects arguments the operation does not take, so a misplaced
// argument (say "id" for add_dep, or "status" for update) is reported.
func checkFields(op Op) error {
	allowed, known := opFields(op.Op)
	if !known {
		return nil
	}
	set := []struct {
		name string
		on   bool
	}{
		{"id", op.ID != ""}, {"name", op.Name != ""}, {"status", op.Status != ""},
		{"description", op.Description != nil}, {"dependsOn", op.DependsOn != nil},
		{"annotations", op.Annotations != nil}, {"decisions", op.Decisions != nil},
		{"attachments", op.Attachments != nil}, {"taskId", op.TaskID != ""}, {"depId", op.DepID != ""},
		{"vine", op.Vine != ""}, {"uri", op.URI != ""}, {"refName", op.RefName != ""},
	}
	for _, f := range set {
		if f.on && !slices.Contains(allowed, f.name) {
			if len(allowed) == 0 {
				return errf(CodeInvalid, "%s takes no arguments, got %q", op.Op, f.name)
			}
			return errf(CodeInvalid, "%s does not take %q (it takes %s)", op.Op, f.name, strings.Join(allowed, ", "))
		}
	}
	return nil
}

func (b *batch) apply(i int, op Op) (OpResult, error) {
	for _, f := range []*string{&op.ID, &op.Name, &op.TaskID, &op.DepID, &op.Vine, &op.URI, &op.RefName} {
		*f = strings.TrimSpace(*f)
	}
	if err := checkFields(op); err != nil {
		return OpResult{}, err
	}
	switch op.Op {
	case OpCreate:
		if i != 0 {
			return OpResult{}, errf(CodeInvalid, "create must be the first operation of a batch")
		}
		*b = batch{index: map[string]int{}}
		return OpResult{Summary: "created graph"}, nil
	case OpAddTask:
		return b.addTask(op)
	case OpRemoveTask:
		return b.removeTask(op)
	case OpSetStatus:
		return b.setStatus(op)
	case OpClaim:
		return b.claim(op)
	case OpUpdate:
		return b.update(op)
	case OpAddDep:
		return b.addDep(op)
	case OpRemoveDep:
		return b.removeDep(op)
	case OpAddRef:
		return b.addRef(op)
	case OpUpdateRefURI:
		return b.updateRefURI(op)
	case OpExtractToRef:
		return b.extractToRef(op)
	case "":
		return OpResult{}, errf(CodeInvalid, `the "op" field is required`)
	}
	return OpResult{}, errf(CodeInvalid, "unknown op %q (want one of %s)", op.Op, strings.Join(OpNames(), ", "))
}

// newID checks the id of a node to be created.
func (b *batch) newID(raw string) (string, error) {
	id := strings.TrimSpace(raw)
	if id == "" {
		return "", errf(CodeInvalid, "id is required")
	}
	if !ValidID(id) {
		return "", errf(CodeInvalid, "id %q is outside the id grammar [a-zA-Z0-9-]+(/[a-zA-Z0-9-]+)*", id)
	}
	if _, exists := b.index[id]; exists {
		return "", &ValidationError{Constraint: ConstraintDuplicateID, IDs: []string{id}, Detail: fmt.Sprintf("a node with id %q already exists", id)}
	}
	return id, nil
}

func requiredName(raw string) (string, error) {
	name := strings.TrimSpace(raw)
	if name == "" {
		return "", errf(CodeInvalid, "name is required")
	}
	return name, nil
}

func depList(raw []string) ([]string, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	deps := make([]string, len(raw))
	for i, d := range raw {
		deps[i] = strings.TrimSpace(d)
		if !ValidID(deps[i]) {
			return nil, errf(CodeInvalid, "dependsOn[%d]: %q is outside the id grammar", i, d)
		}
	}
	slices.Sort(deps)
	return slices.Compact(deps), nil
}

// normalizeNewlines turns CRLF line endings of a description into LF.
func normalizeNewlines(s string) string { return strings.ReplaceAll(s, "\r\n", "\n") }

func decisionList(raw []string) []string {
	out := make([]string, len(raw))
	for i, d := range raw {
		out[i] = strings.TrimPrefix(d, "> ")
	}
	return out
}

func attachmentList(raw []Attachment) ([]Attachment, error) {
	out := make([]Attachment, len(raw))
	for i, a := range raw {
		a.Mime, a.URI = strings.TrimSpace(a.Mime), strings.TrimSpace(a.URI)
		if !a.Class.Valid() {
			return nil, errf(CodeInvalid, "attachments[%d]: class %q is not artifact, guidance or file", i, a.Class)
		}
		slash := strings.IndexByte(a.Mime, '/')
		if slash <= 0 || slash == len(a.Mime)-1 || strings.ContainsAny(a.Mime, " \t\n\r") {
			return nil, errf(CodeInvalid, "attachments[%d]: mime %q is not a type/subtype", i, a.Mime)
		}
		if a.URI == "" || strings.ContainsAny(a.URI, "\n\r") {
			return nil, errf(CodeInvalid, "attachments[%d]: uri %q must be non-empty and on one line", i, a.URI)
		}
		out[i] = a
	}
	return out, nil
}

func annotationMap(raw map[string][]string) (map[string][]string, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	out := make(map[string][]string, len(raw))
	for k, v := range raw {
		if len(v) == 0 {
			return nil, errf(CodeInvalid, "annotation @%s has no values (use [\"\"] for a flag)", k)
		}
		out[k] = trimAll(v)
	}
	return out, nil
}

func trimAll(v []string) []string {
	out := make([]string, len(v))
	for i, s := range v {
		out[i] = strings.TrimSpace(s)
	}
	return out
}

func (b *batch) addTask(op Op) (OpResult, error) {
	id, err := b.newID(op.ID)
	if err != nil {
		return OpResult{}, err
	}
	name, err := requiredName(op.Name)
	if err != nil {
		return OpResult{}, err
	}
	status := op.Status
	if status == "" {
		status = StatusNotStarted
	}
	if !status.Valid() {
		return OpResult{}, errf(CodeInvalid, "unknown status %q (want one of complete, started, reviewing, planning, notstarted, blocked)", op.Status)
	}
	n := Node{ID: id, Kind: KindTask, ShortName: name, Status: status}
	if op.Description != nil {
		n.Description = normalizeNewlines(*op.Description)
	}
	if n.Dependencies, err = depList(op.DependsOn); err != nil {
		return OpResult{}, err
	}
	if n.Annotations, err = annotationMap(op.Annotations); err != nil {
		return OpResult{}, err
	}
	if err := b.checkWritable(&n); err != nil {
		return OpResult{}, err
	}
	b.append(n)
	return OpResult{Summary: fmt.Sprintf("added task %q", id)}, nil
}

func (b *batch) removeTask(op Op) (OpResult, error) {
	i, err := b.lookup(op.ID)
	if err != nil {
		return OpResult{}, err
	}
	if i == b.rootIndex() {
		return OpResult{}, errf(CodeInvalid, "cannot remove the root %q", op.ID)
	}
	b.removed[i] = true
	b.nRemoved++
	delete(b.index, op.ID)
	for j := range b.nodes {
		if b.removed[j] {
			continue
		}
		if k := slices.Index(b.nodes[j].Dependencies, op.ID); k >= 0 {
			n := b.own(j)
			n.Dependencies = slices.Delete(n.Dependencies, k, k+1)
		}
	}
	return OpResult{Summary: fmt.Sprintf("removed %q", op.ID)}, nil
}

func (b *batch) task(id string) (int, error) {
	i, err := b.lookup(id)
	if err != nil {
		return 0, err
	}
	if b.nodes[i].Kind != KindTask {
		return 0, errf(CodeInvalid, "%q is a reference, not a task; expand it first", id)
	}
	return i, nil
}

func (b *batch) setStatus(op Op) (OpResult, error) {
	i, err := b.task(op.ID)
	if err != nil {
		return OpResult{}, err
	}
	if !op.Status.Valid() {
		return OpResult{}, errf(CodeInvalid, "unknown status %q (want one of complete, started, reviewing, planning, notstarted, blocked)", op.Status)
	}
	if b.nodes[i].Status == op.Status {
		return OpResult{Summary: fmt.Sprintf("%q is already %s (no change)", op.ID, op.Status), Unchanged: true}, nil
	}
	b.own(i).Status = op.Status
	return OpResult{Summary: fmt.Sprintf("set %q → %s", op.ID, op.Status)}, nil
}

func (b *batch) claim(op Op) (OpResult, error) {
	i, err := b.task(op.ID)
	if err != nil {
		return OpResult{}, err
	}
	n := b.nodes[i]
	if n.Status != StatusNotStarted && n.Status != StatusPlanning {
		return OpResult{}, errf(CodeConflict, "task %q is %s, not ready to start (claim needs notstarted or planning)", op.ID, n.Status)
	}
	for _, d := range n.Dependencies {
		j, ok := b.index[d]
		if !ok {
			return OpResult{}, errf(CodeConflict, "task %q is not ready to start: dependency %q does not exist", op.ID, d)
		}
		if dn := b.nodes[j]; !dn.satisfied() {
			state := string(dn.Status)
			if dn.IsRef() {
				state = "an unexpanded reference"
			}
			return OpResult{}, errf(CodeConflict, "task %q is not ready to start: dependency %q is %s (needs complete or reviewing)", op.ID, d, state)
		}
	}
	b.own(i).Status = StatusStarted
	tc := contextOf(b.nodes, b.index, i)
	return OpResult{Summary: fmt.Sprintf("claimed %q", op.ID), Claimed: &tc}, nil
}

func (b *batch) update(op Op) (OpResult, error) {
	i, err := b.lookup(op.ID)
	if err != nil {
		return OpResult{}, err
	}
	if strings.TrimSpace(op.Name) == "" && op.Description == nil && op.Decisions == nil && op.Attachments == nil && op.Annotations == nil {
		return OpResult{}, errf(CodeInvalid, "nothing to update: give name, description, decisions, attachments or annotations")
	}
	atts, err := attachmentList(op.Attachments)
	if err != nil {
		return OpResult{}, err
	}
	if len(atts) > 0 && b.nodes[i].IsRef() {
		return OpResult{}, &ValidationError{Constraint: ConstraintAttachmentOnRef, IDs: []string{op.ID}, Detail: fmt.Sprintf("reference %q cannot carry attachments", op.ID)}
	}
	n := b.nodes[i].Clone()
	if name := strings.TrimSpace(op.Name); name != "" {
		n.ShortName = name
	}
	if op.Description != nil {
		n.Description = normalizeNewlines(*op.Description)
	}
	n.Decisions = append(n.Decisions, decisionList(op.Decisions)...)
	n.Attachments = append(n.Attachments, atts...)
	for k, v := range op.Annotations {
		if len(v) == 0 {
			delete(n.Annotations, k)
			continue
		}
		if n.Annotations == nil {
			n.Annotations = make(map[string][]string)
		}
		n.Annotations[k] = trimAll(v)
	}
	if len(n.Annotations) == 0 {
		n.Annotations = nil
	}
	canonicalize(&n)
	if err := b.checkWritable(&n); err != nil {
		return OpResult{}, err
	}
	b.set(i, n)
	b.owned[i] = true
	return OpResult{Summary: fmt.Sprintf("updated %q", op.ID)}, nil
}

func (b *batch) edge(op Op) (int, string, error) {
	if op.TaskID == "" || op.DepID == "" {
		return 0, "", errf(CodeInvalid, "taskId and depId are required")
	}
	i, err := b.lookup(op.TaskID)
	if err != nil {
		return 0, "", err
	}
	dep := strings.TrimSpace(op.DepID)
	if !ValidID(dep) {
		return 0, "", errf(CodeInvalid, "depId %q is outside the id grammar", op.DepID)
	}
	return i, dep, nil
}

func (b *batch) addDep(op Op) (OpResult, error) {
	i, dep, err := b.edge(op)
	if err != nil {
		return OpResult{}, err
	}
	k, found := slices.BinarySearch(b.nodes[i].Dependencies, dep)
	if found {
		return OpResult{}, errf(CodeInvalid, "%q already depends on %q", op.TaskID, dep)
	}
	n := b.own(i)
	n.Dependencies = slices.Insert(n.Dependencies, k, dep)
	return OpResult{Summary: fmt.Sprintf("added dep %s → %s", op.TaskID, dep)}, nil
}

func (b *batch) removeDep(op Op) (OpResult, error) {
	i, dep, err := b.edge(op)
	if err != nil {
		return OpResult{}, err
	}
	k := slices.Index(b.nodes[i].Dependencies, dep)
	if k < 0 {
		return OpResult{}, errf(CodeNotFound, "%q does not depend on %q", op.TaskID, dep)
	}
	n := b.own(i)
	n.Dependencies = slices.Delete(n.Dependencies, k, k+1)
	return OpResult{Summary: fmt.Sprintf("removed dep %s → %s", op.TaskID, dep)}, nil
}

func (b *batch) addRef(op Op) (OpResult, error) {
	id, err := b.newID(op.ID)
	if err != nil {
		return OpResult{}, err
	}
	name, err := requiredName(op.Name)
	if err != nil {
		return OpResult{}, err
	}
	uri := strings.TrimSpace(op.Vine)
	if uri == "" {
		return OpResult{}, errf(CodeInvalid, "vine (the referenced file) is required")
	}
	n := Node{ID: id, Kind: KindRef, ShortName: name, URI: uri, Decisions: decisionList(op.Decisions)}
	if op.Description != nil {
		n.Description = normalizeNewlines(*op.Description)
	}
	if n.Dependencies, err = depList(op.DependsOn); err != nil {
		return OpResult{}, err
	}
	if len(n.Decisions) == 0 {
		n.Decisions = nil
	}
	if err := b.checkWritable(&n); err != nil {
		return OpResult{}, err
	}
	b.append(n)
	return OpResult{Summary: fmt.Sprintf("added ref %q (%s)", id, uri)}, nil
}

func (b *batch) updateRefURI(op Op) (OpResult, error) {
	i, err := b.lookup(op.ID)
	if err != nil {
		return OpResult{}, err
	}
	if !b.nodes[i].IsRef() {
		return OpResult{}, errf(CodeInvalid, "%q is a task, not a reference", op.ID)
	}
	uri := strings.TrimSpace(op.URI)
	if uri == "" {
		return OpResult{}, errf(CodeInvalid, "uri is required")
	}
	n := b.nodes[i]
	n.URI = uri
	if err := b.checkWritable(&n); err != nil {
		return OpResult{}, err
	}
	b.set(i, n) // only a string field changed: no need to own the lists
	return OpResult{Summary: fmt.Sprintf("updated ref uri of %q → %s", op.ID, uri)}, nil
}

func (b *batch) extractToRef(op Op) (OpResult, error) {
	i, err := b.task(op.ID)
	if err != nil {
		return OpResult{}, err
	}
	uri := strings.TrimSpace(op.Vine)
	if uri == "" {
		return OpResult{}, errf(CodeInvalid, "vine (the file to extract to) is required")
	}
	t := b.nodes[i].Clone()
	name := strings.TrimSpace(op.RefName)
	if name == "" {
		name = t.ShortName
	}
	ref := Node{ID: t.ID, Kind: KindRef, ShortName: name, URI: uri, Dependencies: t.Dependencies, Annotations: cloneAnnotations(t.Annotations)}
	if err := b.checkWritable(&ref); err != nil {
		return OpResult{}, err
	}
	childRoot := t
	childRoot.Dependencies = nil
	child := Graph{Metadata: map[string]string{MetaTitle: t.ShortName}, Nodes: []Node{childRoot}}
	if d := b.delim(); d != DefaultDelimiter {
		child.Metadata[MetaDelimiter] = d
	}
	if err := Validate(child); err != nil {
		return OpResult{}, fmt.Errorf("extracted graph: %w", err)
	}
	b.set(i, ref)
	b.owned[i] = true
	return OpResult{Summary: fmt.Sprintf("extracted %q to ref (%s)", op.ID, uri),
		Extracted: &ExtractedGraph{ID: t.ID, Vine: uri, Graph: child}}, nil
}
