package vine

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// magicRE matches the first line, `vine <major>.<minor>.<patch>`.
var magicRE = regexp.MustCompile(`^vine\s+(\d+\.\d+\.\d+)$`)

// supportedVersion reports whether v is a VINE version this package reads.
func supportedVersion(v string) bool {
	return v == "1.0.0" || v == "1.1.0" || v == "1.2.0"
}

// Parse reads VINE 1.0.0, 1.1.0 or 1.2.0 text into a Graph. It checks syntax
// only; call Validate for the graph constraints. CRLF line endings and a
// leading UTF-8 byte order mark are accepted. Errors are *ParseError values
// carrying the line number.
//
// Parse returns the graph in canonical form: each node's dependencies sorted
// and de-duplicated, attachments grouped artifact, guidance, file.
func Parse(text string) (Graph, error) {
	text = strings.TrimPrefix(text, "\uFEFF")
	lines := splitLines(text)
	if len(lines) == 0 {
		return Graph{}, &ParseError{Line: 1, What: "invalid magic line", Detail: `empty input; want "vine <major>.<minor>.<patch>"`}
	}
	magic := strings.TrimSpace(lines[0])
	m := magicRE.FindStringSubmatch(magic)
	if m == nil {
		return Graph{}, &ParseError{Line: 1, What: "invalid magic line", Detail: fmt.Sprintf(`want "vine <major>.<minor>.<patch>", got %q`, clip(lines[0]))}
	}
	if !supportedVersion(m[1]) {
		return Graph{}, &ParseError{Line: 1, What: "unsupported version", Detail: fmt.Sprintf("VINE %s is not supported (supported: 1.0.0, 1.1.0, 1.2.0)", m[1])}
	}

	g := Graph{}
	i := 1
	for ; i < len(lines); i++ {
		line := lines[i]
		if line == "---" {
			break
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || !validMetaKey(k) {
			return Graph{}, &ParseError{Line: i + 1, What: "invalid metadata", Detail: fmt.Sprintf(`want "key: value" with key [A-Za-z0-9_-]+ (or "---" to end the metadata), got %q`, clip(line))}
		}
		if _, dup := g.Metadata[k]; dup {
			return Graph{}, &ParseError{Line: i + 1, What: "invalid metadata", Detail: fmt.Sprintf("duplicate key %q", clip(k))}
		}
		if k == MetaDelimiter && v == "" {
			return Graph{}, &ParseError{Line: i + 1, What: "invalid metadata", Detail: "delimiter must not be empty"}
		}
		if g.Metadata == nil {
			g.Metadata = make(map[string]string)
		}
		g.Metadata[k] = v
	}
	if i >= len(lines) {
		return Graph{}, &ParseError{Line: len(lines), What: "missing metadata terminator", Detail: `no line "---" ends the metadata`}
	}
	if g.Metadata[MetaDelimiter] == DefaultDelimiter {
		delete(g.Metadata, MetaDelimiter)
	}
	delim := g.Delimiter()

	// Split the body into segments separated by delimiter lines.
	type segment struct{ start, end int } // line indexes [start, end)
	var segs []segment
	start := i + 1
	for j := start; j < len(lines); j++ {
		if lines[j] == delim {
			segs = append(segs, segment{start, j})
			start = j + 1
		}
	}
	segs = append(segs, segment{start, len(lines)})
	// Drop empty trailing segments.
	for len(segs) > 0 && blankLines(lines[segs[len(segs)-1].start:segs[len(segs)-1].end]) {
		segs = segs[:len(segs)-1]
	}
	g.Nodes = make([]Node, 0, len(segs))
	var sc scratch
	for _, s := range segs {
		n, err := sc.parseBlock(lines, s.start, s.end)
		if err != nil {
			return Graph{}, err
		}
		g.Nodes = append(g.Nodes, n)
	}
	return g, nil
}

// splitLines splits text into lines, dropping the empty piece after a final
// newline and every trailing carriage return (CRLF tolerance).
func splitLines(text string) []string {
	if text == "" {
		return nil
	}
	lines := make([]string, 0, strings.Count(text, "\n")+1)
	for len(text) > 0 {
		j := strings.IndexByte(text, '\n')
		var line string
		if j < 0 {
			line, text = text, ""
		} else {
			line, text = text[:j], text[j+1:]
		}
		lines = append(lines, strings.TrimRight(line, "\r"))
	}
	return lines
}

func blankLines(lines []string) bool {
	for _, l := range lines {
		if strings.TrimSpace(l) != "" {
			return false
		}
	}
	return true
}

func validMetaKey(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		if c := k[i]; !isIDChar(c) && c != '_' {
			return false
		}
	}
	return true
}

