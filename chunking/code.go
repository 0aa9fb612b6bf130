package chunking

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	sitter "github.com/tree-sitter/go-tree-sitter"
)

// maxSplitDepth bounds the recursion into nested statements when an
// oversized definition is split; deeper structure falls back to line windows.
const maxSplitDepth = 48

// maxNesting bounds how deep containers (classes in classes ...) are
// followed; deeper ones are chunked whole.
const maxNesting = 16

// region is a run of lines holding one definition (with its attached
// comments, decorators and attributes), or several merged ones.
type region struct {
	s, e    int
	defs    []defInfo
	members []region // for a container with extracted members
	merged  bool
}

func (r region) lines() int { return r.e - r.s + 1 }

// maxNames bounds the names listed in a merged chunk's name.
const maxNames = 8

func (r region) name() string {
	var names []string
	for i, d := range r.defs {
		if i == maxNames {
			names = append(names, "+"+strconv.Itoa(len(r.defs)-maxNames)+" more")
			break
		}
		names = append(names, d.qual)
	}
	return strings.Join(names, ", ")
}

// piece is part of a chunk: source lines s..e, or, when stub is set, the
// stub lines shown in place of lines s..e (an elided method).
type piece struct {
	s, e int
	stub []string
	glue bool // a comment: keep with the piece after it
}

// codeChunker chunks one parsed code file.
type codeChunker struct {
	src   *source
	sp    spec
	path  string
	lang  string
	fname string   // the file name, which module chunks carry
	base  []string // tags on every chunk
	out   []Chunk
}

// chunkCode chunks a code file with tree-sitter. ok is false when the file
// could not be parsed at all; the caller then falls back to line windows.
func chunkCode(relPath, lang string, data []byte, src *source, base []string) (chunks []Chunk, ok bool) {
	if len(data) > MaxParseBytes {
		return nil, false
	}
	defer func() {
		if r := recover(); r != nil {
			chunks, ok = nil, false
		}
	}()
	tree := parse(lang, data)
	if tree == nil {
		return nil, false
	}
	defer tree.Close()
	root := tree.RootNode()
	if root == nil {
		return nil, false
	}
	c := &codeChunker{src: src, sp: spec{lang: lang, data: data}, path: relPath, lang: lang, fname: fileName(relPath), base: base}
	if root.HasError() {
		c.base = append(slices.Clone(base), "parse_error")
	}
	c.file(root)
	return c.out, true
}

// flatten returns the named children of n, looking through ERROR nodes so
// that definitions recovered inside them are still found.
func flatten(n *sitter.Node, depth int) []sitter.Node {
	var out []sitter.Node
	for _, ch := range namedChildren(n) {
		if ch.Kind() == "ERROR" && depth < maxNesting {
			out = append(out, flatten(&ch, depth+1)...)
			continue
		}
		out = append(out, ch)
	}
	return out
}

// file chunks the whole file: definitions and the module code around them.
func (c *codeChunker) file(root *sitter.Node) {
	children := flatten(root, 0)
	regs := c.regions(children, scope{}, 0, 0, c.src.n()-1)
	cur := 0
	for _, r := range regs {
		c.module(children, cur, r.s-1)
		c.emit(r)
		cur = r.e + 1
	}
	c.module(children, cur, c.src.n()-1)
}

// module emits lines a..b (module-level code) as module chunks.
func (c *codeChunker) module(nodes []sitter.Node, a, b int) {
	a, b, ok := c.src.trim(a, b)
	if !ok {
		return
	}
	if c.src.fits(a, b) {
		c.add(TypeModule, c.fname, a, b, c.src.text(a, b), nil)
		return
	}
	c.emitParts(TypeModule, c.fname, c.atomize(nodes, a, b, 0), nil)
}

