package vine

import (
	"os"
	"path"
	"path/filepath"
	"reflect"
	"testing"
)

// TestExpandFixtures expands the reference of every testdata/expand case and
// compares the canonical serialization with expected.vine byte for byte. The
// reference expanded is the one whose uri names the child file in the case
// directory. All four expected files agree with VINE.md "Expansion"; none
// needed a deviation. Notably repo-ref-advanced-frontend confirms that R's
// own description is replaced by the child root's even when that is empty,
// and repo-mcp-ref-parent that without `prefix` metadata the reference id is
// the prefix.
func TestExpandFixtures(t *testing.T) {
	t.Parallel()
	dirs, err := filepath.Glob("testdata/expand/*")
	if err != nil || len(dirs) != 4 {
		t.Fatalf("expand cases: %v %v", dirs, err)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			t.Parallel()
			parent := mustValid(t, readFile(t, filepath.Join(dir, "parent.vine")))
			var refID, childFile string
			for _, r := range Refs(parent) {
				f := filepath.Join(dir, path.Base(r.URI))
				if _, err := os.Stat(f); err == nil {
					refID, childFile = r.ID, f
				}
			}
			if refID == "" {
				t.Fatal("no reference with a child file")
			}
			child := mustValid(t, readFile(t, childFile))
			parentBefore, childBefore := parent.Clone(), child.Clone()
			got, err := Expand(parent, refID, child)
			if err != nil {
				t.Fatal(err)
			}
			if !parent.Equal(parentBefore) || !child.Equal(childBefore) {
				t.Error("Expand modified its inputs")
			}
			text, err := Serialize(got)
			if err != nil {
				t.Fatal(err)
			}
			if want := readFile(t, filepath.Join(dir, "expected.vine")); text != want {
				t.Errorf("got\n%s\nwant\n%s", text, want)
			}
		})
	}
}

func TestExpandRules(t *testing.T) {
	t.Parallel()
	parent := vineText(
		"[root] Root (notstarted) @sprite(./root.svg)\n-> r",
		"ref [r] Ref name (./c.vine) @sprite(./r.svg)\nRef description.\n-> z\n> parent decision",
		"[z] Z (complete)",
	)
	tests := []struct {
		name    string
		child   string
		wantIDs []string
		check   func(t *testing.T, g Graph)
	}{
		{
			name:    "default prefix is the reference id; R takes the child root",
			child:   "vine 1.2.0\n---\n[top] Child Top (planning) @sprite(./child.svg)\nChild description.\n-> x\n-> z\n> child decision\n@guidance text/markdown ./g.md\n---\n[x] X (notstarted)\n-> y\n---\n[y] Y (complete)\n---\n[z] Child Z (complete)\n",
			wantIDs: []string{"root", "r", "r/x", "r/y", "r/z", "z"},
			check: func(t *testing.T, g Graph) {
				want := Node{ID: "r", Kind: KindTask, ShortName: "Child Top", Status: StatusPlanning, Description: "Child description.",
					Dependencies: []string{"r/x", "r/z", "z"}, Decisions: []string{"child decision", "parent decision"},
					Attachments: []Attachment{{ClassGuidance, "text/markdown", "./g.md"}},
					Annotations: map[string][]string{"sprite": {"./r.svg"}}}
				if !g.Nodes[1].Equal(want) {
					t.Errorf("got  %+v\nwant %+v", g.Nodes[1], want)
				}
				if x := g.Nodes[2]; !reflect.DeepEqual(x.Dependencies, []string{"r/y"}) {
					t.Errorf("r/x deps %v", x.Dependencies)
				}
			},
		},
		{
			name:    "prefix metadata; nested ids",
			child:   "vine 1.2.0\nprefix: lib/v2\n---\n[top] Top (notstarted)\n-> a/b\n---\n[a/b] AB (notstarted)\n",
			wantIDs: []string{"root", "r", "lib/v2/a/b", "z"},
		},
		{
			name:    "empty prefix keeps ids; shared dependencies de-duplicated",
			child:   "vine 1.2.0\nprefix:\n---\n[top] Top (notstarted)\n-> q\n---\n[q] Q (notstarted)\n",
			wantIDs: []string{"root", "r", "q", "z"},
			check: func(t *testing.T, g Graph) {
				if got := g.Nodes[1].Dependencies; !reflect.DeepEqual(got, []string{"q", "z"}) {
					t.Errorf("deps %v", got)
				}
			},
		},
		{
			name:    "single-node child",
			child:   "vine 1.0.0\n---\n[only] Only (complete)\n",
			wantIDs: []string{"root", "r", "z"},
			check: func(t *testing.T, g Graph) {
				if n := g.Nodes[1]; n.Status != StatusComplete || n.Description != "" || !reflect.DeepEqual(n.Dependencies, []string{"z"}) {
					t.Errorf("r = %+v", n)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g, err := Expand(mustValid(t, parent), "r", mustValid(t, tt.child))
			if err != nil {
				t.Fatal(err)
			}
			if got := nodeIDs(g.Nodes); !reflect.DeepEqual(got, tt.wantIDs) {
				t.Errorf("ids %v, want %v", got, tt.wantIDs)
			}
			if tt.check != nil {
				tt.check(t, g)
			}
		})
	}
}

func TestExpandErrors(t *testing.T) {
	t.Parallel()
	parent := vineText("[root] Root (notstarted)\n-> r\n-> r/x", "ref [r] R (./c.vine)", "[r/x] Existing (complete)")
	child := "vine 1.2.0\n---\n[top] Top (notstarted)\n-> x\n---\n[x] X (notstarted)\n"
	tests := []struct {
		name   string
		parent string
		refID  string
		child  string
		code   Code
		msg    string
	}{
		{"collision", parent, "r", child, CodeInvalid, `duplicate id: expanding "r": child id "r/x" collides`},
		{"collision with R itself under an empty prefix", vineText("[root] Root (notstarted)\n-> r", "ref [r] R (./c.vine)"), "r",
			"vine 1.2.0\nprefix:\n---\n[top] Top (notstarted)\n-> r\n---\n[r] X (notstarted)\n", CodeInvalid, `child id "r" collides`},
		{"unknown reference", parent, "nope", child, CodeNotFound, `no node with id "nope"`},
		{"not a reference", parent, "root", child, CodeInvalid, `cannot expand "root": it is a task`},
		{"invalid child", vineText("[root] Root (notstarted)\n-> r", "ref [r] R (./c.vine)"), "r",
			"vine 1.2.0\n---\n[top] Top (notstarted)\n-> top\n", CodeInvalid, "invalid child graph: cycle: top -> top"},
		{"child root is a reference", vineText("[root] Root (notstarted)\n-> r", "ref [r] R (./c.vine)"), "r",
			"vine 1.2.0\n---\nref [top] Top (./deeper.vine)\n", CodeInvalid, "is itself a reference"},
		{"prefix makes bad ids", vineText("[root] Root (notstarted)\n-> r", "ref [r] R (./c.vine)"), "r",
			"vine 1.2.0\nprefix: bad prefix\n---\n[top] Top (notstarted)\n-> x\n---\n[x] X (notstarted)\n", CodeInvalid, `prefix "bad prefix"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Expand(mustValid(t, tt.parent), tt.refID, mustParse(t, tt.child))
			wantErr(t, err, tt.code, tt.msg)
		})
	}
}