// attachmentClassOf returns the class of an attachment line (`@artifact `,
// `@guidance ` or `@file `) and the text after its prefix.
func attachmentClassOf(line string) (AttachmentClass, string, bool) {
	if len(line) == 0 || line[0] != '@' {
		return "", "", false
	}
	for _, c := range [...]AttachmentClass{ClassArtifact, ClassGuidance, ClassFile} {
		if rest, ok := strings.CutPrefix(line[1:], string(c)+" "); ok {
			return c, rest, true
		}
	}
	return "", "", false
}

// scratch holds buffers reused across blocks so each node's lists are
// allocated once, at their final size.
type scratch struct {
	deps, decisions, desc []string
}

// parseBlock parses lines[start:end] (a non-trailing segment) into a node.
func (sc *scratch) parseBlock(lines []string, start, end int) (Node, error) {
	h := start
	for h < end && strings.TrimSpace(lines[h]) == "" {
		h++
	}
	if h == end {
		return Node{}, &ParseError{Line: start + 1, What: "empty block", Detail: "a block between delimiters has no header"}
	}
	hd, problem := parseHeader(strings.TrimSpace(lines[h]))
	if problem != "" {
		return Node{}, &ParseError{Line: h + 1, What: "invalid header", Detail: problem}
	}
	n := Node{ID: hd.id, Kind: hd.kind, ShortName: hd.name, Status: hd.status, URI: hd.uri, Annotations: hd.ann}
	deps, decisions, desc := sc.deps[:0], sc.decisions[:0], sc.desc[:0]
	defer func() { sc.deps, sc.decisions, sc.desc = deps, decisions, desc }()
	for j := h + 1; j < end; j++ {
		line := lines[j]
		switch {
		case strings.HasPrefix(line, "-> "):
			dep := strings.TrimSpace(line[3:])
			if !ValidID(dep) {
				return Node{}, &ParseError{Line: j + 1, What: "invalid dependency", Detail: fmt.Sprintf("%q is not a valid id", clip(dep))}
			}
			deps = append(deps, dep)
		case strings.HasPrefix(line, "> "):
			decisions = append(decisions, line[2:])
		default:
			class, rest, ok := attachmentClassOf(line)
			if !ok {
				desc = append(desc, line)
				continue
			}
			if n.Kind == KindRef {
				return Node{}, &ParseError{Line: j + 1, What: ConstraintAttachmentOnRef, Detail: fmt.Sprintf("reference %q cannot carry an @%s line", n.ID, class)}
			}
			rest = strings.TrimSpace(rest)
			k := strings.IndexAny(rest, " \t")
			if k < 0 {
				return Node{}, &ParseError{Line: j + 1, What: "invalid attachment", Detail: fmt.Sprintf("want \"@%s <mime/type> <uri>\", got %q", class, clip(line))}
			}
			n.Attachments = append(n.Attachments, Attachment{Class: class, Mime: rest[:k], URI: strings.TrimSpace(rest[k:])})
		}
	}
	if len(desc) > 0 {
		n.Description = strings.Join(desc, "\n")
	}
	if len(deps) > 0 {
		n.Dependencies = slices.Clone(deps)
	}
	if len(decisions) > 0 {
		n.Decisions = slices.Clone(decisions)
	}
	canonicalize(&n)
	return n, nil
}

// canonicalize sorts and de-duplicates dependencies and groups attachments.
func canonicalize(n *Node) {
	if len(n.Dependencies) > 1 && !isSortedUnique(n.Dependencies) {
		slices.Sort(n.Dependencies)
		n.Dependencies = slices.Compact(n.Dependencies)
	}
	if len(n.Attachments) > 1 {
		slices.SortStableFunc(n.Attachments, func(a, b Attachment) int { return a.Class.rank() - b.Class.rank() })
	}
}

func isSortedUnique(s []string) bool {
	for i := 1; i < len(s); i++ {
		if s[i-1] >= s[i] {
			return false
		}
	}
	return true
}

// header is a parsed header line.
type header struct {
	kind   Kind
	id     string
	name   string
	status Status
	uri    string
	ann    map[string][]string
}

