package vine

import (
	"reflect"
	"testing"
)

func TestValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		g          Graph
		constraint string
		ids        []string
		msg        string
	}{
		{
			name:       "at least one block",
			g:          mustParse(t, "vine 1.0.0\n---\n"),
			constraint: ConstraintNoBlocks,
			msg:        "at least one block: the graph has no blocks",
		},
		{
			name:       "duplicate id across tasks and refs",
			g:          mustParse(t, vineText("[a] A (started)\n-> b", "[b] B (complete)", "ref [b] B again (./b.vine)", "[a] A2 (complete)")),
			constraint: ConstraintDuplicateID,
			ids:        []string{"b", "a"},
			msg:        `duplicate id: id "b", "a" is used by more than one node`,
		},
		{
			name:       "unknown dependency",
			g:          mustParse(t, vineText("[a] A (started)\n-> b\n-> zzz", "[b] B (complete)\n-> yyy")),
			constraint: ConstraintUnknownDependency,
			ids:        []string{"a", "zzz", "b", "yyy"},
			msg:        `unknown dependency: "a" -> "zzz", "b" -> "yyy": no node has that id`,
		},
		{
			name:       "cycle with path",
			g:          mustParse(t, vineText("[root] R (started)\n-> a", "[a] A (started)\n-> b", "[b] B (started)\n-> c", "[c] C (started)\n-> a")),
			constraint: ConstraintCycle,
			ids:        []string{"a", "b", "c", "a"},
			msg:        "cycle: a -> b -> c -> a",
		},
		{
			name:       "self cycle",
			g:          mustParse(t, vineText("[a] A (started)\n-> a")),
			constraint: ConstraintCycle,
			ids:        []string{"a", "a"},
			msg:        "cycle: a -> a",
		},
		{
			name:       "cycle through the root",
			g:          mustParse(t, readFile(t, "testdata/inputs/repo-examples-10-sprites.vine")),
			constraint: ConstraintCycle,
			ids:        []string{"root", "backend", "root"},
			msg:        "cycle: root -> backend -> root",
		},
		{
			name:       "islands named",
			g:          mustParse(t, vineText("[a] A (started)\n-> b", "[b] B (complete)", "[x] X (complete)\n-> y", "[y] Y (complete)")),
			constraint: ConstraintIsland,
			ids:        []string{"x", "y"},
			msg:        `island: "x", "y" not reachable from the root "a" along dependency edges`,
		},
		{
			name: "attachment on reference",
			g: Graph{Nodes: []Node{
				{ID: "a", Kind: KindTask, ShortName: "A", Status: StatusStarted, Dependencies: []string{"r"}},
				{ID: "r", Kind: KindRef, ShortName: "R", URI: "./r.vine", Attachments: []Attachment{{ClassFile, "text/plain", "x"}}},
			}},
			constraint: ConstraintAttachmentOnRef,
			ids:        []string{"r"},
			msg:        `attachment on reference: reference "r" carries attachments`,
		},
		{
			name:       "invalid node: id",
			g:          Graph{Nodes: []Node{{ID: "a b", Kind: KindTask, ShortName: "A", Status: StatusStarted}}},
			constraint: ConstraintInvalidNode,
			ids:        []string{"a b"},
			msg:        "invalid node: node 0: id \"a b\" is outside the id grammar",
		},
		{
			name:       "invalid node: status",
			g:          Graph{Nodes: []Node{{ID: "a", Kind: KindTask, ShortName: "A", Status: "done"}}},
			constraint: ConstraintInvalidNode,
			ids:        []string{"a"},
			msg:        `unknown status "done"`,
		},
		{
			name:       "invalid node: empty name",
			g:          Graph{Nodes: []Node{{ID: "a", Kind: KindTask, ShortName: "", Status: StatusStarted}}},
			constraint: ConstraintInvalidNode,
			ids:        []string{"a"},
			msg:        "empty name",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := Validate(tt.g)
			wantErr(t, err, CodeInvalid, tt.msg, tt.constraint)
			ve := asValidation(t, err)
			if ve.Constraint != tt.constraint {
				t.Errorf("constraint = %q, want %q", ve.Constraint, tt.constraint)
			}
			if tt.ids != nil && !reflect.DeepEqual(ve.IDs, tt.ids) {
				t.Errorf("ids = %q, want %q", ve.IDs, tt.ids)
			}
		})
	}
}

func TestValidateValidFixtures(t *testing.T) {
	t.Parallel()
	for path, text := range allValidFixtureTexts(t) {
		if err := Validate(mustParse(t, text)); err != nil {
			t.Errorf("%s: %v", path, err)
		}
	}
}

// TestValidateDeepChain: the iterative cycle search handles long chains.
func TestValidateDeepChain(t *testing.T) {
	t.Parallel()
	g := genGraph(200000, 1)
	if err := Validate(g); err != nil {
		t.Fatal(err)
	}
	g.Nodes[len(g.Nodes)-1].Dependencies = []string{g.Nodes[0].ID}
	ve := asValidation(t, Validate(g))
	if ve.Constraint != ConstraintCycle || ve.IDs[0] != ve.IDs[len(ve.IDs)-1] {
		t.Errorf("got %v", ve.Constraint)
	}
}
