package mcpapi_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/trellis/trellis/auth"
	"github.com/trellis/trellis/handlers/mcpapi"
)

// TestInputSchemasHavePlainTypes walks every tool's input schema, as a
// client sees it in tools/list, and fails on any union type such as
// ["null","array"]: MCP Inspector (0.15) renders those as text fields and
// sends strings. Optional means "not required", never "or null".
func TestInputSchemasHavePlainTypes(t *testing.T) {
	t.Parallel()
	b, ctx := setupVine(t)
	cs := b.connect(t, ctx)
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != 34 {
		t.Fatalf("tools/list has %d tools; want all 34 (queue, vine, memory, code, audit, workflow)", len(res.Tools))
	}
	containers := 0
	for _, tool := range res.Tools {
		var schema map[string]any
		remarshal(t, tool.InputSchema, &schema)
		walkSchema(tool.Name, schema, func(path string, s map[string]any) {
			switch typ := s["type"].(type) {
			case string:
				if typ == "array" || typ == "object" {
					containers++
				}
			case nil:
				// A schema without type (e.g. "not": {}) is fine.
			default:
				t.Errorf("%s: type is %s; want one plain type", path, compact(typ))
			}
		})
	}
	// The walk must have seen the arrays and objects the issue names
	// (inputs, operations, filters, ...), or it proves nothing.
	if containers < 15 {
		t.Fatalf("the walk saw only %d array/object schemas", containers)
	}
}

// walkSchema calls visit on s and every subschema below it, with a path
// naming where it is.
func walkSchema(path string, s map[string]any, visit func(path string, s map[string]any)) {
	visit(path, s)
	for _, kw := range []string{"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"} {
		if m, ok := s[kw].(map[string]any); ok {
			for name, sub := range m {
				if ss, ok := sub.(map[string]any); ok {
					walkSchema(path+"."+name, ss, visit)
				}
			}
		}
	}
	for _, kw := range []string{"items", "additionalProperties", "not", "contains", "propertyNames", "if", "then", "else", "unevaluatedItems", "unevaluatedProperties"} {
		if ss, ok := s[kw].(map[string]any); ok {
			walkSchema(path+"/"+kw, ss, visit)
		}
	}
	for _, kw := range []string{"anyOf", "oneOf", "allOf", "prefixItems"} {
		if list, ok := s[kw].([]any); ok {
			for i, sub := range list {
				if ss, ok := sub.(map[string]any); ok {
					walkSchema(fmt.Sprintf("%s/%s[%d]", path, kw, i), ss, visit)
				}
			}
		}
	}
}

func compact(v any) string {
	data, _ := json.Marshal(v)
	return string(data)
}

// TestEveryListedToolIsAuthorizedAsAnOperation: each tool a client sees
// in tools/list maps to an operation the policy names, so a new tool
// cannot fall silently to the admin-only default.
func TestEveryListedToolIsAuthorizedAsAnOperation(t *testing.T) {
	t.Parallel()
	b, ctx := setupVine(t)
	cs := b.connect(t, ctx)
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range res.Tools {
		if op := mcpapi.ToolOp(tool.Name); !auth.Known(op) {
			t.Errorf("tool %s is authorized as %q, which the policy does not name", tool.Name, op)
		}
	}
}