// parseHeader matches a (trimmed) header line: the reference form first, then
// the task form. On failure it returns a description of the problem.
func parseHeader(line string) (header, string) {
	if strings.HasPrefix(line, "ref") {
		if m, ok := matchHeader(line, true); ok {
			ann, problem := parseAnnotations(m[4])
			if problem != "" {
				return header{}, problem
			}
			return header{kind: KindRef, id: m[1], name: m[2], uri: m[3], ann: ann}, ""
		}
	}
	if m, ok := matchHeader(line, false); ok {
		ann, problem := parseAnnotations(m[4])
		if problem != "" {
			return header{}, problem
		}
		return header{kind: KindTask, id: m[1], name: m[2], status: Status(m[3]), ann: ann}, ""
	}
	return header{}, headerHint(line)
}

// matchHeader matches line against the reference (ref true) or task header
// grammar of VINE.md and returns the submatches as regexp.FindStringSubmatch
// would (whole line, id, name, status or uri, annotation tail). It is a
// linear-time scanner that reproduces the regexp's leftmost-first semantics,
// lazy name included; fuzzing checks it against the regexps verbatim.
func matchHeader(line string, ref bool) ([5]string, bool) {
	return scanHeader(line, ref)
}

// isRESpace reports whether c is in the regexp class \s, [\t\n\f\r ].
func isRESpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r'
}

// scanHeader implements matchHeader. It runs in linear time: each
// whitespace run is a candidate end of the name once, and annotation tails
// already checked for an earlier candidate are remembered.
func scanHeader(line string, ref bool) (m [5]string, ok bool) {
	p := 0
	if ref {
		if !strings.HasPrefix(line, "ref") {
			return m, false
		}
		p = 3
		q := p
		for q < len(line) && isRESpace(line[q]) {
			q++
		}
		if q == p {
			return m, false
		}
		p = q
	}
	if p >= len(line) || line[p] != '[' {
		return m, false
	}
	closing := strings.IndexByte(line[p:], ']')
	if closing < 0 {
		return m, false
	}
	closing += p
	id := line[p+1 : closing]
	if !ValidID(id) {
		return m, false
	}
	// \s+ after the id is greedy: first try the name starting at the first
	// non-space character s.
	s := closing + 1
	for s < len(line) && isRESpace(line[s]) {
		s++
	}
	if s == closing+1 || s == len(line) {
		return m, false
	}
	// Lazy name: the first whitespace run after the name's first character
	// whose suffix matches wins. The name cannot span a newline ('.').
	end := len(line)
	if nl := strings.IndexByte(line[s:], '\n'); nl >= 0 {
		end = s + nl + 1
	}
	var tails tailChecker
	// suffix matches \s+\((status|\S+)\)(annotations)$ where f is the end of
	// the whitespace run; it returns the status or uri and the tail start.
	suffix := func(f int) (string, int, bool) {
		if f >= len(line) || line[f] != '(' {
			return "", 0, false
		}
		var third string
		var tail int
		if ref {
			g := f + 1
			for g < len(line) && !isRESpace(line[g]) {
				g++
			}
			if g-1 <= f+1 || line[g-1] != ')' {
				return "", 0, false
			}
			third, tail = line[f+1:g-1], g
		} else {
			third = statusPrefix(line[f+1:])
			if third == "" {
				return "", 0, false
			}
			tail = f + 2 + len(third)
		}
		return third, tail, tails.ok(line, tail)
	}
	for e := s + 1; e < end; e++ {
		if !isRESpace(line[e]) || isRESpace(line[e-1]) {
			continue
		}
		f := e
		for f < len(line) && isRESpace(line[f]) {
			f++
		}
		if third, tail, ok := suffix(f); ok {
			return [5]string{line, id, line[s:e], third, line[tail:]}, true
		}
	}
	// Backtracking \s+ gives the name a leading whitespace character. A name
	// reaching past s meets the same suffixes as above, which all failed; so
	// the only remaining match is a one-character whitespace name followed by
	// whitespace up to s, preferring the name furthest right, never "\n".
	if third, tail, ok := suffix(s); ok {
		for n := s - 2; n >= closing+2; n-- {
			if line[n] != '\n' {
				return [5]string{line, id, line[n : n+1], third, line[tail:]}, true
			}
		}
	}
	return m, false
}

// statusPrefix returns the status t starts with, followed by ')', or "".
func statusPrefix(t string) string {
	for _, st := range [...]Status{StatusComplete, StatusStarted, StatusReviewing, StatusPlanning, StatusNotStarted, StatusBlocked} {
		if len(t) > len(st) && t[len(st)] == ')' && t[:len(st)] == string(st) {
			return string(st)
		}
	}
	return ""
}