// regions finds the definitions among sibling nodes, limited to lines lo..hi.
func (c *codeChunker) regions(nodes []sitter.Node, sc scope, nesting, lo, hi int) []region {
	var regs []region
	var pending []sitter.Node // attachable nodes seen since the last other node
	prevEnd := lo - 1
	for i := range nodes {
		n := &nodes[i]
		if c.sp.attachable(n) {
			pending = append(pending, *n)
			continue
		}
		d, ok := c.sp.classify(n, sc)
		if !ok || startRow(n) < lo {
			pending = pending[:0]
			prevEnd = max(prevEnd, endRow(n))
			continue
		}
		s, e := startRow(n), min(endRow(n), hi)
		var attached []sitter.Node
		for j := len(pending) - 1; j >= 0; j-- {
			p := &pending[j]
			if endRow(p) < s-1 || startRow(p) <= prevEnd || startRow(p) < lo {
				break
			}
			s = startRow(p)
			attached = append(attached, *p)
		}
		pending = pending[:0]
		d.tags = append(d.tags, c.sp.attachTags(attached)...)
		if s > e {
			continue
		}
		r := region{s: s, e: e, defs: []defInfo{d}}
		if k := len(regs); k > 0 && r.s <= regs[k-1].e {
			// Shares a line with the previous definition: one chunk for both.
			p := &regs[k-1]
			p.e = max(p.e, r.e)
			p.defs = append(p.defs, d)
		} else {
			regs = append(regs, r)
		}
		prevEnd = max(prevEnd, e)
	}
	for i := range regs {
		if len(regs[i].defs) == 1 && regs[i].defs[0].body != nil && nesting < maxNesting {
			regs[i].members = c.members(regs[i], nesting+1)
		}
	}
	return c.mergeTiny(regs)
}

// members finds the member definitions of a container region. Members that
// share the container's first line stay in the container.
func (c *codeChunker) members(r region, nesting int) []region {
	d := r.defs[0]
	header := startRow(&d.node)
	var out []region
	for _, m := range c.regions(c.sp.members(d.body), d.members, nesting, header+1, r.e) {
		if m.s > header && m.e <= r.e {
			out = append(out, m)
		}
	}
	return out
}

// mergeTiny merges consecutive tiny definitions of the same kind written on
// adjacent lines (no blank line between them).
func (c *codeChunker) mergeTiny(regs []region) []region {
	tiny := func(r region) bool {
		return r.lines() < MinChunkLines && len(r.members) == 0
	}
	var out []region
	for _, r := range regs {
		if k := len(out); k > 0 {
			p := &out[k-1]
			if tiny(r) && (p.merged || tiny(*p)) && len(p.members) == 0 &&
				p.defs[0].kind == r.defs[0].kind && r.s == p.e+1 && c.src.fits(p.s, r.e) {
				p.e = r.e
				p.defs = append(p.defs, r.defs...)
				p.merged = true
				continue
			}
		}
		out = append(out, r)
	}
	return out
}

// emit emits the chunks of a region: the definition, or a container's
// header followed by its members.
func (c *codeChunker) emit(r region) {
	kind, name := r.defs[0].kind, r.name()
	var tags []string
	for _, d := range r.defs {
		tags = append(tags, d.tags...)
	}
	if r.merged {
		tags = append(tags, "merged")
	}
	if len(r.members) == 0 {
		if c.src.fits(r.s, r.e) {
			c.add(kind, name, r.s, r.e, c.src.text(r.s, r.e), tags)
			return
		}
		nodes := make([]sitter.Node, len(r.defs))
		for i, d := range r.defs {
			nodes[i] = d.node
		}
		c.emitParts(kind, name, c.atomize(nodes, r.s, r.e, 0), tags)
		return
	}
	// Container: header with one stub per member, then the members.
	var pieces []piece
	cur := r.s
	for i, m := range r.members {
		// Blank lines between two stubs are dropped.
		if cur <= m.s-1 && (i == 0 || !c.src.allBlank(cur, m.s-1)) {
			pieces = append(pieces, piece{s: cur, e: m.s - 1})
		}
		pieces = append(pieces, piece{s: m.s, e: m.e, stub: c.stub(m)})
		cur = m.e + 1
	}
	if cur <= r.e {
		pieces = append(pieces, piece{s: cur, e: r.e})
	}
	if lines, bytes := c.size(pieces); lines <= MaxChunkLines && bytes <= MaxChunkBytes {
		c.addPieces(kind, name, pieces, tags, false)
	} else {
		var fine []piece
		for _, p := range pieces {
			if p.stub == nil && !c.src.fits(p.s, p.e) {
				fine = append(fine, c.atomize([]sitter.Node{r.defs[0].node}, p.s, p.e, 0)...)
				continue
			}
			fine = append(fine, p)
		}
		c.emitParts(kind, name, fine, tags)
	}
	for _, m := range r.members {
		c.emit(m)
	}
}

