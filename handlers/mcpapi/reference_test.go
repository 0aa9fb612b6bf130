package mcpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestToolReferenceIsCurrent: docs/reference/mcp-tools.md is generated
// from tools/list (each tool's description and arguments); a tool added or
// changed without regenerating it fails here. Regenerate with
// TRELLIS_UPDATE_DOCS=1 go test ./handlers/mcpapi -run TestToolReferenceIsCurrent.
func TestToolReferenceIsCurrent(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	cs := b.connect(t, ctx)
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	tools := res.Tools
	slices.SortFunc(tools, func(a, b *mcp.Tool) int { return strings.Compare(a.Name, b.Name) })
	var doc bytes.Buffer
	doc.WriteString("# MCP tool reference\n\n")
	doc.WriteString("Generated from the server's `tools/list` (do not edit: run\n")
	doc.WriteString("`TRELLIS_UPDATE_DOCS=1 go test ./handlers/mcpapi -run TestToolReferenceIsCurrent`).\n")
	doc.WriteString("How to connect an agent, roles and errors: [MCP](mcp.md).\n")
	for _, tool := range tools {
		fmt.Fprintf(&doc, "\n## %s\n\n%s\n", tool.Name, strings.TrimSpace(tool.Description))
		data, err := json.Marshal(tool.InputSchema)
		if err != nil {
			t.Fatal(err)
		}
		var schema jsonschema.Schema
		if err := json.Unmarshal(data, &schema); err != nil {
			t.Fatal(err)
		}
		if len(schema.Properties) == 0 {
			doc.WriteString("\nNo arguments.\n")
			continue
		}
		doc.WriteString("\n| argument | type | required | description |\n|---|---|---|---|\n")
		names := make([]string, 0, len(schema.Properties))
		for name := range schema.Properties {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			p := schema.Properties[name]
			typ := p.Type
			if typ == "" && len(p.Types) > 0 {
				typ = strings.Join(p.Types, " or ")
			}
			req := ""
			if slices.Contains(schema.Required, name) {
				req = "yes"
			}
			desc := strings.ReplaceAll(strings.TrimSpace(p.Description), "|", "\\|")
			desc = strings.ReplaceAll(desc, "\n", " ")
			fmt.Fprintf(&doc, "| `%s` | %s | %s | %s |\n", name, typ, req, desc)
		}
	}
	path := filepath.Join("..", "..", "docs", "reference", "mcp-tools.md")
	if os.Getenv("TRELLIS_UPDATE_DOCS") == "1" {
		if err := os.WriteFile(path, doc.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	have, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v: generate it with TRELLIS_UPDATE_DOCS=1 go test ./handlers/mcpapi -run TestToolReferenceIsCurrent", err)
	}
	if !bytes.Equal(have, doc.Bytes()) {
		t.Fatalf("%s is not what tools/list says: regenerate it with TRELLIS_UPDATE_DOCS=1 go test ./handlers/mcpapi -run TestToolReferenceIsCurrent", path)
	}
}