// tailChecker decides whether line[p:] matches the annotation tail
// (\s+@[a-zA-Z][a-zA-Z0-9]*\([^)]*\))*$. From the second call on it
// remembers the outcome at every annotation boundary it visits, so repeated
// checks stay linear overall.
type tailChecker struct {
	calls int
	memo  []int8 // 0 unknown, 1 matches, -1 does not
}

func (c *tailChecker) ok(line string, p int) bool {
	c.calls++
	if c.calls == 1 {
		for p < len(line) {
			q, ok := nextAnnotation(line, p)
			if !ok {
				return false
			}
			p = q
		}
		return true
	}
	if c.memo == nil {
		c.memo = make([]int8, len(line)+1)
	}
	start := p
	result := int8(1)
	for p < len(line) {
		if v := c.memo[p]; v != 0 {
			result = v
			break
		}
		q, ok := nextAnnotation(line, p)
		if !ok {
			result = -1
			break
		}
		p = q
	}
	// Record the outcome along the path walked.
	for q := start; q < p; {
		c.memo[q] = result
		next, ok := nextAnnotation(line, q)
		if !ok {
			break
		}
		q = next
	}
	if p < len(line) && c.memo[p] == 0 {
		c.memo[p] = result
	}
	return result == 1
}

// nextAnnotation matches one \s+@key(values) at line[p:] and returns the
// position after it.
func nextAnnotation(line string, p int) (int, bool) {
	i := p
	for i < len(line) && isRESpace(line[i]) {
		i++
	}
	if i == p || i >= len(line) || line[i] != '@' {
		return 0, false
	}
	i++
	k := i
	for i < len(line) && (line[i] >= 'a' && line[i] <= 'z' || line[i] >= 'A' && line[i] <= 'Z' || i > k && line[i] >= '0' && line[i] <= '9') {
		i++
	}
	if i == k || i >= len(line) || line[i] != '(' {
		return 0, false
	}
	c := strings.IndexByte(line[i:], ')')
	if c < 0 {
		return 0, false
	}
	return i + c + 1, true
}

// parseAnnotations splits an annotation tail already matched by a header
// grammar, `( @key(v1,v2))*`, into a map. Values are split on "," and trimmed.
func parseAnnotations(tail string) (map[string][]string, string) {
	var ann map[string][]string
	for {
		at := strings.IndexByte(tail, '@')
		if at < 0 {
			return ann, ""
		}
		tail = tail[at+1:]
		open := strings.IndexByte(tail, '(')
		closing := strings.IndexByte(tail, ')')
		key, raw := tail[:open], tail[open+1:closing]
		tail = tail[closing+1:]
		if _, dup := ann[key]; dup {
			return nil, fmt.Sprintf("duplicate annotation @%s", clip(key))
		}
		vals := strings.Split(raw, ",")
		for i, v := range vals {
			vals[i] = strings.TrimSpace(v)
		}
		if ann == nil {
			ann = make(map[string][]string)
		}
		ann[key] = vals
	}
}

// headerHint explains why line is not a header.
func headerHint(line string) string {
	const want = `want "[id] Short Name (status)" or "ref [id] Short Name (uri)"`
	quoted := clip(line)
	body := line
	isRef := strings.HasPrefix(line, "ref")
	if isRef {
		body = strings.TrimLeft(line[3:], " \t")
	}
	if !strings.HasPrefix(body, "[") {
		return fmt.Sprintf("%s, got %q", want, quoted)
	}
	closing := strings.IndexByte(body, ']')
	if closing < 0 {
		return fmt.Sprintf("missing ']' after the id in %q", quoted)
	}
	if id := body[1:closing]; !ValidID(id) {
		return fmt.Sprintf("id %q does not match [a-zA-Z0-9-]+(/[a-zA-Z0-9-]+)* in %q", clip(id), quoted)
	}
	if !isRef {
		if o := strings.LastIndexByte(body, '('); o > closing {
			if c := strings.IndexByte(body[o:], ')'); c > 0 {
				if s := Status(body[o+1 : o+c]); !s.Valid() && !strings.Contains(body[o:], "@") {
					return fmt.Sprintf("unknown status %q (want one of complete, started, reviewing, planning, notstarted, blocked) in %q", clip(string(s)), quoted)
				}
			}
		}
	}
	return fmt.Sprintf("%s, got %q", want, quoted)
}

// clip shortens s for an error message.
func clip(s string) string {
	const max = 160
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}
