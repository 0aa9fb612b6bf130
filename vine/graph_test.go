package vine

import (
	"errors"
	"fmt"
	"testing"
)

func TestGraphCloneEqual(t *testing.T) {
	t.Parallel()
	g := mustValid(t, readFile(t, "testdata/inputs/repo-examples-06-project-bacchus.vine"))
	g.Nodes[0].Annotations = map[string][]string{"sprite": {"./r.svg"}}
	c := g.Clone()
	if !c.Equal(g) {
		t.Fatal("clone differs")
	}
	c.Nodes[0].Dependencies[0] = "changed"
	c.Nodes[0].Annotations["sprite"][0] = "changed"
	c.Nodes[4].Attachments[0].URI = "changed"
	c.Metadata["title"] = "changed"
	if g.Nodes[0].Dependencies[0] == "changed" || g.Nodes[0].Annotations["sprite"][0] == "changed" ||
		g.Nodes[4].Attachments[0].URI == "changed" || g.Title() == "changed" {
		t.Error("clone shares memory with the original")
	}
	if c.Equal(g) {
		t.Error("Equal missed a difference")
	}

	a := Graph{Nodes: []Node{{ID: "a", Kind: KindTask, ShortName: "A", Status: StatusStarted}}}
	b := Graph{Metadata: map[string]string{"delimiter": "---"}, Nodes: []Node{{ID: "a", Kind: KindTask, ShortName: "A", Status: StatusStarted,
		Dependencies: []string{}, Decisions: []string{}, Attachments: []Attachment{}, Annotations: map[string][]string{}}}}
	if !a.Equal(b) || !b.Equal(a) {
		t.Error("nil/empty lists or an explicit default delimiter should compare equal")
	}
	b.Metadata["delimiter"] = "==="
	if a.Equal(b) {
		t.Error("a custom delimiter must differ")
	}
	if (Graph{}).Clone().Nodes != nil {
		t.Error("clone of an empty graph grew nodes")
	}
}

func TestGraphAccessors(t *testing.T) {
	t.Parallel()
	g := mustValid(t, readFile(t, "testdata/inputs/repo-examples-07-design-system.vine"))
	if r, ok := g.Root(); !ok || r.ID != "review" {
		t.Errorf("root %v", r.ID)
	}
	if p, ok := g.Prefix(); !ok || p != "ds" || g.Title() != "Design System" || g.Delimiter() != "---" {
		t.Errorf("metadata %v", g.Metadata)
	}
	if n, ok := g.Lookup("tokens"); !ok || n.Status != StatusPlanning {
		t.Errorf("lookup %v", n)
	}
	if _, ok := g.Lookup("nope"); ok {
		t.Error("lookup found nope")
	}
	if idx := g.Index(); idx["docs"] != 1 || len(idx) != 4 {
		t.Errorf("index %v", idx)
	}
	if _, ok := (Graph{}).Root(); ok {
		t.Error("empty graph has a root")
	}
	for _, c := range []struct {
		id string
		ok bool
	}{{"a", true}, {"a-b/C-9", true}, {"", false}, {"/a", false}, {"a/", false}, {"a//b", false}, {"a b", false}, {"a_b", false}, {"é", false}} {
		if ValidID(c.id) != c.ok {
			t.Errorf("ValidID(%q) = %v", c.id, !c.ok)
		}
	}
}

func TestErrorCode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		want Code
	}{
		{nil, ""},
		{errors.New("boom"), CodeInternal},
		{&ParseError{Line: 1, What: "x", Detail: "y"}, CodeInvalid},
		{fmt.Errorf("wrapped: %w", &ValidationError{Constraint: ConstraintCycle}), CodeInvalid},
		{&OpError{Index: 2, Op: OpClaim, Err: &Error{Code: CodeConflict, Msg: "taken"}}, CodeConflict},
		{fmt.Errorf("x: %w", &Error{Code: CodeNotFound, Msg: "gone"}), CodeNotFound},
	}
	for _, tt := range tests {
		if got := ErrorCode(tt.err); got != tt.want {
			t.Errorf("ErrorCode(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
	e := &OpError{Index: 2, Op: OpClaim, Err: &Error{Code: CodeConflict, Msg: "taken"}}
	if e.Error() != "op 2 (claim): taken" {
		t.Errorf("message %q", e.Error())
	}
}
