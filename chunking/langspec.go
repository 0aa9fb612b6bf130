package chunking

import (
	"strings"
	"unicode"
	"unicode/utf8"

	sitter "github.com/tree-sitter/go-tree-sitter"
)

// scope is where a definition sits: the qualifier of its names and whether
// functions there are methods.
type scope struct {
	qual    string
	inClass bool
}

func (s scope) qualify(name string) string {
	if s.qual == "" {
		return name
	}
	return s.qual + "." + name
}

// defInfo describes one definition node found by a language's classifier.
type defInfo struct {
	node    sitter.Node  // the whole definition (including wrappers such as export or decorators)
	kind    string       // chunk type
	qual    string       // qualified name
	tags    []string     // async, decorated, exported, test
	body    *sitter.Node // for containers: the node whose children are members
	members scope        // the scope of the members
	stubRow int          // the signature line, shown in the parent's class chunk
}

// spec holds a language's rules for finding definitions.
type spec struct {
	lang string
	data []byte
}

// commentKinds are node kinds of comments in all supported grammars.
var commentKinds = map[string]bool{"comment": true, "line_comment": true, "block_comment": true}

// attachable reports whether n (a comment, decorator or attribute) attaches
// to a definition directly below it.
func (sp spec) attachable(n *sitter.Node) bool {
	k := n.Kind()
	if commentKinds[k] {
		return true
	}
	switch sp.lang {
	case LangRust:
		return k == "attribute_item"
	case LangJavaScript, LangTypeScript, LangTSX:
		return k == "decorator"
	}
	return false
}

// attachTags returns the tags implied by attached comments, decorators and
// attributes.
func (sp spec) attachTags(attached []sitter.Node) []string {
	var tags []string
	for i := range attached {
		a := &attached[i]
		switch a.Kind() {
		case "decorator":
			tags = append(tags, "decorated")
		case "attribute_item":
			tags = append(tags, "decorated")
			if isRustTestAttr(nodeText(a, sp.data)) {
				tags = append(tags, "test")
			}
		}
	}
	return tags
}

func isRustTestAttr(s string) bool {
	s = strings.ReplaceAll(s, " ", "")
	return strings.HasPrefix(s, "#[test") || strings.Contains(s, "::test]") || strings.Contains(s, "::test(") ||
		strings.HasPrefix(s, "#[cfg(test)")
}

// members returns the member nodes of a container body.
func (sp spec) members(body *sitter.Node) []sitter.Node {
	var out []sitter.Node
	for _, ch := range namedChildren(body) {
		if ch.Kind() == "enum_body_declarations" || ch.Kind() == "ERROR" {
			out = append(out, namedChildren(&ch)...)
			continue
		}
		out = append(out, ch)
	}
	return out
}

// classify reports whether n is a definition in scope sc.
func (sp spec) classify(n *sitter.Node, sc scope) (defInfo, bool) {
	switch sp.lang {
	case LangPython:
		return sp.python(n, sc)
	case LangGo:
		return sp.golang(n, sc)
	case LangJavaScript, LangTypeScript, LangTSX:
		return sp.javascript(n, sc)
	case LangRust:
		return sp.rust(n, sc)
	case LangJava:
		return sp.java(n, sc)
	}
	return defInfo{}, false
}

func (sp spec) text(n *sitter.Node) string { return oneLine(nodeText(n, sp.data)) }

func (sp spec) fieldText(n *sitter.Node, field string) string {
	return sp.text(n.ChildByFieldName(field))
}

// nameRow returns the line of n's name field, or of n itself.
func nameRow(n *sitter.Node) int {
	if nm := n.ChildByFieldName("name"); nm != nil {
		return startRow(nm)
	}
	return startRow(n)
}

func funcKind(sc scope) string {
	if sc.inClass {
		return TypeMethod
	}
	return TypeFunction
}

func pyPublic(name string) bool { return name != "" && !strings.HasPrefix(name, "_") }

func upperFirst(name string) bool {
	r, _ := utf8.DecodeRuneInString(name)
	return unicode.IsUpper(r)
}

// ---- Python ----

