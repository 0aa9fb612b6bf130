package vine

import (
	"fmt"
	"maps"
	"slices"
)

// MergeConflict is a change of theirs that Merge3 could not take: the
// node (empty for the preamble) and why. Ours is kept for it.
type MergeConflict struct {
	// ID is the node's id; empty for a metadata key.
	ID string `json:"id,omitempty"`
	// Field is what conflicted (status, description, a metadata key, ...).
	Field string `json:"field"`
	// Reason says what each side did.
	Reason string `json:"reason"`
}

// String renders the conflict for a report.
func (c MergeConflict) String() string {
	if c.ID == "" {
		return fmt.Sprintf("metadata %s: %s", c.Field, c.Reason)
	}
	return fmt.Sprintf("%s %s: %s", c.ID, c.Field, c.Reason)
}

// Merge3 merges theirs (a hand-edited file) into ours (the recorded
// graph), both descended from base (the text last written to the file).
// For every node and field, a change made on one side only is taken; the
// same change on both sides is taken once; different changes on both sides
// keep ours and are reported. Nodes added by hand are added, nodes removed
// by hand are removed unless ours changed them. A hand edit never moves a
// task that ours has started (or finished) back to notstarted or
// planning: a recorded claim is never reverted; such an edit is reported.
// The result may still be invalid (a dependency on a removed node): the
// caller validates it.
func Merge3(base, theirs, ours Graph) (Graph, []MergeConflict) {
	var conflicts []MergeConflict
	out := Graph{Metadata: map[string]string{}}
	keys := map[string]bool{}
	for _, m := range []map[string]string{base.normalMeta(), theirs.normalMeta(), ours.normalMeta()} {
		for k := range m {
			keys[k] = true
		}
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		b, bok := base.normalMeta()[k]
		t, tok := theirs.normalMeta()[k]
		o, ook := ours.normalMeta()[k]
		v, ok, clash := pick3(opt{b, bok}, opt{t, tok}, opt{o, ook})
		if clash {
			conflicts = append(conflicts, MergeConflict{Field: k, Reason: fmt.Sprintf("changed by hand to %q and in the log to %q", t, o)})
		}
		if ok {
			out.Metadata[k] = v
		}
	}
	if len(out.Metadata) == 0 {
		out.Metadata = nil
	}
	bi, ti := byID(base), byID(theirs)
	oi := byID(ours)
	for _, o := range ours.Nodes {
		b, inBase := bi[o.ID]
		t, inTheirs := ti[o.ID]
		switch {
		case !inTheirs && inBase && o.Equal(b):
			continue // removed by hand
		case !inTheirs && inBase:
			conflicts = append(conflicts, MergeConflict{ID: o.ID, Field: "node", Reason: "removed by hand but changed in the log; kept"})
			out.Nodes = append(out.Nodes, o)
		case !inTheirs:
			out.Nodes = append(out.Nodes, o) // added in the log
		case !inBase:
			if !t.Equal(o) {
				conflicts = append(conflicts, MergeConflict{ID: o.ID, Field: "node", Reason: "added by hand and in the log with different content; the log's kept"})
			}
			out.Nodes = append(out.Nodes, o)
		default:
			n, cs := mergeNode(b, t, o)
			conflicts = append(conflicts, cs...)
			out.Nodes = append(out.Nodes, n)
		}
	}
	// Nodes of theirs that ours lacks: added by hand (inserted after the
	// node they follow in theirs), or removed in the log.
	for i, t := range theirs.Nodes {
		if _, ok := oi[t.ID]; ok {
			continue
		}
		if b, inBase := bi[t.ID]; inBase {
			if !t.Equal(b) {
				conflicts = append(conflicts, MergeConflict{ID: t.ID, Field: "node", Reason: "changed by hand but removed in the log; stays removed"})
			}
			continue
		}
		at := len(out.Nodes)
		if i > 0 {
			prev := theirs.Nodes[i-1].ID
			if j := slices.IndexFunc(out.Nodes, func(n Node) bool { return n.ID == prev }); j >= 0 {
				at = j + 1
			}
		} else {
			at = 0
		}
		out.Nodes = slices.Insert(out.Nodes, at, t.Clone())
	}
	return out, conflicts
}

func byID(g Graph) map[string]Node {
	m := make(map[string]Node, len(g.Nodes))
	for _, n := range g.Nodes {
		m[n.ID] = n
	}
	return m
}

type opt struct {
	v  string
	ok bool
}

// pick3 merges one optional value: the side that changed it wins; both
// changed differently is a clash (ours kept).
func pick3(b, t, o opt) (string, bool, bool) {
	switch {
	case t == b:
		return o.v, o.ok, false
	case o == b, t == o:
		return t.v, t.ok, false
	}
	return o.v, o.ok, true
}

// field3 merges one field of a node with eq as equality.
func field3[T any](b, t, o T, eq func(T, T) bool) (T, bool) {
	switch {
	case eq(t, b):
		return o, false
	case eq(o, b), eq(t, o):
		return t, false
	}
	return o, true
}

// started reports a status a claim (or later work) has reached.
func started(s Status) bool {
	return s == StatusStarted || s == StatusReviewing || s == StatusComplete
}

func mergeNode(b, t, o Node) (Node, []MergeConflict) {
	var cs []MergeConflict
	n := o.Clone()
	clash := func(field string, bad bool) {
		if bad {
			cs = append(cs, MergeConflict{ID: o.ID, Field: field, Reason: "changed by hand and in the log; the log's kept"})
		}
	}
	var bad bool
	eqs := func(a, b string) bool { return a == b }
	n.ShortName, bad = field3(b.ShortName, t.ShortName, o.ShortName, eqs)
	clash("name", bad)
	n.Description, bad = field3(b.Description, t.Description, o.Description, eqs)
	clash("description", bad)
	n.URI, bad = field3(b.URI, t.URI, o.URI, eqs)
	clash("vine", bad)
	n.Kind, bad = field3(b.Kind, t.Kind, o.Kind, func(x, y Kind) bool { return x == y })
	clash("kind", bad)
	n.Dependencies, bad = field3(b.Dependencies, t.Dependencies, o.Dependencies, slices.Equal[[]string])
	clash("dependencies", bad)
	n.Decisions, bad = field3(b.Decisions, t.Decisions, o.Decisions, slices.Equal[[]string])
	clash("decisions", bad)
	n.Attachments, bad = field3(b.Attachments, t.Attachments, o.Attachments, slices.Equal[[]Attachment])
	clash("attachments", bad)
	n.Annotations, bad = field3(b.Annotations, t.Annotations, o.Annotations, func(x, y map[string][]string) bool {
		return maps.EqualFunc(x, y, slices.Equal[[]string])
	})
	clash("annotations", bad)
	n.Status, bad = field3(b.Status, t.Status, o.Status, func(x, y Status) bool { return x == y })
	clash("status", bad)
	if !bad && n.Status != o.Status && started(o.Status) && !started(n.Status) && n.Status != StatusBlocked {
		// A stale or reverted file must not undo a recorded claim.
		cs = append(cs, MergeConflict{ID: o.ID, Field: "status", Reason: fmt.Sprintf(
			"set to %s by hand, but the log has it %s (claimed); a hand edit never reverts a claim, kept %s", t.Status, o.Status, o.Status)})
		n.Status = o.Status
	}
	return n, cs
}
