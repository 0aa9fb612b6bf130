package httpapi

import (
	"errors"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/auth"
)

// routeOps maps every route and mount pattern to the operation the
// policy knows it by (auth.Required). A pattern missing here needs the
// admin role (closed by default); a test checks that every route is
// listed.
var routeOps = map[string]string{
	"POST /v1/queue/tasks":                        "queue.add",
	"POST /v1/queue/tasks/batch":                  "queue.add_many",
	"POST /v1/queue/tasks/{id}/cancel":            "queue.cancel",
	"POST /v1/queue/tasks/{id}/heartbeat":         "queue.heartbeat",
	"POST /v1/queue/tasks/{id}/release":           "queue.release_claim",
	"POST /v1/schedules":                          "schedule.add",
	"GET /v1/schedules":                           "schedule.list",
	"DELETE /v1/schedules/{name}":                 "schedule.remove",
	"POST /v1/workflows":                          "workflow.start",
	"GET /v1/workflows":                           "workflow.list",
	"GET /v1/workflows/{id}":                      "workflow.show",
	"POST /v1/workflows/{id}/signal":              "workflow.signal",
	"POST /v1/workflows/{id}/cancel":              "workflow.cancel",
	"POST /v1/workflows/{id}/retry":               "workflow.retry",
	"POST /v1/code/explain":                       "code.explain",
	"POST /v1/queue/next":                         "queue.next",
	"POST /v1/queue/tasks/{id}/done":              "queue.done",
	"POST /v1/queue/tasks/{id}/fail":              "queue.fail",
	"GET /v1/queue/tasks":                         "queue.list",
	"GET /v1/queue/tasks/{id}":                    "queue.show",
	"POST /v1/queue/tasks/{id}/retry":             "queue.retry",
	"GET /v1/queues/{queue}/controls":             "queue.controls",
	"POST /v1/queues/{queue}/controls":            "queue.control",
	"GET /v1/queue/export":                        "queue.export",
	"GET /v1/audit":                               "audit.query",
	"GET /v1/audit/{id}":                          "audit",
	"POST /v1/replay":                             "replay",
	"POST /v1/vine/next":                          "vine.next",
	"POST /v1/vine/read":                          "vine.read",
	"POST /v1/vine/write":                         "vine.write",
	"POST /v1/vine/claim":                         "vine.claim",
	"POST /v1/vine/expand":                        "vine.expand",
	"POST /v1/vine/import":                        "vine.import",
	"GET /v1/vine/graphs/{id}/export":             "vine.export",
	"POST /tasks":                                 "task.create",
	"GET /tasks":                                  "task.list",
	"GET /tasks/{id}":                             "task.show",
	"POST /tasks/{id}/join":                       "task.join",
	"POST /tasks/{id}/agents/{agent_id}/complete": "task.complete_agent",
	"PATCH /tasks/{id}/objectives/{obj_id}":       "task.objective",
	"POST /tasks/{id}/complete":                   "task.complete",
	"POST /tasks/{id}/consolidate":                "memory.consolidate",
	"GET /tasks/{id}/context":                     "task.context",
	"POST /v1/memory/observations":                "memory.observe",
	"GET /v1/memory/facts":                        "memory.facts",
	"GET /v1/memory/history":                      "memory.history",
	"POST /v1/code/search":                        "code.search",
	"GET /v1/code/chunks/{id}":                    "code.chunk",
	"GET /v1/queue/activity":                      "queue.list",
	"GET /v1/queue/workers":                       "queue.list",
	"GET /v1/queue/tasks/{id}/checkpoint":         "queue.show",
	"GET /v1/vine/graphs":                         "vine.read",
	"GET /v1/vine/graphs/{id}":                    "vine.read",
	"GET /v1/vine/graphs/{id}/nodes/{node}":       "vine.read",
	"GET /v1/events/live":                         "audit.query",
	"GET /v1/whoami":                              "token.whoami",
	"/mcp":                                        "mcp",
	"/metrics":                                    "metrics",
	"GET /metrics":                                "metrics",
}

// openPatterns are served without a token: a liveness probe says nothing
// about the data, and neither do the dashboard's page and assets (a
// browser cannot send a token when it opens a page; the page then sends
// one with every call it makes).
var openPatterns = []string{"GET /healthz", "GET /{$}", "GET /ui/"}