func (sp spec) python(n *sitter.Node, sc scope) (defInfo, bool) {
	switch n.Kind() {
	case "decorated_definition":
		inner := n.ChildByFieldName("definition")
		if inner == nil {
			return defInfo{}, false
		}
		d, ok := sp.python(inner, sc)
		if !ok {
			return defInfo{}, false
		}
		d.node = *n
		d.tags = append(d.tags, "decorated")
		return d, true
	case "function_definition":
		name := sp.fieldText(n, "name")
		d := defInfo{node: *n, kind: funcKind(sc), qual: sc.qualify(name), stubRow: nameRow(n)}
		if hasChildKind(n, "async") {
			d.tags = append(d.tags, "async")
		}
		if pyPublic(name) {
			d.tags = append(d.tags, "exported")
		}
		return d, true
	case "class_definition":
		name := sp.fieldText(n, "name")
		d := defInfo{node: *n, kind: TypeClass, qual: sc.qualify(name), stubRow: nameRow(n),
			body: n.ChildByFieldName("body")}
		d.members = scope{qual: d.qual, inClass: true}
		if pyPublic(name) {
			d.tags = append(d.tags, "exported")
		}
		return d, true
	}
	return defInfo{}, false
}

// ---- Go ----

func (sp spec) golang(n *sitter.Node, sc scope) (defInfo, bool) {
	switch n.Kind() {
	case "function_declaration":
		name := sp.fieldText(n, "name")
		d := defInfo{node: *n, kind: TypeFunction, qual: sc.qualify(name), stubRow: nameRow(n)}
		if upperFirst(name) {
			d.tags = append(d.tags, "exported")
		}
		return d, true
	case "method_declaration":
		name := sp.fieldText(n, "name")
		recv := goReceiverType(sp.text(n.ChildByFieldName("receiver")))
		q := name
		if recv != "" {
			q = recv + "." + name
		}
		d := defInfo{node: *n, kind: TypeMethod, qual: sc.qualify(q), stubRow: nameRow(n)}
		if upperFirst(name) {
			d.tags = append(d.tags, "exported")
		}
		return d, true
	case "type_declaration":
		var names []string
		for _, ch := range namedChildren(n) {
			if ch.Kind() == "type_spec" || ch.Kind() == "type_alias" {
				names = append(names, sp.fieldText(&ch, "name"))
			}
		}
		if len(names) == 0 {
			return defInfo{}, false
		}
		d := defInfo{node: *n, kind: TypeType, qual: sc.qualify(strings.Join(names, ", ")), stubRow: startRow(n)}
		if upperFirst(names[0]) {
			d.tags = append(d.tags, "exported")
		}
		return d, true
	}
	return defInfo{}, false
}

// goReceiverType extracts the type name from a receiver list such as
// "(r *Reader[T])".
func goReceiverType(recv string) string {
	recv = strings.Trim(recv, "() ")
	if i := strings.IndexByte(recv, '['); i >= 0 {
		recv = recv[:i]
	}
	f := strings.Fields(recv)
	if len(f) == 0 {
		return ""
	}
	t := f[len(f)-1]
	t = strings.TrimLeft(t, "*(")
	return strings.TrimRight(t, ")")
}

// ---- JavaScript / TypeScript / TSX ----

func isJSFunctionValue(k string) bool {
	switch k {
	case "arrow_function", "function_expression", "function", "generator_function":
		return true
	}
	return false
}

