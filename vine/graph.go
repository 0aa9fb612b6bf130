package vine

import (
	"encoding/json"
	"maps"
	"slices"
)

// Status is the lifecycle state of a concrete task.
type Status string

// The six statuses defined by VINE.
const (
	// StatusNotStarted marks a planned task whose work has not begun.
	StatusNotStarted Status = "notstarted"
	// StatusPlanning marks a task whose planning has started.
	StatusPlanning Status = "planning"
	// StatusStarted marks a task that is actively being worked on.
	StatusStarted Status = "started"
	// StatusReviewing marks a task believed done, waiting for a dependant to consume it.
	StatusReviewing Status = "reviewing"
	// StatusComplete marks a finished task.
	StatusComplete Status = "complete"
	// StatusBlocked marks a task that needs intervention.
	StatusBlocked Status = "blocked"
)

// Statuses returns the six VINE statuses in a fixed order
// (notstarted, planning, started, reviewing, complete, blocked).
func Statuses() []Status {
	return []Status{StatusNotStarted, StatusPlanning, StatusStarted, StatusReviewing, StatusComplete, StatusBlocked}
}

// Valid reports whether s is one of the six VINE statuses.
func (s Status) Valid() bool {
	switch s {
	case StatusNotStarted, StatusPlanning, StatusStarted, StatusReviewing, StatusComplete, StatusBlocked:
		return true
	}
	return false
}

// satisfies reports whether a task in status s satisfies a dependency on it.
func (s Status) satisfies() bool { return s == StatusComplete || s == StatusReviewing }

// Kind distinguishes concrete tasks from references to other .vine files.
type Kind string

const (
	// KindTask is a concrete task with a status.
	KindTask Kind = "task"
	// KindRef is a reference (proxy) for another .vine file.
	KindRef Kind = "ref"
)

// AttachmentClass is the class of an attachment line.
type AttachmentClass string

const (
	// ClassArtifact is an output produced by the task (`@artifact`).
	ClassArtifact AttachmentClass = "artifact"
	// ClassGuidance is input guidance for the task (`@guidance`).
	ClassGuidance AttachmentClass = "guidance"
	// ClassFile is any other related file (`@file`).
	ClassFile AttachmentClass = "file"
)

// Valid reports whether c is one of the three attachment classes.
func (c AttachmentClass) Valid() bool { return c.rank() >= 0 }

// rank is the canonical serialization order of a class, or -1 if unknown.
func (c AttachmentClass) rank() int {
	switch c {
	case ClassArtifact:
		return 0
	case ClassGuidance:
		return 1
	case ClassFile:
		return 2
	}
	return -1
}

// Attachment is an `@<class> <mime/type> <uri>` line of a task block.
type Attachment struct {
	// Class is artifact, guidance or file.
	Class AttachmentClass `json:"class"`
	// Mime is the media type, e.g. "text/markdown".
	Mime string `json:"mime"`
	// URI locates the attached resource.
	URI string `json:"uri"`
}

// Well-known metadata keys and the default block delimiter.
const (
	// MetaTitle is the metadata key of the graph title.
	MetaTitle = "title"
	// MetaDelimiter is the metadata key of the block separator.
	MetaDelimiter = "delimiter"
	// MetaPrefix is the metadata key of the ID namespace used on expansion.
	MetaPrefix = "prefix"
	// DefaultDelimiter is the block separator used when none is declared.
	DefaultDelimiter = "---"
	// WriteVersion is the version written on the magic line by Serialize.
	WriteVersion = "1.2.0"
)

// Node is one block of a VINE file: a concrete task or a reference.
//
// Canonical form, kept by Parse and by every mutation: Dependencies are
// sorted and free of duplicates; Attachments are grouped artifact, guidance,
// file, each group in original order. Serialize writes that form.
type Node struct {
	// ID is unique within the graph and matches the id grammar.
	ID string `json:"id"`
	// Kind is KindTask or KindRef.
	Kind Kind `json:"kind"`
	// ShortName is the name written in the header.
	ShortName string `json:"shortName"`
	// Status is the task status; empty for references.
	Status Status `json:"status,omitempty"`
	// URI is the referenced .vine file of a reference; empty for tasks.
	URI string `json:"vine,omitempty"`
	// Description is the block's free text, lines joined with "\n".
	Description string `json:"description"`
	// Dependencies are the ids this node depends on (`-> id` lines).
	Dependencies []string `json:"dependencies"`
	// Decisions are the `> ` lines, in order, without the "> " prefix.
	Decisions []string `json:"decisions"`
	// Attachments are the `@artifact`/`@guidance`/`@file` lines (tasks only).
	Attachments []Attachment `json:"attachments"`
	// Annotations are the header annotations, `@key(v1,v2)` → key: [v1 v2].
	Annotations map[string][]string `json:"annotations,omitempty"`
}

// IsRef reports whether n is a reference node.
func (n Node) IsRef() bool { return n.Kind == KindRef }

// satisfied reports whether n satisfies a dependency on it: a concrete task
// in complete or reviewing. A reference never does.
func (n Node) satisfied() bool { return n.Kind == KindTask && n.Status.satisfies() }

// statusLabel is the status shown for n: its status, or "ref" for references.
func (n Node) statusLabel() string {
	if n.IsRef() {
		return string(KindRef)
	}
	return string(n.Status)
}

