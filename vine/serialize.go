package vine

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"
)

// Serialize writes g as canonical VINE 1.2.0 text: the magic line, known
// metadata keys in alphabetical order then unknown keys in alphabetical order
// (a default delimiter is not written), "---", then the blocks in graph order
// joined by the delimiter. Header annotations are sorted by key; a block's
// body is its description, dependencies sorted by id, decisions in order, then
// attachments grouped artifact, guidance, file. The text ends with one
// newline and no trailing delimiter.
//
// Serialize checks syntax, not the graph constraints (see Validate). It
// refuses, with an *Error of code CodeInvalid naming the node and field, any
// graph whose text would read back differently: for example a description
// line starting with "-> " or "> ", a line equal to the delimiter, a line
// break in a name or decision, an id outside the id grammar or an empty name.
func Serialize(g Graph) (string, error) {
	var b strings.Builder
	b.Grow(64 + 96*len(g.Nodes))
	b.WriteString("vine " + WriteVersion + "\n")
	if err := writeMetadata(&b, g.Metadata); err != nil {
		return "", err
	}
	b.WriteString("---\n")
	delim := g.Delimiter()
	for i := range g.Nodes {
		if i > 0 {
			b.WriteString(delim)
			b.WriteByte('\n')
		}
		if err := writeNode(&b, &g.Nodes[i], delim); err != nil {
			return "", err
		}
	}
	return b.String(), nil
}

