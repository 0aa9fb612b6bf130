package vine

import (
	"regexp"
	"strings"
	"testing"
)

// The header grammars verbatim from VINE.md: the oracle for matchHeader.
var (
	taskHeaderRE = regexp.MustCompile(`^\[([a-zA-Z0-9-]+(?:/[a-zA-Z0-9-]+)*)\]\s+(.+?)\s+\((complete|started|reviewing|planning|notstarted|blocked)\)((?:\s+@[a-zA-Z][a-zA-Z0-9]*\([^)]*\))*)$`)
	refHeaderRE  = regexp.MustCompile(`^ref\s+\[([a-zA-Z0-9-]+(?:/[a-zA-Z0-9-]+)*)\]\s+(.+?)\s+\((\S+)\)((?:\s+@[a-zA-Z][a-zA-Z0-9]*\([^)]*\))*)$`)
)

// FuzzParse: Parse never panics, and whatever parses is writable and
// round-trips: parse(serialize(g)) == g and serialization is stable. (This is
// stronger than "whatever parses and validates round-trips".)
func FuzzParse(f *testing.F) {
	for _, text := range allValidFixtureTexts(f) {
		f.Add(text)
		f.Add(strings.ReplaceAll(text, "\n", "\r\n"))
	}
	for _, f2 := range fixtureInputs(f) {
		f.Add(readFile(f, f2))
	}
	for _, s := range []string{
		"", "vine 1.2.0\n---\n", "vine 1.0.0\ndelimiter: ===\n---\n[a] A (complete)\n===\n===\n",
		"vine 1.2.0\n---\n[a]   (complete)\n", "vine 1.2.0\n---\n[a] X (complete) (started) @k() @j(a, b)\n",
		"vine 1.2.0\n---\nref [r] N (u)) @x(()\n", "vine 1.2.0\n---\n[a] A (complete)\n@file a\vb c \n> x\r\r\n",
		"vine 1.2.0\nk: v\n\n---\n\n[a] A (blocked)\n\n\n", "vine 1.2.0\n---\n[a] A (complete)\n->  b\n---\n[b] B (complete)\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		g, err := Parse(text)
		if err != nil {
			if ErrorCode(err) != CodeInvalid {
				t.Fatalf("parse error with code %q: %v", ErrorCode(err), err)
			}
			return
		}
		valid := Validate(g) == nil
		if valid {
			_ = Next(g)
		}
		s1, err := Serialize(g)
		if err != nil {
			t.Fatalf("parsed graph is not writable: %v\ninput %q", err, text)
		}
		g2, err := Parse(s1)
		if err != nil {
			t.Fatalf("serialized text does not parse: %v\n%q", err, s1)
		}
		if !g2.Equal(g) {
			t.Fatalf("parse(serialize(g)) != g\ninput %q\nwritten %q\ng  %#v\ng2 %#v", text, s1, g, g2)
		}
		if s2, err := Serialize(g2); err != nil || s2 != s1 {
			t.Fatalf("serialization not stable: %v\n%q\n%q", err, s1, s2)
		}
		if (Validate(g2) == nil) != valid {
			t.Fatal("validity changed across a round trip")
		}
	})
}

