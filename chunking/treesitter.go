package chunking

import (
	"strings"

	sitter "github.com/tree-sitter/go-tree-sitter"
	tsgo "github.com/tree-sitter/tree-sitter-go/bindings/go"
	tsjava "github.com/tree-sitter/tree-sitter-java/bindings/go"
	tsjs "github.com/tree-sitter/tree-sitter-javascript/bindings/go"
	tspython "github.com/tree-sitter/tree-sitter-python/bindings/go"
	tsrust "github.com/tree-sitter/tree-sitter-rust/bindings/go"
	tsts "github.com/tree-sitter/tree-sitter-typescript/bindings/go"
)

// grammar returns the tree-sitter grammar for a code language, or nil.
func grammar(lang string) *sitter.Language {
	switch lang {
	case LangPython:
		return sitter.NewLanguage(tspython.Language())
	case LangGo:
		return sitter.NewLanguage(tsgo.Language())
	case LangJavaScript:
		return sitter.NewLanguage(tsjs.Language())
	case LangTypeScript:
		return sitter.NewLanguage(tsts.LanguageTypescript())
	case LangTSX:
		return sitter.NewLanguage(tsts.LanguageTSX())
	case LangRust:
		return sitter.NewLanguage(tsrust.Language())
	case LangJava:
		return sitter.NewLanguage(tsjava.Language())
	}
	return nil
}

// parse parses data as lang. The caller must Close the returned tree; a nil
// tree means the parser could not be set up or gave up.
func parse(lang string, data []byte) *sitter.Tree {
	g := grammar(lang)
	if g == nil {
		return nil
	}
	p := sitter.NewParser()
	defer p.Close()
	if err := p.SetLanguage(g); err != nil {
		return nil
	}
	return p.Parse(data, nil)
}

// startRow and endRow return the 0-based first and last line of n. A node
// that ends at column 0 of a line (one that swallowed a newline, like Rust's
// line comments) ends on the line before.
func startRow(n *sitter.Node) int { return int(n.StartPosition().Row) }

func endRow(n *sitter.Node) int {
	p := n.EndPosition()
	r := int(p.Row)
	if p.Column == 0 && r > startRow(n) {
		r--
	}
	return r
}

// nodeText returns the source text of n.
func nodeText(n *sitter.Node, data []byte) string {
	if n == nil {
		return ""
	}
	s, e := n.StartByte(), n.EndByte()
	if s > e || e > uint(len(data)) {
		return ""
	}
	return string(data[s:e])
}

// oneLine collapses runs of white space to single spaces.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// namedChildren returns the named children of n.
func namedChildren(n *sitter.Node) []sitter.Node {
	c := n.Walk()
	defer c.Close()
	return n.NamedChildren(c)
}

// hasChildKind reports whether n has a direct child (named or not) of kind.
func hasChildKind(n *sitter.Node, kind string) bool {
	for i := uint(0); i < n.ChildCount(); i++ {
		if ch := n.Child(i); ch != nil && ch.Kind() == kind {
			return true
		}
	}
	return false
}

// childOfKind returns the first direct child of n of one of kinds, or nil.
func childOfKind(n *sitter.Node, kinds ...string) *sitter.Node {
	for i := uint(0); i < n.ChildCount(); i++ {
		ch := n.Child(i)
		if ch == nil {
			continue
		}
		for _, k := range kinds {
			if ch.Kind() == k {
				return ch
			}
		}
	}
	return nil
}
