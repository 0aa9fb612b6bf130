package vine

import (
	"strings"
	"testing"
)

func TestSerializeCanonical(t *testing.T) {
	t.Parallel()
	in := "vine 1.0.0\r\n" +
		"zeta: last\r\n" +
		"title: Plan\r\n" +
		"alpha: first\r\n" +
		"prefix: pl\r\n" +
		"---\r\n" +
		"[root] Root (started) @zed(1) @alpha( x , y )\r\n" +
		"> decided\r\n" +
		"-> b\r\n" +
		"@file text/plain ./f.txt\r\n" +
		"intro\r\n" +
		"@artifact text/plain ./a.txt\r\n" +
		"-> a\r\n" +
		"@guidance text/markdown ./g.md\r\n" +
		"> second\r\n" +
		"\r\n" +
		"outro\r\n" +
		"---\r\n" +
		"ref [a] A ref (./a.vine)\r\n" +
		"---\r\n" +
		"[b] B (complete)\r\n" +
		"---\r\n"
	want := "vine 1.2.0\n" +
		"prefix: pl\n" +
		"title: Plan\n" +
		"alpha: first\n" +
		"zeta: last\n" +
		"---\n" +
		"[root] Root (started) @alpha(x,y) @zed(1)\n" +
		"intro\n" +
		"\n" +
		"outro\n" +
		"-> a\n" +
		"-> b\n" +
		"> decided\n" +
		"> second\n" +
		"@artifact text/plain ./a.txt\n" +
		"@guidance text/markdown ./g.md\n" +
		"@file text/plain ./f.txt\n" +
		"---\n" +
		"ref [a] A ref (./a.vine)\n" +
		"---\n" +
		"[b] B (complete)\n"
	got, err := Serialize(mustParse(t, in))
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestSerializeDelimiter(t *testing.T) {
	t.Parallel()
	g := Graph{Metadata: map[string]string{"delimiter": "%%", "title": "T"}, Nodes: []Node{
		{ID: "a", Kind: KindTask, ShortName: "A", Status: StatusComplete, Description: "---", Dependencies: []string{"b"}},
		{ID: "b", Kind: KindTask, ShortName: "B", Status: StatusComplete},
	}}
	got, err := Serialize(g)
	if err != nil {
		t.Fatal(err)
	}
	want := "vine 1.2.0\ndelimiter: %%\ntitle: T\n---\n[a] A (complete)\n---\n-> b\n%%\n[b] B (complete)\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if back := mustParse(t, got); !back.Equal(g) {
		t.Errorf("read back %#v", back)
	}
	// An explicit default delimiter is not written.
	g.Metadata = map[string]string{"delimiter": "---"}
	g.Nodes[0].Description = ""
	got, _ = Serialize(g)
	if strings.Contains(got, "delimiter") {
		t.Errorf("default delimiter written:\n%s", got)
	}
}

