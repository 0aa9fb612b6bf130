package mcpapi

import (
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// SessionIdleTimeout is how long the streamable-HTTP handler keeps a
// session that receives no request. An idle session is closed; its client
// must reconnect and gets a new session id, hence a new default worker, so
// an agent that may idle longer than this between queue_next and
// queue_done should pass an explicit worker.
const SessionIdleTimeout = time.Hour

// HTTPHandler serves srv over MCP's streamable HTTP transport (mounted at
// /mcp by `trellis serve`). It is stateful: each client gets an
// Mcp-Session-Id, which names the default worker of its calls. Idle
// sessions close after SessionIdleTimeout; request bodies are limited to the
// SDK's default (4 MiB); requests reaching a loopback listener with a
// non-loopback Host header are refused (the SDK's DNS-rebinding
// protection).
func HTTPHandler(srv *mcp.Server) http.Handler {
	return mcp.NewStreamableHTTPHandler(
		func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{SessionTimeout: SessionIdleTimeout},
	)
}
