package mcpapi_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/trellis/trellis/handlers/mcpapi"
	"github.com/trellis/trellis/vine"
)

// TestVineOpsDocumented: every operation the vine package knows is in
// vine_write's operations argument (its description and its op enum) and
// in the vine://spec/full mutation table, with its arguments.
func TestVineOpsDocumented(t *testing.T) {
	t.Parallel()
	b, ctx := setupVine(t)
	cs := b.connect(t, ctx)
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var write jsonschema.Schema
	for _, tool := range res.Tools {
		if tool.Name == mcpapi.ToolVineWrite {
			remarshal(t, tool.InputSchema, &write)
		}
	}
	ops := write.Properties["operations"]
	if ops == nil || ops.Items == nil || ops.Items.Properties["op"] == nil {
		t.Fatalf("vine_write operations schema: %+v", ops)
	}
	var enum []string
	for _, v := range ops.Items.Properties["op"].Enum {
		enum = append(enum, v.(string))
	}
	if !slices.Equal(enum, vine.OpNames()) {
		t.Errorf("op enum %v; want %v", enum, vine.OpNames())
	}
	for _, s := range vine.Ops() {
		if !strings.Contains(ops.Description, s.Signature()) {
			t.Errorf("operations description lacks %s", s.Signature())
		}
		if !strings.Contains(vine.SpecFull, "`"+s.Name+"`") {
			t.Errorf("vine://spec/full lacks `%s`", s.Name)
		}
		if len(s.Args) > 0 && !strings.Contains(vine.SpecFull, "`"+strings.Join(s.Args, ", ")+"`") {
			t.Errorf("vine://spec/full lacks the arguments of %s: `%s`", s.Name, strings.Join(s.Args, ", "))
		}
	}
}
