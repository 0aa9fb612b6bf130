package vine

import (
	"maps"
	"strings"
)

// Text is a graph with its canonical text (Serialize) and where each
// node's block lies in it, so that the text of a graph that differs from
// it in a few nodes (a claim, a status change, an update) is made by
// writing those blocks only and copying the rest: on a graph of 50,000
// nodes, a claim costs a comparison of the nodes and one copy of the text
// instead of serializing every node.
//
// A Text is immutable: Update returns a new one.
type Text struct {
	graph Graph
	text  string
	start []int // start[i] is where node i's block begins in text
	end   []int // end[i] is where it ends (its last line's newline included)
}

// NewText serializes g, as Serialize does, keeping the position of each
// block.
func NewText(g Graph) (*Text, error) {
	var b strings.Builder
	b.Grow(64 + 96*len(g.Nodes))
	b.WriteString("vine " + WriteVersion + "\n")
	if err := writeMetadata(&b, g.Metadata); err != nil {
		return nil, err
	}
	b.WriteString("---\n")
	delim := g.Delimiter()
	t := &Text{graph: g, start: make([]int, len(g.Nodes)), end: make([]int, len(g.Nodes))}
	for i := range g.Nodes {
		if i > 0 {
			b.WriteString(delim)
			b.WriteByte('\n')
		}
		t.start[i] = b.Len()
		if err := writeNode(&b, &g.Nodes[i], delim); err != nil {
			return nil, err
		}
		t.end[i] = b.Len()
	}
	t.text = b.String()
	return t, nil
}

// String returns the canonical text.
func (t *Text) String() string { return t.text }

// Graph returns the graph the text is of.
func (t *Text) Graph() Graph { return t.graph }

// Update returns the Text of g, which usually is t's graph after a batch:
// when g has the same metadata and as many nodes, only the blocks of the
// nodes that differ are written again (changed lists their positions);
// otherwise g is serialized whole (changed is nil, whole true). The text
// is always exactly Serialize(g)'s, and the errors are Serialize's.
func (t *Text) Update(g Graph) (next *Text, changed []int, whole bool, err error) {
	if len(g.Nodes) != len(t.graph.Nodes) || !maps.Equal(g.Metadata, t.graph.Metadata) {
		next, err = NewText(g)
		return next, nil, true, err
	}
	for i := range g.Nodes {
		if !g.Nodes[i].Equal(t.graph.Nodes[i]) {
			changed = append(changed, i)
		}
	}
	if len(changed) > len(g.Nodes)/4+1 {
		next, err = NewText(g)
		return next, nil, true, err
	}
	if len(changed) == 0 {
		return &Text{graph: g, text: t.text, start: t.start, end: t.end}, nil, false, nil
	}
	delim := g.Delimiter()
	blocks := make([]string, len(changed))
	grow := 0
	for k, i := range changed {
		var b strings.Builder
		if err := writeNode(&b, &g.Nodes[i], delim); err != nil {
			return nil, nil, false, err
		}
		blocks[k] = b.String()
		grow += len(blocks[k]) - (t.end[i] - t.start[i])
	}
	next = &Text{graph: g, start: make([]int, len(g.Nodes)), end: make([]int, len(g.Nodes))}
	var b strings.Builder
	b.Grow(len(t.text) + grow)
	from, shift := 0, 0
	for k, i := range changed {
		b.WriteString(t.text[from:t.start[i]])
		b.WriteString(blocks[k])
		from = t.end[i]
		// Blocks before i (and after the previous change) move by shift.
		lo := 0
		if k > 0 {
			lo = changed[k-1] + 1
		}
		for j := lo; j < i; j++ {
			next.start[j], next.end[j] = t.start[j]+shift, t.end[j]+shift
		}
		next.start[i] = t.start[i] + shift
		shift += len(blocks[k]) - (t.end[i] - t.start[i])
		next.end[i] = t.end[i] + shift
	}
	b.WriteString(t.text[from:])
	lo := 0
	if len(changed) > 0 {
		lo = changed[len(changed)-1] + 1
	}
	for j := lo; j < len(g.Nodes); j++ {
		next.start[j], next.end[j] = t.start[j]+shift, t.end[j]+shift
	}
	next.text = b.String()
	return next, changed, false, nil
}