func writeMetadata(b *strings.Builder, meta map[string]string) error {
	keys := make([]string, 0, len(meta))
	for _, k := range []string{MetaDelimiter, MetaPrefix, MetaTitle} {
		if _, ok := meta[k]; ok {
			keys = append(keys, k)
		}
	}
	var unknown []string
	for k := range maps.Keys(meta) {
		if k != MetaDelimiter && k != MetaPrefix && k != MetaTitle {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(unknown)
	keys = append(keys, unknown...)
	for _, k := range keys {
		v := meta[k]
		if k == MetaDelimiter && v == DefaultDelimiter {
			continue
		}
		if !validMetaKey(k) {
			return errf(CodeInvalid, "cannot serialize metadata key %q: keys must match [A-Za-z0-9_-]+", k)
		}
		if strings.Contains(v, "\n") || strings.TrimSpace(v) != v {
			return errf(CodeInvalid, "cannot serialize metadata %q: value %q has a line break or surrounding whitespace", k, v)
		}
		if k == MetaDelimiter && v == "" {
			return errf(CodeInvalid, "cannot serialize metadata %q: the delimiter must not be empty", k)
		}
		b.WriteString(k)
		b.WriteString(": ")
		b.WriteString(v)
		b.WriteByte('\n')
	}
	return nil
}

// checkNode reports whether n can be written and read back unchanged with
// the given delimiter, without producing any text.
func checkNode(n *Node, delim string) error {
	var b strings.Builder
	return writeNode(&b, n, delim)
}

func nodeErr(n *Node, format string, args ...any) error {
	return errf(CodeInvalid, "cannot serialize node %q: %s", n.ID, fmt.Sprintf(format, args...))
}

// writeNode appends n's block, each line followed by "\n".
func writeNode(b *strings.Builder, n *Node, delim string) error {
	line, err := headerLine(n)
	if err != nil {
		return err
	}
	writeLine := func(field, l string) error {
		if l == delim {
			return nodeErr(n, "%s line %q equals the block delimiter", field, l)
		}
		if strings.HasSuffix(l, "\r") {
			return nodeErr(n, "%s line %q ends with a carriage return", field, l)
		}
		b.WriteString(l)
		b.WriteByte('\n')
		return nil
	}
	if err := writeLine("header", line); err != nil {
		return err
	}
	if n.Description != "" {
		for l := range strings.SplitSeq(n.Description, "\n") {
			switch {
			case strings.HasPrefix(l, "-> "):
				return nodeErr(n, "description line %q starts with \"-> \" and would be read as a dependency", l)
			case strings.HasPrefix(l, "> "):
				return nodeErr(n, "description line %q starts with \"> \" and would be read as a decision", l)
			}
			if _, _, ok := attachmentClassOf(l); ok {
				return nodeErr(n, "description line %q would be read as an attachment", l)
			}
			if err := writeLine("description", l); err != nil {
				return err
			}
		}
	}
	deps := n.Dependencies
	if !isSortedUnique(deps) {
		deps = slices.Clone(deps)
		slices.Sort(deps)
		deps = slices.Compact(deps)
	}
	for _, d := range deps {
		if !ValidID(d) {
			return nodeErr(n, "dependency %q is outside the id grammar", d)
		}
		if err := writeLine("dependency", "-> "+d); err != nil {
			return err
		}
	}
	for _, d := range n.Decisions {
		if strings.Contains(d, "\n") {
			return nodeErr(n, "decision %q contains a line break", d)
		}
		if err := writeLine("decision", "> "+d); err != nil {
			return err
		}
	}
	if len(n.Attachments) > 0 && n.Kind == KindRef {
		return &ValidationError{Constraint: ConstraintAttachmentOnRef, IDs: []string{n.ID},
			Detail: fmt.Sprintf("cannot serialize reference %q: references carry no attachments", n.ID)}
	}
	for rank := range 3 {
		for _, a := range n.Attachments {
			if a.Class.rank() != rank {
				continue
			}
			if err := checkAttachment(a); err != nil {
				return nodeErr(n, "%v", err)
			}
			if err := writeLine("attachment", "@"+string(a.Class)+" "+a.Mime+" "+a.URI); err != nil {
				return err
			}
		}
	}
	for _, a := range n.Attachments {
		if !a.Class.Valid() {
			return nodeErr(n, "attachment class %q is not artifact, guidance or file", a.Class)
		}
	}
	return nil
}

// checkAttachment reports an attachment that would not read back unchanged.
func checkAttachment(a Attachment) error {
	if a.Mime == "" || strings.TrimLeftFunc(a.Mime, unicode.IsSpace) != a.Mime || strings.ContainsAny(a.Mime, " \t\n") {
		return fmt.Errorf("attachment mime type %q must be one word", a.Mime)
	}
	if a.URI == "" || strings.TrimSpace(a.URI) != a.URI || strings.Contains(a.URI, "\n") {
		return fmt.Errorf("attachment uri %q must be non-empty, on one line, without surrounding whitespace", a.URI)
	}
	return nil
}

// headerLine builds n's header and checks that it reads back unchanged.
func headerLine(n *Node) (string, error) {
	if !ValidID(n.ID) {
		return "", nodeErr(n, "id is outside the id grammar [a-zA-Z0-9-]+(/[a-zA-Z0-9-]+)*")
	}
	if n.ShortName == "" {
		return "", nodeErr(n, "empty name")
	}
	if strings.Contains(n.ShortName, "\n") {
		return "", nodeErr(n, "name %q contains a line break", n.ShortName)
	}
	var b strings.Builder
	switch n.Kind {
	case KindTask:
		if !n.Status.Valid() {
			return "", nodeErr(n, "unknown status %q", n.Status)
		}
		if n.URI != "" {
			return "", nodeErr(n, "a task cannot have a vine uri (%q)", n.URI)
		}
		b.WriteString("[" + n.ID + "] " + n.ShortName + " (" + string(n.Status) + ")")
	case KindRef:
		if n.Status != "" {
			return "", nodeErr(n, "a reference cannot have a status (%q)", n.Status)
		}
		if n.URI == "" || strings.ContainsAny(n.URI, " \t\n\f\r") {
			return "", nodeErr(n, "reference uri %q must be one non-empty word", n.URI)
		}
		b.WriteString("ref [" + n.ID + "] " + n.ShortName + " (" + n.URI + ")")
	default:
		return "", nodeErr(n, "unknown kind %q", n.Kind)
	}
	keys := slices.Sorted(maps.Keys(n.Annotations))
	for _, k := range keys {
		vals := n.Annotations[k]
		if !validAnnotationKey(k) {
			return "", nodeErr(n, "annotation key %q must match [a-zA-Z][a-zA-Z0-9]*", k)
		}
		if len(vals) == 0 {
			return "", nodeErr(n, "annotation @%s has no values (use [\"\"] for a flag)", k)
		}
		for _, v := range vals {
			if strings.ContainsAny(v, ",)\n\r") || strings.TrimSpace(v) != v {
				return "", nodeErr(n, "annotation @%s value %q contains ',', ')', a line break or surrounding whitespace", k, v)
			}
		}
		b.WriteString(" @" + k + "(" + strings.Join(vals, ",") + ")")
	}
	line := b.String()
	h, problem := parseHeader(line)
	if problem != "" || h.kind != n.Kind || h.id != n.ID || h.name != n.ShortName || h.status != n.Status ||
		h.uri != n.URI || !maps.EqualFunc(h.ann, n.Annotations, slices.Equal[[]string]) {
		return "", nodeErr(n, "header %q would read back differently (check the name %q)", line, n.ShortName)
	}
	return line, nil
}

func validAnnotationKey(k string) bool {
	if k == "" || !(k[0] >= 'a' && k[0] <= 'z' || k[0] >= 'A' && k[0] <= 'Z') {
		return false
	}
	for i := 1; i < len(k); i++ {
		if c := k[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