// stub returns the lines that stand for member m in its container's chunk:
// each definition's signature (from its name to the start of its body, at
// most maxStubLines lines), with " ..." marking the elided body.
func (c *codeChunker) stub(m region) []string {
	var out []string
	for _, d := range m.defs {
		row := min(max(d.stubRow, m.s), m.e)
		last := row
		if body := bodyOf(&d.node); body != nil {
			last = startRow(body)
			if c.lang == LangPython && last > row {
				last-- // the block starts on the line after the colon
			}
		}
		last = min(max(last, row), m.e, row+maxStubLines-1)
		lines := slices.Clone(c.src.lines[row : last+1])
		k := len(lines) - 1
		if row > m.s || last < m.e || len(m.defs) > 1 || len(m.members) > 0 {
			lines[k] = strings.TrimRight(lines[k], " \t")
			if strings.HasSuffix(lines[k], "{") {
				lines[k] += " ... }"
			} else {
				lines[k] += " ..."
			}
		}
		out = append(out, lines...)
	}
	return out
}

// maxStubLines bounds the signature lines kept for an elided member.
const maxStubLines = 6

// bodyOf returns the body of a definition node, looking through wrappers
// (decorators, export statements).
func bodyOf(n *sitter.Node) *sitter.Node {
	if b := n.ChildByFieldName("body"); b != nil {
		return b
	}
	for _, f := range []string{"definition", "declaration", "value"} {
		if inner := n.ChildByFieldName(f); inner != nil {
			if b := inner.ChildByFieldName("body"); b != nil {
				return b
			}
		}
	}
	return nil
}

// atomize cuts lines a..b into pieces that each fit the size limits where
// possible, cutting only between the given nodes (statements) and, for a
// node too large, between its children; what has no structure left is cut
// into line windows.
func (c *codeChunker) atomize(nodes []sitter.Node, a, b, depth int) []piece {
	var out []piece
	add := func(p piece) {
		if k := len(out); k > 0 && p.s <= out[k-1].e {
			out[k-1].e = max(out[k-1].e, p.e)
			out[k-1].glue = out[k-1].glue && p.glue
			return
		}
		out = append(out, p)
	}
	fill := func(x, y int) {
		for _, w := range c.src.windows(x, y) {
			add(piece{s: w[0], e: w[1]})
		}
	}
	cur := a
	for i := range nodes {
		n := &nodes[i]
		ns, ne := max(startRow(n), a), min(endRow(n), b)
		if ns > ne || ne < cur {
			continue
		}
		if ns > cur {
			fill(cur, ns-1)
		}
		switch {
		case c.src.fits(ns, ne):
			add(piece{s: ns, e: ne, glue: commentKinds[n.Kind()]})
		case depth < maxSplitDepth && n.NamedChildCount() > 0:
			for _, p := range c.atomize(namedChildren(n), ns, ne, depth+1) {
				add(p)
			}
		default:
			fill(ns, ne)
		}
		cur = max(cur, ne+1)
	}
	if cur <= b {
		fill(cur, b)
	}
	return out
}

// size returns the rendered line count and byte size of pieces.
func (c *codeChunker) size(pieces []piece) (lines, bytes int) {
	for _, p := range pieces {
		l, b := c.pieceSize(p)
		if lines > 0 {
			bytes++
		}
		lines += l
		bytes += b
	}
	return lines, bytes
}

