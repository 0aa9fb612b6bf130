package mcpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/handlers"
	"github.com/trellis/trellis/handlers/mcpapi"
)

// testBundle is what a test gets: a real embedded NATS, the service over
// it, and the MCP server over the service.
type testBundle struct {
	nats *eventstest.Bundle
	svc  *handlers.Service
	srv  *mcp.Server
}

// setup starts NATS, the service and the MCP server; everything stops
// when the test ends.
func setup(t *testing.T) (*testBundle, context.Context) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	b := eventstest.Start(t)
	svc := handlers.NewService(b.Store, handlers.ServiceConfig{DataDir: t.TempDir()})
	if err := svc.Start(ctx); err != nil {
		t.Fatalf("start service: %v", err)
	}
	t.Cleanup(func() { _ = svc.Close() })
	return &testBundle{nats: b, svc: svc, srv: mcpapi.NewServer(svc, "test")}, ctx
}

// connect opens a real MCP client session to the bundle's server over
// in-memory transports.
func (b *testBundle) connect(t *testing.T, ctx context.Context) *mcp.ClientSession {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := b.srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatalf("server connect: %v", err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "mcpapi-test", Version: "v0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatalf("client connect: %v", err)
	}
	t.Cleanup(func() {
		_ = cs.Close()
		_ = ss.Wait()
	})
	return cs
}

// localWorker is the identity of a client named client over a transport
// without HTTP (in-memory, stdio) of a server without a configured worker:
// "mcp:<client>@<host>:<parent pid>".
func localWorker(t *testing.T, client string) string {
	t.Helper()
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("mcp:%s@%s:%d", client, host, os.Getppid())
}

// lastSeq is the queue stream's last sequence.
func (b *testBundle) lastSeq(t *testing.T, ctx context.Context) uint64 {
	t.Helper()
	seq, err := b.nats.Store.LastSeq(ctx, events.StreamQueue)
	if err != nil {
		t.Fatalf("last seq: %v", err)
	}
	return seq
}

// call calls a tool and fails the test on a protocol error.
func call(t *testing.T, ctx context.Context, cs *mcp.ClientSession, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s(%v): protocol error %v", tool, args, err)
	}
	return res
}

// callTask calls a tool that must succeed with a task packet and returns
// the packet decoded from the structured content.
func callTask(t *testing.T, ctx context.Context, cs *mcp.ClientSession, tool string, args map[string]any) *trellis.Task {
	t.Helper()
	res := call(t, ctx, cs, tool, args)
	if res.IsError {
		t.Fatalf("%s(%v): tool error %q", tool, args, text(res))
	}
	var task trellis.Task
	decodeStructured(t, res, &task)
	return &task
}

// callErr calls a tool that must fail with a tool error and returns the
// error text.
func callErr(t *testing.T, ctx context.Context, cs *mcp.ClientSession, tool string, args map[string]any) string {
	t.Helper()
	res := call(t, ctx, cs, tool, args)
	if !res.IsError {
		t.Fatalf("%s(%v): succeeded with %q; want a tool error", tool, args, text(res))
	}
	if res.StructuredContent != nil {
		t.Errorf("%s: error result has structured content %v", tool, res.StructuredContent)
	}
	return text(res)
}

// text joins the result's text content.
func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func decodeStructured(t *testing.T, res *mcp.CallToolResult, dst any) {
	t.Helper()
	if res.StructuredContent == nil {
		t.Fatalf("no structured content; text %q", text(res))
	}
	data, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, dst); err != nil {
		t.Fatalf("decode structured content %s: %v", data, err)
	}
}
