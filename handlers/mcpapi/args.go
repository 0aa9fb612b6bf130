package mcpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/trellis/trellis"
)

// param documents one tool argument: its JSON name, the description an
// agent reads, and an optional refinement of the inferred schema (bounds,
// enums).
type param struct {
	name   string
	desc   string
	refine func(*jsonschema.Schema)
}

// inputSchema infers the JSON Schema of the argument type T (whose JSON
// field names are the argument names), then documents it from params: each
// property gets its description, the properties are listed in params' order
// and only the named ones are required. The inferred schema forbids
// additional properties; decodeArgs enforces that and every type.
//
// params must name every property of T exactly once: a mismatch is a
// programming error and panics when the server is built.
func inputSchema[T any](tool string, params []param, required ...string) *jsonschema.Schema {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(fmt.Sprintf("mcpapi: %s input schema: %v", tool, err))
	}
	if len(params) != len(s.Properties) {
		panic(fmt.Sprintf("mcpapi: %s documents %d arguments, its type has %d", tool, len(params), len(s.Properties)))
	}
	s.PropertyOrder = nil
	for _, p := range params {
		ps, ok := s.Properties[p.name]
		if !ok || slices.Contains(s.PropertyOrder, p.name) {
			panic(fmt.Sprintf("mcpapi: %s: argument %q is not a field of its type or is documented twice", tool, p.name))
		}
		ps.Description = p.desc
		if p.refine != nil {
			p.refine(ps)
		}
		s.PropertyOrder = append(s.PropertyOrder, p.name)
	}
	for _, r := range required {
		if _, ok := s.Properties[r]; !ok {
			panic(fmt.Sprintf("mcpapi: %s: required argument %q is not documented", tool, r))
		}
	}
	s.Required = required
	plainTypes(s)
	return s
}

// plainTypes replaces every union type of s and its subschemas that adds
// "null" to one type (["null","array"], which schema inference gives
// slices, maps and pointers) by that type alone. Clients render and send
// arguments by their declared type; MCP Inspector sends a union-typed
// argument as a string. An optional argument is simply not required;
// decodeArgs still accepts null for one.
func plainTypes(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	if len(s.Types) > 0 {
		var plain []string
		for _, t := range s.Types {
			if t != "null" {
				plain = append(plain, t)
			}
		}
		if len(plain) == 1 {
			s.Type, s.Types = plain[0], nil
		}
	}
	for _, p := range s.Properties {
		plainTypes(p)
	}
	for _, sub := range []*jsonschema.Schema{s.Items, s.AdditionalProperties, s.Not, s.Contains, s.PropertyNames,
		s.If, s.Then, s.Else, s.UnevaluatedItems, s.UnevaluatedProperties} {
		plainTypes(sub)
	}
	for _, list := range [][]*jsonschema.Schema{s.AllOf, s.AnyOf, s.OneOf, s.PrefixItems} {
		for _, sub := range list {
			plainTypes(sub)
		}
	}
	for _, m := range []map[string]*jsonschema.Schema{s.PatternProperties, s.Defs, s.Definitions, s.DependentSchemas} {
		for _, sub := range m {
			plainTypes(sub)
		}
	}
}

// between bounds an integer argument to [lo, hi].
func between(lo, hi int) func(*jsonschema.Schema) {
	return func(s *jsonschema.Schema) {
		s.Minimum = jsonschema.Ptr(float64(lo))
		s.Maximum = jsonschema.Ptr(float64(hi))
	}
}

// oneOf restricts a string argument to the given values.
func oneOf[S ~string](vals ...S) func(*jsonschema.Schema) {
	return func(s *jsonschema.Schema) {
		for _, v := range vals {
			s.Enum = append(s.Enum, string(v))
		}
	}
}

// decodeArgs decodes a tool's raw arguments into dst, strictly: the
// arguments must be a JSON object, every key must be an argument the schema
// declares (exact spelling), every key of an object argument with declared
// properties (search_chunks filters) must be one of them, and every value
// must have the argument's type. An array or object argument may also be
// given as a string holding its JSON (clients that cannot render the
// argument send that); the string must hold valid JSON of the argument's
// shape, which is then decoded by the same rules. Failures are
// invalid-input *trellis.Errors naming the argument. Absent arguments (no
// object at all) decode as {}. Value rules (empty, negative, too long) are
// left to the request's Normalize.
func decodeArgs(tool string, schema *jsonschema.Schema, raw json.RawMessage, dst any) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return trellis.FieldError("arguments", "must be a JSON object of named arguments")
	}
	var unknown []string
	for k := range fields {
		if _, ok := schema.Properties[k]; !ok {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		what := "is not an argument"
		if len(unknown) > 1 {
			what = "are not arguments"
		}
		return trellis.FieldError(strings.Join(unknown, ", "), "%s of %s; it accepts %s",
			what, tool, strings.Join(schema.PropertyOrder, ", "))
	}
	decoded := false
	for _, k := range schema.PropertyOrder {
		v, ok := fields[k]
		if !ok {
			continue
		}
		ps := schema.Properties[k]
		if enc, err := unwrapEncoded(k, ps, v); err != nil {
			return err
		} else if enc != nil {
			fields[k], v, decoded = enc, enc, true
		}
		if err := checkKeys(k, ps, v); err != nil {
			return err
		}
	}
	if decoded {
		var err error
		if raw, err = json.Marshal(fields); err != nil {
			return trellis.FieldError("arguments", "cannot be decoded: %v", err)
		}
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			name, sub := fieldSchema(schema, te.Field)
			return trellis.FieldError(name, "must be %s, not %s", describeType(sub), te.Value)
		}
		return trellis.FieldError("arguments", "cannot be decoded: %v", err)
	}
	return nil
}

