package mcpapi

import (
	"context"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ServeStdio runs srv over stdin/stdout (newline-delimited JSON-RPC) until
// the client closes stdin or ctx is cancelled; both end it with a nil
// error. Nothing else may write to stdout meanwhile: log to stderr. Calls
// without a worker act as the server's Config.Worker, else as
// "mcp:<client name>@<host>:<parent pid>".
func ServeStdio(ctx context.Context, srv *mcp.Server) error {
	return serve(ctx, srv, &mcp.StdioTransport{})
}

// serve runs one session of srv over t; see ServeStdio.
func serve(ctx context.Context, srv *mcp.Server, t mcp.Transport) error {
	err := srv.Run(ctx, t)
	if err == nil || (ctx.Err() != nil && errors.Is(err, ctx.Err())) {
		return nil
	}
	return fmt.Errorf("mcp stdio: %w", err)
}
