package mcpapi

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trellis/trellis"
)

// TestServeEndsCleanly: the stdio loop (here over pipes, as stdin/stdout
// are the test binary's own) serves a client and returns nil when the
// client closes its end, and when its context is cancelled.
func TestServeEndsCleanly(t *testing.T) {
	t.Parallel()
	// A server over a nil service: the calls below never reach it.
	srv := NewServer(trellis.QueueService(nil), "test")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	t.Run("client closes", func(t *testing.T) {
		serverIn, clientOut := io.Pipe()
		clientIn, serverOut := io.Pipe()
		errc := make(chan error, 1)
		go func() { errc <- serve(ctx, srv, &mcp.IOTransport{Reader: serverIn, Writer: serverOut}) }()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "stdio-test", Version: "v0"}, nil).
			Connect(ctx, &mcp.IOTransport{Reader: clientIn, Writer: clientOut}, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: ToolQueueAdd, Arguments: map[string]any{"bogus": 1}})
		if err != nil || !res.IsError {
			t.Fatalf("call = %+v, %v", res, err)
		}
		if err := cs.Close(); err != nil {
			t.Logf("client close: %v", err)
		}
		select {
		case err := <-errc:
			if err != nil {
				t.Fatalf("serve after client close = %v; want nil", err)
			}
		case <-ctx.Done():
			t.Fatal("serve did not return after the client closed")
		}
	})

	t.Run("context cancelled", func(t *testing.T) {
		serverIn, _ := io.Pipe()
		_, serverOut := io.Pipe()
		sctx, scancel := context.WithCancel(ctx)
		errc := make(chan error, 1)
		go func() { errc <- serve(sctx, srv, &mcp.IOTransport{Reader: serverIn, Writer: serverOut}) }()
		time.Sleep(50 * time.Millisecond)
		scancel()
		select {
		case err := <-errc:
			if err != nil {
				t.Fatalf("serve after cancel = %v; want nil", err)
			}
		case <-ctx.Done():
			t.Fatal("serve did not return after cancel")
		}
	})
}
