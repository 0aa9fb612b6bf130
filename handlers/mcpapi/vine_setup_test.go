package mcpapi_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/handlers"
	"github.com/trellis/trellis/handlers/mcpapi"
	"github.com/trellis/trellis/vinegraph"
)

// vineBundle is a testBundle whose service runs VINE graphs inside a
// temporary workspace root.
type vineBundle struct {
	*testBundle
	ws string
}

// setupVine starts NATS, a service with ws as its only workspace root, and
// the MCP server over it.
func setupVine(t *testing.T) (*vineBundle, context.Context) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	nb := eventstest.Start(t)
	ws := t.TempDir()
	svc := handlers.NewService(nb.Store, handlers.ServiceConfig{DataDir: t.TempDir(), Vine: vinegraph.Config{Roots: []string{ws}}})
	if err := svc.Start(ctx); err != nil {
		t.Fatalf("start service: %v", err)
	}
	t.Cleanup(func() { _ = svc.Close() })
	return &vineBundle{testBundle: &testBundle{nats: nb, svc: svc, srv: mcpapi.NewServer(svc, "test")}, ws: ws}, ctx
}

// file writes text to name inside the workspace and returns its path.
func (b *vineBundle) file(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(b.ws, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// graphEvents returns the types of the events of the graph whose file is
// rel (relative to the workspace).
func (b *vineBundle) graphEvents(t *testing.T, ctx context.Context, rel string) []string {
	t.Helper()
	recs, _, err := b.nats.Store.Load(ctx, events.StreamVine, events.GraphFilter(events.GraphID(rel)))
	if err != nil {
		t.Fatalf("load graph events: %v", err)
	}
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.Type
	}
	return out
}

// vineSeq is the VINE stream's last sequence.
func (b *vineBundle) vineSeq(t *testing.T, ctx context.Context) uint64 {
	t.Helper()
	seq, err := b.nats.Store.LastSeq(ctx, events.StreamVine)
	if err != nil {
		t.Fatalf("last seq: %v", err)
	}
	return seq
}

// outputSchemas resolves the output schemas the server advertises, by tool.
func outputSchemas(t *testing.T, ctx context.Context, cs *mcp.ClientSession) map[string]*jsonschema.Resolved {
	t.Helper()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*jsonschema.Resolved{}
	for _, tool := range res.Tools {
		if tool.OutputSchema == nil {
			continue
		}
		var s jsonschema.Schema
		remarshal(t, tool.OutputSchema, &s)
		r, err := s.Resolve(nil)
		if err != nil {
			t.Fatalf("%s: resolve output schema: %v", tool.Name, err)
		}
		out[tool.Name] = r
	}
	return out
}

// callOK calls a tool that must succeed, checks its structured content
// against the tool's output schema (when it has one), and decodes that
// content into dst (when not nil).
func callOK(t *testing.T, ctx context.Context, cs *mcp.ClientSession, schemas map[string]*jsonschema.Resolved, tool string, args map[string]any, dst any) *mcp.CallToolResult {
	t.Helper()
	res := call(t, ctx, cs, tool, args)
	if res.IsError {
		t.Fatalf("%s(%v): tool error %q", tool, args, text(res))
	}
	if s := schemas[tool]; s != nil {
		var v any
		remarshal(t, res.StructuredContent, &v)
		if err := s.Validate(v); err != nil {
			t.Errorf("%s: structured content does not match the output schema: %v", tool, err)
		}
	}
	if dst != nil {
		decodeStructured(t, res, dst)
	}
	return res
}
