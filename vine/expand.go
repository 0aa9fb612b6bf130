package vine

import (
	"fmt"
	"maps"
	"slices"
)

// Expand inlines child, the graph a reference node points to, in place of the
// reference refID of parent, and returns the validated result:
//
//   - prefix is child's `prefix` metadata when present, else refID; an empty
//     prefix means ids are used as they are;
//   - the child root takes the id refID; every other child id becomes
//     prefix/id, and child dependency targets are remapped the same way;
//     an id that collides with an existing parent id is an error
//     ("duplicate id");
//   - the reference becomes concrete: it takes the child root's short name,
//     status, description and attachments; its dependencies are its own plus
//     the child root's (remapped, de-duplicated); its decisions are the child
//     root's followed by its own; its annotations are kept;
//   - the other child nodes are inserted right after it in graph order,
//     keeping their relative order.
//
// The child must itself be valid and its root a concrete task. Uris of
// references and attachments inside the child are copied verbatim. Parent
// metadata is kept; child metadata is dropped. Neither input is modified.
func Expand(parent Graph, refID string, child Graph) (Graph, error) {
	idx := parent.Index()
	ri, ok := idx[refID]
	if !ok {
		return Graph{}, notFound(refID)
	}
	ref := parent.Nodes[ri]
	if !ref.IsRef() {
		return Graph{}, errf(CodeInvalid, "cannot expand %q: it is a task, not a reference", refID)
	}
	if err := Validate(child); err != nil {
		return Graph{}, &Error{Code: CodeInvalid, Msg: fmt.Sprintf("cannot expand %q: invalid child graph", refID), Err: err}
	}
	croot := child.Nodes[0]
	if croot.IsRef() {
		return Graph{}, errf(CodeInvalid, "cannot expand %q: the child root %q is itself a reference", refID, croot.ID)
	}
	prefix, has := child.Prefix()
	if !has {
		prefix = refID
	}
	remap := make(map[string]string, len(child.Nodes))
	remap[croot.ID] = refID
	var collisions []string
	for _, n := range child.Nodes[1:] {
		id := n.ID
		if prefix != "" {
			id = prefix + "/" + n.ID
		}
		if !ValidID(id) {
			return Graph{}, errf(CodeInvalid, "cannot expand %q: prefix %q makes child id %q invalid (%q)", refID, prefix, n.ID, id)
		}
		if _, clash := idx[id]; clash {
			collisions = append(collisions, id)
		}
		remap[n.ID] = id
	}
	if len(collisions) > 0 {
		return Graph{}, &ValidationError{Constraint: ConstraintDuplicateID, IDs: collisions,
			Detail: fmt.Sprintf("expanding %q: child id %s collides with an existing node", refID, quoteList(collisions))}
	}
	remapDeps := func(deps []string) []string {
		out := make([]string, len(deps))
		for i, d := range deps {
			out[i] = remap[d]
		}
		return out
	}

	r := Node{
		ID:           refID,
		Kind:         KindTask,
		ShortName:    croot.ShortName,
		Status:       croot.Status,
		Description:  croot.Description,
		Dependencies: append(slices.Clone(ref.Dependencies), remapDeps(croot.Dependencies)...),
		Decisions:    append(slices.Clone(croot.Decisions), ref.Decisions...),
		Attachments:  slices.Clone(croot.Attachments),
		Annotations:  cloneAnnotations(ref.Annotations),
	}
	if len(r.Decisions) == 0 {
		r.Decisions = nil
	}
	if len(r.Dependencies) == 0 {
		r.Dependencies = nil
	}
	canonicalize(&r)

	nodes := make([]Node, 0, len(parent.Nodes)+len(child.Nodes)-1)
	nodes = append(nodes, parent.Nodes[:ri]...)
	nodes = append(nodes, r)
	for _, n := range child.Nodes[1:] {
		c := n.Clone()
		c.ID = remap[n.ID]
		if len(c.Dependencies) > 0 {
			c.Dependencies = remapDeps(c.Dependencies)
			canonicalize(&c)
		}
		nodes = append(nodes, c)
	}
	nodes = append(nodes, parent.Nodes[ri+1:]...)
	out := Graph{Metadata: maps.Clone(parent.Metadata), Nodes: nodes}
	if err := Validate(out); err != nil {
		return Graph{}, fmt.Errorf("expanding %q: %w", refID, err)
	}
	return out, nil
}
