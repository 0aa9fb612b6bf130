package mcpapi

import (
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/auth"
	"github.com/trellis/trellis/events"
)

// SessionIdleTimeout is how long the streamable-HTTP handler keeps a
// session that receives no request. An idle session is closed and its
// client must reconnect; the reconnected client keeps its default worker
// (see HTTPHandler), so a claim survives that.
const SessionIdleTimeout = time.Hour

// HTTPHandler serves srv over MCP's streamable HTTP transport (mounted at
// /mcp by `trellis serve`). It is stateful: each client gets an
// Mcp-Session-Id. A call that names no worker acts as the worker the client
// names with the X-Trellis-Worker header or the ?worker= URL parameter
// (both must be valid worker ids and, when both are given, equal; otherwise
// the request is refused with 400), else as "mcp:<client name>@<remote
// host>", which survives reconnects. Idle sessions close after
// SessionIdleTimeout; request bodies are limited to the SDK's default (4
// MiB), and to the HTTP API's cap when mounted under it; requests reaching
// a loopback listener with a non-loopback Host header are refused (the
// SDK's DNS-rebinding protection). Mounted under the HTTP API with
// authentication on, the caller's identity (from the request's context)
// comes first: see identity.of.
func HTTPHandler(srv *mcp.Server) http.Handler {
	h := mcp.NewStreamableHTTPHandler(
		func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{SessionTimeout: SessionIdleTimeout},
	)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		worker, err := namedWorker(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r = r.WithContext(r.Context())
		r.Header = r.Header.Clone()
		r.Header.Del(HeaderWorker)
		r.Header.Del(identityHeader)
		if caller, ok := auth.FromContext(r.Context()); ok {
			if worker != "" && !events.ActsAs(caller.Name, worker) {
				http.Error(w, fmt.Sprintf("unauthorized: %s acts only as %q or %q/<slot>, not as %q", caller, caller.Name, caller.Name, worker), http.StatusForbidden)
				return
			}
			r.Header.Set(identityHeader, caller.Encode())
		}
		if worker != "" {
			r.Header.Set(HeaderWorker, worker)
		}
		if r.Method == http.MethodGet {
			// A GET is the server's event stream: it lives as long as the
			// session, past the server's write timeout.
			_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
		}
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			host = r.RemoteAddr
		}
		r.Header.Set(remoteHostHeader, host)
		h.ServeHTTP(w, r)
	})
}

// namedWorker returns the worker a request names with the X-Trellis-Worker
// header or the ?worker= URL parameter ("" when neither), or an
// invalid-input error when a name is not a worker id or the two disagree.
func namedWorker(r *http.Request) (string, error) {
	header := r.Header.Get(HeaderWorker)
	if header != "" {
		if err := checkWorker(HeaderWorker, header); err != nil {
			return "", err
		}
	}
	q, inQuery := r.URL.Query()["worker"]
	if !inQuery {
		return header, nil
	}
	if len(q) != 1 {
		return "", trellis.FieldError("worker", "give the URL parameter once, not %d times", len(q))
	}
	if err := checkWorker("worker", q[0]); err != nil {
		return "", err
	}
	if header != "" && header != q[0] {
		return "", trellis.FieldError("worker", "the URL names worker %q, the %s header %q: name one", q[0], HeaderWorker, header)
	}
	return q[0], nil
}
