package mcpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
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
	return s
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
// declares (exact spelling), and every value must have the argument's type.
// Failures are invalid-input *trellis.Errors naming the argument. Absent
// arguments (no object at all) decode as {}. Value rules (empty, negative,
// too long) are left to the request's Normalize.
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
	if err := json.Unmarshal(raw, dst); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			name, _, _ := strings.Cut(te.Field, ".")
			return trellis.FieldError(name, "must be %s, not %s", describeType(schema.Properties[name]), te.Value)
		}
		return trellis.FieldError("arguments", "cannot be decoded: %v", err)
	}
	return nil
}

// describeType names the JSON type a property schema expects, for error
// messages: "an integer", "an array of strings", ...
func describeType(s *jsonschema.Schema) string {
	if s == nil {
		return "a valid value"
	}
	typ := s.Type
	for _, t := range s.Types {
		if t != "null" {
			typ = t
		}
	}
	switch typ {
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
