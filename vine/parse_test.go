package vine

import (
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseVersions(t *testing.T) {
	t.Parallel()
	body := "---\n[a] A (complete)\n"
	tests := []struct {
		magic string
		err   string
	}{
		{"vine 1.0.0", ""},
		{"vine 1.1.0", ""},
		{"vine 1.2.0", ""},
		{"vine 1.2.0  ", ""},
		{"vine 2.0.0", "unsupported version at line 1: VINE 2.0.0 is not supported (supported: 1.0.0, 1.1.0, 1.2.0)"},
		{"vine 1.3.0", "unsupported version at line 1"},
		{"vine 0.9.0", "unsupported version at line 1"},
		{"vine 1.0", "invalid magic line at line 1"},
		{"VINE 1.0.0", "invalid magic line at line 1"},
		{"[a] A (complete)", "invalid magic line at line 1"},
	}
	for _, tt := range tests {
		t.Run(tt.magic, func(t *testing.T) {
			t.Parallel()
			_, err := Parse(tt.magic + "\n" + body)
			if tt.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantErr(t, err, CodeInvalid, tt.err)
		})
	}
	_, err := Parse("")
	wantErr(t, err, CodeInvalid, "invalid magic line at line 1: empty input")
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		text string
		line int
		want string
	}{
		{"missing terminator", "vine 1.0.0\ntitle: x\n", 2, "missing metadata terminator"},
		{"bad metadata line", "vine 1.0.0\ntitle x\n---\n[a] A (complete)\n", 2, "invalid metadata at line 2"},
		{"bad metadata key", "vine 1.0.0\nmy key: x\n---\n[a] A (complete)\n", 2, "invalid metadata at line 2"},
		{"duplicate metadata key", "vine 1.0.0\ntitle: x\ntitle: y\n---\n[a] A (complete)\n", 3, `duplicate key "title"`},
		{"empty delimiter", "vine 1.0.0\ndelimiter:\n---\n[a] A (complete)\n", 2, "delimiter must not be empty"},
		{"header at line 7", "vine 1.0.0\n---\n[a] A (complete)\n-> b\n---\n\n[b] B complete\n", 7, "invalid header at line 7"},
		{"unknown status", "vine 1.0.0\n---\n[a] A (done)\n", 3, `unknown status "done"`},
		{"bad id", "vine 1.0.0\n---\n[a b] A (complete)\n", 3, `id "a b" does not match`},
		{"missing bracket (fixture)", "vine 1.0.0\n---\n[bad-header Malformed Task (complete)\n", 3, "missing ']'"},
		{"bad ref header", "vine 1.0.0\n---\nref [r] R\n", 3, "invalid header at line 3"},
		{"empty middle block", "vine 1.0.0\n---\n[a] A (complete)\n---\n\n---\n[b] B (complete)\n", 5, "empty block at line 5"},
		{"attachment on reference", "vine 1.0.0\n---\n[a] A (complete)\n-> r\n---\nref [r] R (./r.vine)\n@artifact text/plain ./x\n", 7, "attachment on reference at line 7"},
		{"attachment without uri", "vine 1.0.0\n---\n[a] A (complete)\n@file text/plain\n", 4, "invalid attachment at line 4"},
		{"dependency not an id", "vine 1.0.0\n---\n[a] A (complete)\n-> not an id\n", 4, "invalid dependency at line 4"},
		{"empty dependency", "vine 1.0.0\n---\n[a] A (complete)\n->  \n", 4, "invalid dependency at line 4"},
		{"duplicate annotation", "vine 1.2.0\n---\n[a] A (complete) @x(1) @x(2)\n", 3, "duplicate annotation @x"},
		{"crlf line numbers", "vine 1.0.0\r\n---\r\n[a] A (complete)\r\n[oops\r\n---\r\nnope\r\n", 6, "invalid header at line 6"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse(tt.text)
			wantErr(t, err, CodeInvalid, tt.want)
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("%T is not *ParseError", err)
			}
			if pe.Line != tt.line {
				t.Errorf("line = %d, want %d", pe.Line, tt.line)
			}
		})
	}
}

func TestParseInvalidSyntaxFixture(t *testing.T) {
	t.Parallel()
	_, err := Parse(readFile(t, "testdata/inputs/repo-e2e-invalid-syntax.vine"))
	wantErr(t, err, CodeInvalid, "invalid header at line 3")
}