// FuzzSerialize: a graph built from arbitrary field values is either refused
// by Serialize or reads back equal: the writer never writes text that would
// be misread.
func FuzzSerialize(f *testing.F) {
	f.Add("a", "Name", uint8(0), "desc", "decision", "k", "v", "text/plain", "./x", "T", "", false)
	f.Add("a/b", "N (complete)", uint8(3), "x\n\ny", "> d", "sprite", " v ", "t/p", "u v", "", "===", true)
	f.Add("a", "A @k(v)", uint8(1), "-> b", "", "k", "a,b", "m", "", "x", "-> b", false)
	f.Add("a", " ", uint8(2), "---", "x\r", "K1", "", "a\vb", "\u00a0u", "t\n", "~", true)
	f.Fuzz(func(t *testing.T, id, name string, st uint8, description, decision, annKey, annVal, mime, uri, title, delim string, ref bool) {
		n := Node{ID: id, Kind: KindTask, ShortName: name, Status: Statuses()[int(st)%6], Description: description,
			Dependencies: []string{"dep"}, Decisions: []string{decision}, Annotations: map[string][]string{annKey: {annVal, "x"}}}
		if ref {
			n.Kind, n.Status, n.URI = KindRef, "", uri
		} else {
			n.Attachments = []Attachment{{ClassFile, mime, uri}}
		}
		g := Graph{Metadata: map[string]string{MetaTitle: title}, Nodes: []Node{n, {ID: "dep", Kind: KindTask, ShortName: "Dep", Status: StatusComplete}}}
		if delim != "" {
			g.Metadata[MetaDelimiter] = delim
		}
		s, err := Serialize(g)
		if err != nil {
			return
		}
		back, err := Parse(s)
		if err != nil {
			t.Fatalf("written text does not parse: %v\n%q", err, s)
		}
		if !back.Equal(g) {
			t.Fatalf("written text reads back differently\n%q\ngot  %#v\nwant %#v", s, back, g)
		}
	})
}

// FuzzApply: any JSON batch either fails leaving the graph unchanged, or
// yields a valid graph that round-trips through text.
func FuzzApply(f *testing.F) {
	f.Add(`[{"op":"claim","id":"b"}]`)
	f.Add(`[{"op":"add_task","id":"d","name":"D","dependsOn":["a"]},{"op":"add_dep","taskId":"b","depId":"d"}]`)
	f.Add(`[{"op":"update","id":"a","description":"x\n-> y"}]`)
	f.Add(`[{"op":"extract_to_ref","id":"c","vine":"./c.vine"},{"op":"remove_task","id":"a"}]`)
	f.Add(`[{"op":"create"},{"op":"add_task","id":"r","name":"R","annotations":{"k":["a)"]}}]`)
	f.Fuzz(func(t *testing.T, data string) {
		ops, err := DecodeOps([]byte(data))
		if err != nil {
			return
		}
		g := mustValid(t, baseGraph)
		before := g.Clone()
		res, err := Apply(g, ops)
		if !g.Equal(before) {
			t.Fatal("Apply modified its input")
		}
		if err != nil {
			if c := ErrorCode(err); c == CodeInternal || c == "" {
				t.Fatalf("unclassified error %v", err)
			}
			return
		}
		if err := Validate(res.Graph); err != nil {
			t.Fatalf("result invalid: %v", err)
		}
		s, err := Serialize(res.Graph)
		if err != nil {
			t.Fatalf("result not writable: %v", err)
		}
		if back := mustParse(t, s); !back.Equal(res.Graph) {
			t.Fatalf("result does not round-trip: %q", s)
		}
	})
}

// FuzzHeaderMatch: the linear header scanner agrees with the VINE.md
// regular expressions on every line.
func FuzzHeaderMatch(f *testing.F) {
	for _, s := range []string{
		"[a] A (complete)", "[a]   (complete)", "[a] \t (started)", "[a/b-1] X (complete) (started) @k() @j(a, b)",
		"ref [r] N (u)) @x(()", "ref [r] N (./a.vine) (./b.vine)", "ref\t[r]  N  (x) @s(y)", "[a] A (done)",
		"[a] A (complete) @1(x)", "[a] A (complete)@k(x)", "[a] A (complete) @k(x", "ref [r] A ((x))", "[a]\f\r(complete) (blocked)",
		"[a] é\xff (planning) @k(\xff)", "ref [r] x ()", "ref [r] x ( )", "ref [r]  ( ) (y)",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		for _, ref := range []bool{false, true} {
			re := taskHeaderRE
			if ref {
				re = refHeaderRE
			}
			want := re.FindStringSubmatch(line)
			got, ok := matchHeader(line, ref)
			if ok != (want != nil) {
				t.Fatalf("ref=%v %q: fast match %v, regexp %v", ref, line, ok, want != nil)
			}
			if ok && (got[0] != want[0] || got[1] != want[1] || got[2] != want[2] || got[3] != want[3] || got[4] != want[4]) {
				t.Fatalf("ref=%v %q: fast %q, regexp %q", ref, line, got, want)
			}
		}
	})
}
