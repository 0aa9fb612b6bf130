package httpapi

import (
	"log/slog"
	"net/http"

	"github.com/trellis/trellis/auth"
)

// DefaultMaxBodyBytes is the request body limit used when
// Config.MaxBodyBytes is not positive: 1 MiB.
const DefaultMaxBodyBytes int64 = 1 << 20

// Config configures the HTTP API. The zero value is usable.
type Config struct {
	// MaxBodyBytes bounds a request body; a larger body is answered with
	// 413 (default DefaultMaxBodyBytes, 1 MiB).
	MaxBodyBytes int64
	// Mounts are extra handlers served as they are (no error rewriting),
	// keyed by their http.ServeMux pattern, e.g. "/mcp" or "GET /metrics".
	// They pass the same checks as the routes first: the body cap, Host
	// and Origin, the content type, and the token. A pattern must not
	// overlap a built-in route.
	Mounts map[string]http.Handler
	// Auth, when set, requires a bearer token on every route but GET
	// /healthz: 401 without a valid one, 403 when its role may not (see
	// auth.Required and RouteOp). Nil: authentication off.
	Auth auth.Verifier
	// Loopback is true when the server listens on a loopback address
	// only: requests must then name a loopback host (localhost,
	// 127.0.0.0/8, [::1]), which defeats DNS rebinding.
	Loopback bool
	// Hosts are further host names clients reach this server by; when
	// set, a request naming any other (non-loopback) host is refused.
	Hosts []string
	// Logger receives internal errors and recovered panics (default
	// slog.Default()).
	Logger *slog.Logger
	// Done, when closed, ends the long-lived responses (the live feed of
	// GET /v1/events/live), so that a graceful shutdown does not wait for
	// open dashboards. Close it when the server begins to shut down
	// (http.Server.RegisterOnShutdown). Nil: they end with their clients.
	Done <-chan struct{}
	// Ready, when set, is asked by GET /healthz after the NATS connection:
	// an error answers 503 with its message (a server whose JetStream lost
	// its quorum).
	Ready func() error
}

func (c Config) withDefaults() Config {
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}