func TestParseBlocks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		text string
		want Graph
	}{
		{
			name: "trailing delimiter and empty trailing segments dropped",
			text: "vine 1.0.0\n---\n[a] A (complete)\n---\n\n---\n  \n",
			want: Graph{Nodes: []Node{{ID: "a", Kind: KindTask, ShortName: "A", Status: StatusComplete}}},
		},
		{
			name: "blank lines inside a block are description lines",
			text: "vine 1.0.0\n---\n\n[a] A (complete)\n\nfirst\n\nsecond\n-> b\n> why\n\n---\n[b] B (notstarted)\n",
			want: Graph{Nodes: []Node{
				{ID: "a", Kind: KindTask, ShortName: "A", Status: StatusComplete, Description: "\nfirst\n\nsecond\n", Dependencies: []string{"b"}, Decisions: []string{"why"}},
				{ID: "b", Kind: KindTask, ShortName: "B", Status: StatusNotStarted},
			}},
		},
		{
			name: "body line prefixes; first match wins; unknown @class is text",
			text: "vine 1.2.0\n---\n[a] A (started)\n->b\n>c\n-> b\n> > quoted\n@note x y\n@artifact text/plain ./out.txt\n@file application/pdf a file.pdf\n@guidance text/markdown ./g.md\n@artifact image/png ./img.png\n-> c\n---\n[b] B (complete)\n---\n[c] C (complete)\n",
			want: Graph{Nodes: []Node{
				{ID: "a", Kind: KindTask, ShortName: "A", Status: StatusStarted,
					Description:  "->b\n>c\n@note x y",
					Dependencies: []string{"b", "c"},
					Decisions:    []string{"> quoted"},
					Attachments: []Attachment{
						{ClassArtifact, "text/plain", "./out.txt"},
						{ClassArtifact, "image/png", "./img.png"},
						{ClassGuidance, "text/markdown", "./g.md"},
						{ClassFile, "application/pdf", "a file.pdf"},
					}},
				{ID: "b", Kind: KindTask, ShortName: "B", Status: StatusComplete},
				{ID: "c", Kind: KindTask, ShortName: "C", Status: StatusComplete},
			}},
		},
		{
			name: "dependencies trimmed, sorted and de-duplicated",
			text: "vine 1.0.0\n---\n[a] A (complete)\n-> c  \n-> b\n-> c\n---\n[b] B (complete)\n---\n[c] C (complete)\n",
			want: Graph{Nodes: []Node{
				{ID: "a", Kind: KindTask, ShortName: "A", Status: StatusComplete, Dependencies: []string{"b", "c"}},
				{ID: "b", Kind: KindTask, ShortName: "B", Status: StatusComplete},
				{ID: "c", Kind: KindTask, ShortName: "C", Status: StatusComplete},
			}},
		},
		{
			name: "metadata: known, unknown, blank lines, default delimiter not stored",
			text: "vine 1.1.0\ntitle:  My Plan \n\nOwner : team-a\ndelimiter: ---\nprefix:\n---\n[a] A (complete)\n",
			want: Graph{Metadata: map[string]string{"title": "My Plan", "Owner": "team-a", "prefix": ""},
				Nodes: []Node{{ID: "a", Kind: KindTask, ShortName: "A", Status: StatusComplete}}},
		},
		{
			name: "custom delimiter; --- is then description text",
			text: "vine 1.2.0\ndelimiter: ===\n---\n[a] A (complete)\n---\n-> b\n===\n[b] B (complete)\n===\n",
			want: Graph{Metadata: map[string]string{"delimiter": "==="}, Nodes: []Node{
				{ID: "a", Kind: KindTask, ShortName: "A", Status: StatusComplete, Description: "---", Dependencies: []string{"b"}},
				{ID: "b", Kind: KindTask, ShortName: "B", Status: StatusComplete},
			}},
		},
		{
			name: "reference header with annotations; unknown @class in a reference is text",
			text: "vine 1.2.0\n---\nref [r/x-1] Big Thing (./sub/x.vine) @sprite(./s.svg) @tags( a , b,, )\n@todo later\n> why\n",
			want: Graph{Nodes: []Node{{ID: "r/x-1", Kind: KindRef, ShortName: "Big Thing", URI: "./sub/x.vine",
				Description: "@todo later", Decisions: []string{"why"},
				Annotations: map[string][]string{"sprite": {"./s.svg"}, "tags": {"a", "b", "", ""}}}}},
		},
		{
			name: "task header: lazy name, empty annotation, surrounding whitespace",
			text: "vine 1.2.0\n---\n  [a] Fix (complete) bug  (started)  @flag() \t\n",
			want: Graph{Nodes: []Node{{ID: "a", Kind: KindTask, ShortName: "Fix (complete) bug", Status: StatusStarted,
				Annotations: map[string][]string{"flag": {""}}}}},
		},
		{
			name: "CRLF, BOM, no final newline",
			text: "\uFEFFvine 1.0.0\r\ntitle: T\r\n---\r\n[a] A (complete)\r\nline\r\n\r\n> d\r\n---\r\n",
			want: Graph{Metadata: map[string]string{"title": "T"}, Nodes: []Node{{ID: "a", Kind: KindTask, ShortName: "A", Status: StatusComplete, Description: "line\n", Decisions: []string{"d"}}}},
		},
		{
			name: "no blocks parses (Validate rejects it)",
			text: "vine 1.0.0\n---\n",
			want: Graph{Nodes: []Node{}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := mustParse(t, tt.text)
			if !g.Equal(tt.want) {
				t.Errorf("got  %#v\nwant %#v", g, tt.want)
			}
		})
	}
}