func (sp spec) javascript(n *sitter.Node, sc scope) (defInfo, bool) {
	switch n.Kind() {
	case "export_statement":
		var d defInfo
		var ok bool
		if decl := n.ChildByFieldName("declaration"); decl != nil {
			d, ok = sp.javascript(decl, sc)
		} else if v := n.ChildByFieldName("value"); v != nil {
			k := v.Kind()
			switch {
			case isJSFunctionValue(k):
				d, ok = defInfo{kind: funcKind(sc), qual: sc.qualify(orDefault(sp.fieldText(v, "name"))), stubRow: startRow(n)}, true
				if hasChildKind(v, "async") {
					d.tags = append(d.tags, "async")
				}
			case k == "class":
				d, ok = defInfo{kind: TypeClass, qual: sc.qualify(orDefault(sp.fieldText(v, "name"))), stubRow: startRow(n),
					body: v.ChildByFieldName("body")}, true
				d.members = scope{qual: d.qual, inClass: true}
			}
		}
		if !ok {
			return defInfo{}, false
		}
		d.node = *n
		d.tags = append(d.tags, "exported")
		if hasChildKind(n, "decorator") {
			d.tags = append(d.tags, "decorated")
		}
		return d, true
	case "function_declaration", "generator_function_declaration":
		d := defInfo{node: *n, kind: funcKind(sc), qual: sc.qualify(sp.fieldText(n, "name")), stubRow: nameRow(n)}
		if hasChildKind(n, "async") {
			d.tags = append(d.tags, "async")
		}
		return d, true
	case "class_declaration", "abstract_class_declaration":
		d := defInfo{node: *n, kind: TypeClass, qual: sc.qualify(sp.fieldText(n, "name")), stubRow: nameRow(n),
			body: n.ChildByFieldName("body")}
		d.members = scope{qual: d.qual, inClass: true}
		if hasChildKind(n, "decorator") {
			d.tags = append(d.tags, "decorated")
		}
		return d, true
	case "interface_declaration", "type_alias_declaration", "enum_declaration":
		return defInfo{node: *n, kind: TypeType, qual: sc.qualify(sp.fieldText(n, "name")), stubRow: nameRow(n)}, true
	case "method_definition":
		if !sc.inClass {
			return defInfo{}, false
		}
		d := defInfo{node: *n, kind: TypeMethod, qual: sc.qualify(sp.fieldText(n, "name")), stubRow: nameRow(n)}
		if hasChildKind(n, "async") {
			d.tags = append(d.tags, "async")
		}
		if hasChildKind(n, "decorator") {
			d.tags = append(d.tags, "decorated")
		}
		return d, true
	case "lexical_declaration", "variable_declaration":
		// const f = () => {...}; const C = class {...}
		decls := namedChildren(n)
		if len(decls) != 1 || decls[0].Kind() != "variable_declarator" {
			return defInfo{}, false
		}
		v := decls[0].ChildByFieldName("value")
		if v == nil {
			return defInfo{}, false
		}
		name := sp.fieldText(&decls[0], "name")
		switch {
		case isJSFunctionValue(v.Kind()):
			d := defInfo{node: *n, kind: funcKind(sc), qual: sc.qualify(name), stubRow: startRow(n)}
			if hasChildKind(v, "async") {
				d.tags = append(d.tags, "async")
			}
			return d, true
		case v.Kind() == "class":
			d := defInfo{node: *n, kind: TypeClass, qual: sc.qualify(name), stubRow: startRow(n), body: v.ChildByFieldName("body")}
			d.members = scope{qual: d.qual, inClass: true}
			return d, true
		}
	case "expression_statement":
		ch := namedChildren(n)
		if len(ch) != 1 {
			return defInfo{}, false
		}
		e := &ch[0]
		switch e.Kind() {
		case "internal_module", "module": // namespace N { ... }
			name := sp.fieldText(e, "name")
			body := e.ChildByFieldName("body")
			if body == nil {
				return defInfo{}, false
			}
			d := defInfo{node: *n, kind: TypeModule, qual: sc.qualify(name), stubRow: startRow(n), body: body}
			d.members = scope{qual: d.qual}
			return d, true
		case "assignment_expression": // exports.f = function () {}; Foo.prototype.bar = ...
			r := e.ChildByFieldName("right")
			if r != nil && r.Kind() == "class" { // module.exports = class Foo {...}
				name := sp.fieldText(r, "name")
				if name == "" {
					name = sp.fieldText(e, "left")
				}
				d := defInfo{node: *n, kind: TypeClass, qual: sc.qualify(name), stubRow: startRow(n), body: r.ChildByFieldName("body")}
				d.members = scope{qual: d.qual, inClass: true}
				return d, true
			}
			if r == nil || !isJSFunctionValue(r.Kind()) {
				return defInfo{}, false
			}
			d := defInfo{node: *n, kind: funcKind(sc), qual: sc.qualify(sp.fieldText(e, "left")), stubRow: startRow(n)}
			if hasChildKind(r, "async") {
				d.tags = append(d.tags, "async")
			}
			return d, true
		}
	}
	return defInfo{}, false
}

func orDefault(name string) string {
	if name == "" {
		return "default"
	}
	return name
}

// ---- Rust ----