// MarshalJSON encodes n with empty lists as [] rather than null.
func (n Node) MarshalJSON() ([]byte, error) {
	type plain Node
	p := plain(n)
	if p.Dependencies == nil {
		p.Dependencies = []string{}
	}
	if p.Decisions == nil {
		p.Decisions = []string{}
	}
	if p.Attachments == nil {
		p.Attachments = []Attachment{}
	}
	return json.Marshal(p)
}

// Clone returns a deep copy of n sharing no memory with it.
func (n Node) Clone() Node {
	c := n
	c.Dependencies = slices.Clone(n.Dependencies)
	c.Decisions = slices.Clone(n.Decisions)
	c.Attachments = slices.Clone(n.Attachments)
	c.Annotations = cloneAnnotations(n.Annotations)
	return c
}

func cloneAnnotations(a map[string][]string) map[string][]string {
	if a == nil {
		return nil
	}
	c := make(map[string][]string, len(a))
	for k, v := range a {
		c[k] = slices.Clone(v)
	}
	return c
}

// Equal reports whether n and m hold the same data. Nil and empty lists or
// maps are considered equal.
func (n Node) Equal(m Node) bool {
	return n.ID == m.ID && n.Kind == m.Kind && n.ShortName == m.ShortName &&
		n.Status == m.Status && n.URI == m.URI && n.Description == m.Description &&
		slices.Equal(n.Dependencies, m.Dependencies) &&
		slices.Equal(n.Decisions, m.Decisions) &&
		slices.Equal(n.Attachments, m.Attachments) &&
		maps.EqualFunc(n.Annotations, m.Annotations, slices.Equal[[]string])
}

// Graph is a parsed VINE file: metadata plus nodes in graph order. The first
// node is the root. A Graph is a plain value that encodes to and from JSON.
//
// Functions of this package never modify a Graph they are given; the graphs
// they return may share unchanged nodes' lists with their inputs (structural
// sharing keeps mutations cheap). Call Clone before editing a Graph in place.
type Graph struct {
	// Metadata holds the preamble's key: value pairs, known and unknown.
	// The default delimiter is never stored.
	Metadata map[string]string `json:"metadata,omitempty"`
	// Nodes are the blocks in graph order; Nodes[0] is the root.
	Nodes []Node `json:"nodes"`
}

// Clone returns a deep copy of g sharing no memory with it.
func (g Graph) Clone() Graph {
	c := Graph{Metadata: maps.Clone(g.Metadata)}
	if g.Nodes != nil {
		c.Nodes = make([]Node, len(g.Nodes))
		for i, n := range g.Nodes {
			c.Nodes[i] = n.Clone()
		}
	}
	return c
}

// Equal reports whether g and h hold the same data. Nil and empty lists or
// maps are equal, and an explicit default delimiter equals an absent one.
func (g Graph) Equal(h Graph) bool {
	if !maps.Equal(g.normalMeta(), h.normalMeta()) || len(g.Nodes) != len(h.Nodes) {
		return false
	}
	for i := range g.Nodes {
		if !g.Nodes[i].Equal(h.Nodes[i]) {
			return false
		}
	}
	return true
}

func (g Graph) normalMeta() map[string]string {
	if d, ok := g.Metadata[MetaDelimiter]; ok && d == DefaultDelimiter {
		m := maps.Clone(g.Metadata)
		delete(m, MetaDelimiter)
		return m
	}
	return g.Metadata
}

// Root returns the root node (the first block) and whether the graph has one.
func (g Graph) Root() (Node, bool) {
	if len(g.Nodes) == 0 {
		return Node{}, false
	}
	return g.Nodes[0], true
}

// Lookup returns the node with the given id. It scans the graph; callers
// doing many lookups should build an index with Index.
func (g Graph) Lookup(id string) (Node, bool) {
	for _, n := range g.Nodes {
		if n.ID == id {
			return n, true
		}
	}
	return Node{}, false
}

// Index maps every id to its position in g.Nodes (the first one on duplicates).
func (g Graph) Index() map[string]int {
	idx := make(map[string]int, len(g.Nodes))
	for i, n := range g.Nodes {
		if _, dup := idx[n.ID]; !dup {
			idx[n.ID] = i
		}
	}
	return idx
}

// Title returns the `title` metadata, or "".
func (g Graph) Title() string { return g.Metadata[MetaTitle] }

// Delimiter returns the block separator: the `delimiter` metadata or "---".
func (g Graph) Delimiter() string {
	if d, ok := g.Metadata[MetaDelimiter]; ok {
		return d
	}
	return DefaultDelimiter
}

// Prefix returns the `prefix` metadata and whether it is present. An empty
// present prefix means ids are used as they are when the graph is inlined.
func (g Graph) Prefix() (string, bool) {
	p, ok := g.Metadata[MetaPrefix]
	return p, ok
}

// isIDChar reports whether c may appear in an id segment.
func isIDChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-'
}

// ValidID reports whether id matches the VINE id grammar
// `[a-zA-Z0-9-]+(/[a-zA-Z0-9-]+)*`.
func ValidID(id string) bool {
	if id == "" {
		return false
	}
	seg := 0
	for i := 0; i < len(id); i++ {
		c := id[i]
		if c == '/' {
			if seg == 0 {
				return false
			}
			seg = 0
			continue
		}
		if !isIDChar(c) {
			return false
		}
		seg++
	}
	return seg > 0
}