// TestParseCRLFFixtures: every fixture reads the same with CRLF line endings.
func TestParseCRLFFixtures(t *testing.T) {
	t.Parallel()
	for path, text := range allValidFixtureTexts(t) {
		lf := mustParse(t, text)
		crlf := mustParse(t, strings.ReplaceAll(text, "\n", "\r\n"))
		if !lf.Equal(crlf) {
			t.Errorf("%s: CRLF parse differs", path)
		}
	}
}

func TestParseFixtures(t *testing.T) {
	t.Parallel()
	for _, f := range fixtureInputs(t) {
		want, bad := invalidFixtures[filepath.Base(f)]
		g, err := Parse(readFile(t, f))
		if err == nil {
			err = Validate(g)
		}
		switch {
		case bad:
			wantErr(t, err, CodeInvalid, want)
		case err != nil:
			t.Errorf("%s: %v", f, err)
		}
	}
	g := mustParse(t, readFile(t, "testdata/inputs/repo-examples-06-project-bacchus.vine"))
	ui, _ := g.Lookup("ui-render")
	want := []Attachment{{ClassArtifact, "text/html", "https://example.com/ui-demo/index.html"}, {ClassGuidance, "text/markdown", "https://example.com/ui-style-guide.md"}}
	if !reflect.DeepEqual(ui.Attachments, want) || ui.Description != "Draw nodes, edges, and status colors on a canvas." {
		t.Errorf("ui-render = %#v", ui)
	}
	if len(g.Nodes) != 13 || g.Nodes[0].ID != "root" || len(g.Nodes[0].Dependencies) != 12 || g.Title() != "Project Bacchus" {
		t.Errorf("unexpected graph: %d nodes, root %q", len(g.Nodes), g.Nodes[0].ID)
	}
}

// TestParseAdversarialLinear: header matching stays linear on lines built to
// make a naive lazy-name search quadratic.
func TestParseAdversarialLinear(t *testing.T) {
	t.Parallel()
	const n = 100000
	lines := []string{
		"[a] x" + strings.Repeat(" (complete) @k(", n) + "X",
		"[a] x" + strings.Repeat(" (complete) @k(v)", n) + " X",
		"ref [a] x" + strings.Repeat(" (u) @k(", n) + "X",
		"[a]" + strings.Repeat(" ", n) + "(complete)",
		"[a] " + strings.Repeat("x ", n) + "(started)",
		"[a] " + strings.Repeat("(", n),
	}
	for i, l := range lines {
		start := time.Now()
		_, _ = Parse("vine 1.2.0\n---\n" + l + "\n")
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("line %d took %v", i, d)
		}
	}
	g := mustParse(t, "vine 1.2.0\n---\n"+lines[4]+"\n")
	if len(g.Nodes[0].ShortName) != 2*n-1 {
		t.Errorf("name length %d", len(g.Nodes[0].ShortName))
	}
	_, err := Parse("vine 1.2.0\n---\n" + lines[0] + "\n")
	if err == nil || len(err.Error()) > 400 {
		t.Errorf("error not clipped: %d bytes", len(err.Error()))
	}
}