func (sp spec) rust(n *sitter.Node, sc scope) (defInfo, bool) {
	pub := childOfKind(n, "visibility_modifier") != nil
	var d defInfo
	switch n.Kind() {
	case "function_item":
		d = defInfo{node: *n, kind: funcKind(sc), qual: sc.qualify(sp.fieldText(n, "name")), stubRow: nameRow(n)}
		if m := childOfKind(n, "function_modifiers"); m != nil && strings.Contains(sp.text(m), "async") {
			d.tags = append(d.tags, "async")
		}
	case "struct_item", "enum_item", "union_item", "type_item":
		d = defInfo{node: *n, kind: TypeType, qual: sc.qualify(sp.fieldText(n, "name")), stubRow: nameRow(n)}
	case "trait_item":
		d = defInfo{node: *n, kind: TypeType, qual: sc.qualify(sp.fieldText(n, "name")), stubRow: nameRow(n),
			body: n.ChildByFieldName("body")}
		d.members = scope{qual: d.qual, inClass: true}
	case "impl_item":
		typ := sp.rustTypeName(n.ChildByFieldName("type"))
		name := "impl " + typ
		if tr := n.ChildByFieldName("trait"); tr != nil {
			name = "impl " + sp.text(tr) + " for " + typ
		}
		d = defInfo{node: *n, kind: TypeType, qual: sc.qualify(name), stubRow: startRow(n),
			body: n.ChildByFieldName("body")}
		d.members = scope{qual: sc.qualify(typ), inClass: true}
	case "mod_item":
		body := n.ChildByFieldName("body")
		if body == nil {
			return defInfo{}, false
		}
		d = defInfo{node: *n, kind: TypeModule, qual: sc.qualify(sp.fieldText(n, "name")), stubRow: nameRow(n), body: body}
		d.members = scope{qual: d.qual}
	case "macro_definition":
		d = defInfo{node: *n, kind: TypeFunction, qual: sc.qualify(sp.fieldText(n, "name")), stubRow: nameRow(n)}
	default:
		return defInfo{}, false
	}
	if pub {
		d.tags = append(d.tags, "exported")
	}
	return d, true
}

// rustTypeName returns the plain name of a type: Foo for Foo<T>, &Foo or
// &mut Foo<'a>.
func (sp spec) rustTypeName(n *sitter.Node) string {
	if n == nil {
		return ""
	}
	switch n.Kind() {
	case "generic_type", "reference_type", "pointer_type":
		if t := n.ChildByFieldName("type"); t != nil {
			return sp.rustTypeName(t)
		}
	}
	return sp.text(n)
}

// ---- Java ----

func (sp spec) java(n *sitter.Node, sc scope) (defInfo, bool) {
	var d defInfo
	switch n.Kind() {
	case "class_declaration", "record_declaration", "enum_declaration":
		d = defInfo{node: *n, kind: TypeClass, qual: sc.qualify(sp.fieldText(n, "name")), stubRow: nameRow(n),
			body: n.ChildByFieldName("body")}
		d.members = scope{qual: d.qual, inClass: true}
	case "interface_declaration", "annotation_type_declaration":
		d = defInfo{node: *n, kind: TypeType, qual: sc.qualify(sp.fieldText(n, "name")), stubRow: nameRow(n),
			body: n.ChildByFieldName("body")}
		d.members = scope{qual: d.qual, inClass: true}
	case "method_declaration", "constructor_declaration", "compact_constructor_declaration":
		if n.ChildByFieldName("body") == nil { // abstract and interface methods stay in the header
			return defInfo{}, false
		}
		d = defInfo{node: *n, kind: TypeMethod, qual: sc.qualify(sp.fieldText(n, "name")), stubRow: nameRow(n)}
	default:
		return defInfo{}, false
	}
	if mods := childOfKind(n, "modifiers"); mods != nil {
		for _, m := range namedChildren(mods) {
			if m.Kind() == "marker_annotation" || m.Kind() == "annotation" {
				d.tags = append(d.tags, "decorated")
				if an := sp.fieldText(&m, "name"); an == "Test" || an == "ParameterizedTest" || an == "RepeatedTest" {
					d.tags = append(d.tags, "test")
				}
			}
		}
		if hasChildKind(mods, "public") {
			d.tags = append(d.tags, "exported")
		}
	}
	return d, true
}