// unwrapEncoded returns the JSON held by v when v is a string given for
// an array or object argument (nil when it is not such a string), or an
// invalid-input error naming the argument when the string does not hold
// one JSON value of the argument's shape.
func unwrapEncoded(name string, ps *jsonschema.Schema, v json.RawMessage) (json.RawMessage, error) {
	typ := schemaType(ps)
	if (typ != "array" && typ != "object") || len(v) == 0 || v[0] != '"' {
		return nil, nil
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return nil, trellis.FieldError(name, "cannot be decoded: %v", err)
	}
	inner := bytes.TrimSpace([]byte(s))
	if !json.Valid(inner) {
		return nil, trellis.FieldError(name, "must be %s; the string given is not valid JSON: %q", describeType(ps), oneLine(s, 60))
	}
	if open := map[string]byte{"array": '[', "object": '{'}[typ]; inner[0] != open {
		return nil, trellis.FieldError(name, "must be %s; the string given holds %s", describeType(ps), jsonKind(inner[0]))
	}
	return inner, nil
}

// checkKeys reports a key of an object argument that its schema does not
// declare, when the schema declares its keys (a struct, not a map).
func checkKeys(name string, ps *jsonschema.Schema, v json.RawMessage) error {
	if schemaType(ps) != "object" || ps.Properties == nil || len(v) == 0 || v[0] != '{' {
		return nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(v, &obj); err != nil {
		return nil // a type error the decoding reports
	}
	var unknown []string
	for k := range obj {
		if _, ok := ps.Properties[k]; !ok {
			unknown = append(unknown, strconv.Quote(k))
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	keys := slices.Sorted(maps.Keys(ps.Properties))
	return trellis.FieldError(name, "unknown key %s; it takes %s", strings.Join(unknown, ", "), strings.Join(keys, ", "))
}

// fieldSchema resolves a dotted field path of a decoding error
// ("filters.tags") to the name to report and its schema: the whole path
// when every step is a declared property, else the argument alone.
func fieldSchema(schema *jsonschema.Schema, path string) (string, *jsonschema.Schema) {
	name, _, _ := strings.Cut(path, ".")
	top := schema.Properties[name]
	s := schema
	for _, step := range strings.Split(path, ".") {
		if s == nil || s.Properties[step] == nil {
			return name, top
		}
		s = s.Properties[step]
	}
	return path, s
}

// schemaType is the one type a schema declares ("" when none or several).
func schemaType(s *jsonschema.Schema) string {
	if s == nil {
		return ""
	}
	if s.Type != "" {
		return s.Type
	}
	var typ string
	for _, t := range s.Types {
		if t != "null" {
			if typ != "" {
				return ""
			}
			typ = t
		}
	}
	return typ
}

// jsonKind names the kind of JSON value starting with c.
func jsonKind(c byte) string {
	switch c {
	case '[':
		return "an array"
	case '{':
		return "an object"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// describeType names the JSON type a property schema expects, for error
// messages: "an integer", "an array of strings", ...
func describeType(s *jsonschema.Schema) string {
	if s == nil {
		return "a valid value"
	}
	switch schemaType(s) {
	case "string":
		return "a string"
	case "integer":
		return "an integer"
	case "number":
		return "a number"
	case "boolean":
		return "true or false"
	case "array":
		if s.Items != nil {
			return "an array of " + strings.TrimPrefix(strings.TrimPrefix(describeType(s.Items), "an "), "a ") + "s"
		}
		return "an array"
	case "object":
		if s.AdditionalProperties != nil && s.Properties == nil {
			return "an object of " + strings.TrimPrefix(strings.TrimPrefix(describeType(s.AdditionalProperties), "an "), "a ") + " values"
		}
		return "an object"
	}
	return "a valid value"
}