// RouteOp returns the operation a route pattern is authorized as, and
// whether the pattern is served without a token.
func RouteOp(pattern string) (op string, open bool) {
	if slices.Contains(openPatterns, pattern) {
		return "", true
	}
	if op, ok := routeOps[pattern]; ok {
		return op, false
	}
	return "admin-only route " + pattern, false
}

// guard checks what every request must pass before its route runs, in
// this order: the body cap (413), the Host header against the served
// addresses (DNS rebinding, 403), the Origin of a browser's request
// (cross-site requests, 403), a JSON body's content type (415), and, with
// authentication on, the bearer token (401) and the role (403). It
// returns the request to serve, carrying the caller's identity.
func (s *server) guard(w http.ResponseWriter, r *http.Request, pattern string) (*http.Request, error) {
	if r.ContentLength > s.cfg.MaxBodyBytes {
		w.Header().Set("Connection", "close")
		return r, &statusError{status: http.StatusRequestEntityTooLarge,
			err: trellis.FieldError("body", "is larger than %d bytes", s.cfg.MaxBodyBytes)}
	}
	r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)
	if err := s.checkHost(r); err != nil {
		return r, err
	}
	if err := checkOrigin(r); err != nil {
		return r, err
	}
	if err := checkContentType(r); err != nil {
		return r, err
	}
	op, open := RouteOp(pattern)
	if s.cfg.Auth == nil || open {
		return r, nil
	}
	ctx, err := auth.Authenticate(r.Context(), s.cfg.Auth, auth.BearerToken(r.Header.Get("Authorization")))
	if err != nil {
		w.Header().Set("WWW-Authenticate", `Bearer realm="trellis"`)
		return r, err
	}
	if err := auth.Allow(ctx, op); err != nil {
		return r, err
	}
	return r.WithContext(ctx), nil
}

// forbidden is a refusal answered with 403.
func forbidden(code trellis.Code, format string, args ...any) error {
	return &statusError{status: http.StatusForbidden, err: trellis.Errorf(code, format, args...)}
}

// checkHost refuses a request whose Host header names no address this
// server is reached by: on a loopback listener only loopback names
// (localhost, 127.0.0.0/8, ::1), so a DNS name rebound to 127.0.0.1 by a
// web page cannot reach the API; elsewhere the names in Config.Hosts when
// there are any (with authentication on, a rebound page has no token).
func (s *server) checkHost(r *http.Request) error {
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if slices.ContainsFunc(s.cfg.Hosts, func(h string) bool { return strings.EqualFold(h, host) }) {
		return nil
	}
	if isLoopbackName(host) {
		return nil
	}
	if s.cfg.Loopback || len(s.cfg.Hosts) > 0 {
		return forbidden(trellis.CodeUnauthorized, "host %q is not an address of this server (a DNS rebinding?)", r.Host)
	}
	return nil
}

// isLoopbackName reports whether host is localhost or a loopback IP.
func isLoopbackName(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// checkOrigin refuses a browser's cross-site request: one whose Origin
// header (sent by browsers on every cross-origin request and on every
// POST) names another host than the one the request was sent to, or that
// the browser itself marks cross-site. Clients that are not browsers send
// neither header.
func checkOrigin(r *http.Request) error {
	if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
		return forbidden(trellis.CodeUnauthorized, "cross-site request refused")
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return nil
	}
	u, err := url.Parse(origin)
	if err != nil || origin == "null" || u.Host == "" {
		return forbidden(trellis.CodeUnauthorized, "cross-site request refused: origin %q", origin)
	}
	if !strings.EqualFold(u.Host, r.Host) {
		return forbidden(trellis.CodeUnauthorized, "cross-site request refused: origin %q is not %q", origin, r.Host)
	}
	return nil
}

// checkContentType requires application/json on a request with a body:
// a form or text/plain body is what a cross-site page can send without a
// preflight.
func checkContentType(r *http.Request) error {
	if r.ContentLength == 0 || r.Method == http.MethodGet || r.Method == http.MethodHead {
		return nil
	}
	ct := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		return &statusError{status: http.StatusUnsupportedMediaType,
			err: trellis.FieldError("Content-Type", "is %q; send the body as application/json", ct)}
	}
	return nil
}

// statusOf returns the HTTP status of a refusal: 403 for an authenticated
// caller whose role or name may not, else the code's status.
func statusOf(err error, te *trellis.Error) int {
	if te.Code == trellis.CodeUnauthorized && errors.Is(err, auth.ErrForbidden) {
		return http.StatusForbidden
	}
	return trellis.HTTPStatus(te.Code)
}