func TestSerializeRefuses(t *testing.T) {
	t.Parallel()
	task := func(mod func(*Node)) Graph {
		n := Node{ID: "a", Kind: KindTask, ShortName: "A", Status: StatusStarted}
		mod(&n)
		return Graph{Nodes: []Node{n}}
	}
	tests := []struct {
		name string
		g    Graph
		want string
	}{
		{"description line read as dependency", task(func(n *Node) { n.Description = "ok\n-> b" }), `starts with "-> "`},
		{"description line read as decision", task(func(n *Node) { n.Description = "> quote" }), `starts with "> "`},
		{"description line read as attachment", task(func(n *Node) { n.Description = "@file a b" }), "read as an attachment"},
		{"description line equal to the delimiter", task(func(n *Node) { n.Description = "x\n---\ny" }), "equals the block delimiter"},
		{"description line equal to a custom delimiter", Graph{Metadata: map[string]string{"delimiter": "~~"}, Nodes: []Node{{ID: "a", Kind: KindTask, ShortName: "A", Status: StatusStarted, Description: "~~"}}}, "equals the block delimiter"},
		{"description line ending in CR", task(func(n *Node) { n.Description = "x\r" }), "carriage return"},
		{"newline in name", task(func(n *Node) { n.ShortName = "A\nB" }), "contains a line break"},
		{"empty name", task(func(n *Node) { n.ShortName = "" }), "empty name"},
		{"name with trailing space", task(func(n *Node) { n.ShortName = "A " }), "would read back differently"},
		{"newline in decision", task(func(n *Node) { n.Decisions = []string{"a\nb"} }), "contains a line break"},
		{"decision ending in CR", task(func(n *Node) { n.Decisions = []string{"a\r"} }), "carriage return"},
		{"id outside the grammar", task(func(n *Node) { n.ID = "a b" }), "outside the id grammar"},
		{"id with empty segment", task(func(n *Node) { n.ID = "a//b" }), "outside the id grammar"},
		{"dependency outside the grammar", task(func(n *Node) { n.Dependencies = []string{"x y"} }), `dependency "x y" is outside the id grammar`},
		{"unknown status", task(func(n *Node) { n.Status = "done" }), `unknown status "done"`},
		{"unknown kind", task(func(n *Node) { n.Kind = "thing" }), `unknown kind "thing"`},
		{"task with uri", task(func(n *Node) { n.URI = "./x.vine" }), "cannot have a vine uri"},
		{"reference with status", task(func(n *Node) { n.Kind = KindRef; n.URI = "./x.vine" }), "cannot have a status"},
		{"reference without uri", task(func(n *Node) { n.Kind = KindRef; n.Status = "" }), "must be one non-empty word"},
		{"reference uri with space", task(func(n *Node) { n.Kind = KindRef; n.Status = ""; n.URI = "a b" }), "must be one non-empty word"},
		{"attachment on reference", task(func(n *Node) {
			n.Kind, n.Status, n.URI = KindRef, "", "./x.vine"
			n.Attachments = []Attachment{{ClassFile, "text/plain", "x"}}
		}), "attachment on reference"},
		{"attachment class", task(func(n *Node) { n.Attachments = []Attachment{{"note", "text/plain", "x"}} }), `class "note"`},
		{"attachment mime with space", task(func(n *Node) { n.Attachments = []Attachment{{ClassFile, "text plain", "x"}} }), "must be one word"},
		{"attachment empty uri", task(func(n *Node) { n.Attachments = []Attachment{{ClassFile, "text/plain", ""}} }), "uri"},
		{"annotation without values", task(func(n *Node) { n.Annotations = map[string][]string{"flag": {}} }), "has no values"},
		{"annotation value with comma", task(func(n *Node) { n.Annotations = map[string][]string{"k": {"a,b"}} }), "contains ','"},
		{"annotation value with paren", task(func(n *Node) { n.Annotations = map[string][]string{"k": {"a)"}} }), "contains ','"},
		{"annotation key", task(func(n *Node) { n.Annotations = map[string][]string{"1k": {"a"}} }), "annotation key"},
		{"metadata value newline", Graph{Metadata: map[string]string{"title": "a\nb"}, Nodes: task(func(*Node) {}).Nodes}, "line break"},
		{"metadata key", Graph{Metadata: map[string]string{"a b": "x"}, Nodes: task(func(*Node) {}).Nodes}, "metadata key"},
		{"metadata value padded", Graph{Metadata: map[string]string{"title": " x"}, Nodes: task(func(*Node) {}).Nodes}, "surrounding whitespace"},
		{"empty delimiter", Graph{Metadata: map[string]string{"delimiter": ""}, Nodes: task(func(*Node) {}).Nodes}, "must not be empty"},
		{"dependency line equal to the delimiter", Graph{Metadata: map[string]string{"delimiter": "-> b"}, Nodes: []Node{{ID: "a", Kind: KindTask, ShortName: "A", Status: StatusStarted, Dependencies: []string{"b"}}}}, "equals the block delimiter"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			before := tt.g.Clone()
			s, err := Serialize(tt.g)
			wantErr(t, err, CodeInvalid, tt.want)
			if s != "" {
				t.Errorf("partial output %q", s)
			}
			if !tt.g.Equal(before) {
				t.Error("Serialize modified its input")
			}
		})
	}
}

// TestRoundTripFixtures: for every valid fixture x, serialize(parse(x)) is
// stable and parse(serialize(g)) == g.
func TestRoundTripFixtures(t *testing.T) {
	t.Parallel()
	for path, text := range allValidFixtureTexts(t) {
		g := mustValid(t, text)
		s1, err := Serialize(g)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		g2 := mustParse(t, s1)
		if !g2.Equal(g) {
			t.Errorf("%s: parse(serialize(g)) != g", path)
		}
		s2, err := Serialize(g2)
		if err != nil || s2 != s1 {
			t.Errorf("%s: serialization not stable (%v):\n%s\n----\n%s", path, err, s1, s2)
		}
		if !strings.HasPrefix(s1, "vine 1.2.0\n") || !strings.HasSuffix(s1, "\n") || strings.HasSuffix(s1, "\n\n") || strings.HasSuffix(s1, "---\n") {
			t.Errorf("%s: not canonical:\n%s", path, s1)
		}
	}
}

// TestRoundTripCanonicalFixtures: fixtures already in canonical form
// (apart from the magic line) serialize byte for byte.
func TestRoundTripCanonicalFixtures(t *testing.T) {
	t.Parallel()
	for _, f := range []string{
		"testdata/inputs/repo-examples-02-linear-chain.vine",
		"testdata/inputs/repo-mcp-sample.vine",
		"testdata/expand/repo-ref-advanced-backend/expected.vine",
	} {
		text := readFile(t, f)
		got, err := Serialize(mustParse(t, text))
		if err != nil {
			t.Fatal(err)
		}
		want := "vine 1.2.0" + text[strings.IndexByte(text, '\n'):]
		if got != want {
			t.Errorf("%s:\n%s\nwant\n%s", f, got, want)
		}
	}
}