func (c *codeChunker) pieceSize(p piece) (lines, bytes int) {
	if p.stub == nil {
		return p.e - p.s + 1, c.src.bytes(p.s, p.e)
	}
	for _, l := range p.stub {
		bytes += len(l)
	}
	return len(p.stub), bytes + len(p.stub) - 1
}

// emitParts packs pieces greedily into chunks within the size limits. When
// more than one chunk results, each is tagged "partial".
func (c *codeChunker) emitParts(kind, name string, pieces []piece, tags []string) {
	// A piece still too large (lines sharing statements) becomes windows.
	var fitted []piece
	for _, p := range pieces {
		if p.stub != nil || c.src.fits(p.s, p.e) {
			fitted = append(fitted, p)
			continue
		}
		for _, w := range c.src.windows(p.s, p.e) {
			fitted = append(fitted, piece{s: w[0], e: w[1]})
		}
	}
	var parts [][]piece
	var cur []piece
	curLines, curBytes := 0, 0
	for _, p := range fitted {
		l, b := c.pieceSize(p)
		if len(cur) > 0 && (curLines+l > MaxChunkLines || curBytes+1+b > MaxChunkBytes) {
			// Comments directly above p move with it.
			k := len(cur)
			for k > 1 && cur[k-1].glue && cur[k-1].e+1 >= p.s-1 {
				k--
			}
			carry := slices.Clone(cur[k:])
			parts = append(parts, cur[:k])
			cur, curLines, curBytes = nil, 0, 0
			for _, q := range carry {
				ql, qb := c.pieceSize(q)
				if len(cur) > 0 {
					curBytes++
				}
				cur = append(cur, q)
				curLines += ql
				curBytes += qb
			}
		}
		if len(cur) > 0 {
			curBytes++
		}
		cur = append(cur, p)
		curLines += l
		curBytes += b
	}
	if len(cur) > 0 {
		parts = append(parts, cur)
	}
	for _, part := range parts {
		c.addPieces(kind, name, part, tags, len(parts) > 1)
	}
}

// addPieces emits one chunk made of pieces, trimming blank lines at its
// edges.
func (c *codeChunker) addPieces(kind, name string, pieces []piece, tags []string, partial bool) {
	for len(pieces) > 0 && pieces[0].stub == nil {
		s, _, ok := c.src.trim(pieces[0].s, pieces[0].e)
		if ok {
			pieces[0].s = s
			break
		}
		pieces = pieces[1:]
	}
	for len(pieces) > 0 && pieces[len(pieces)-1].stub == nil {
		k := len(pieces) - 1
		_, e, ok := c.src.trim(pieces[k].s, pieces[k].e)
		if ok {
			pieces[k].e = e
			break
		}
		pieces = pieces[:k]
	}
	if len(pieces) == 0 {
		return
	}
	var sb strings.Builder
	for i, p := range pieces {
		if i > 0 {
			sb.WriteByte('\n')
		}
		if p.stub != nil {
			sb.WriteString(strings.Join(p.stub, "\n"))
		} else {
			sb.WriteString(c.src.text(p.s, p.e))
		}
	}
	if partial {
		tags = append(slices.Clone(tags), "partial")
	}
	c.add(kind, name, pieces[0].s, pieces[len(pieces)-1].e, sb.String(), tags)
}

// add appends a chunk for lines a..b (0-based).
func (c *codeChunker) add(kind, name string, a, b int, content string, tags []string) {
	c.out = append(c.out, Chunk{
		SourcePath: c.path,
		StartLine:  a + 1,
		EndLine:    b + 1,
		ChunkType:  kind,
		Name:       name,
		Language:   c.lang,
		Tags:       normTags(append(slices.Clone(c.base), tags...)),
		Content:    content,
	})
}

// normTags sorts and deduplicates tags.
func normTags(tags []string) []string {
	slices.Sort(tags)
	return slices.Compact(tags)
}

// String renders a chunk's location for debugging and test failures.
func (ch Chunk) String() string {
	return fmt.Sprintf("%s %s %q %s:%d-%d %v", ch.ChunkID, ch.ChunkType, ch.Name, ch.SourcePath, ch.StartLine, ch.EndLine, ch.Tags)
}
