package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/auth"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/handlers"
	"github.com/trellis/trellis/workflow"
)

// server is the API: the routes over one service.
type server struct {
	svc Service
	cfg Config
	log *slog.Logger
	mux *http.ServeMux
	// patterns are the registered routes and mounts (each must be in
	// routeOps or openPatterns).
	patterns []string
}

// Service is what the API calls: the domains behind the root package's
// interfaces, and the glue beside them (Composition). The server passes
// its *handlers.Service, which composes them all.
type Service interface {
	trellis.Domains
	trellis.VineGraphReader
	trellis.ActivityReader
	Composition
}

// Composition is what the API needs of the composed service beyond the
// domains: the log (the export reads it, health checks its connection),
// an aggregate's events, the board as of a moment, the rebuild, the
// checkpoints, the live feed and the workflows.
type Composition interface {
	Store() *events.Store
	Audit(ctx context.Context, id string) ([]events.Recorded, error)
	ListAsOf(ctx context.Context, at time.Time, req trellis.ListRequest) (*trellis.TaskList, error)
	Replay(ctx context.Context) (*handlers.ReplayResult, error)
	CheckpointMarkdown(ctx context.Context, taskID string) (string, error)
	OpenLive(ctx context.Context, req trellis.LiveRequest) (*handlers.LiveFeed, error)
	Workflows() *workflow.Engine
}

// apiFunc is a route's handler: it writes a successful response itself and
// returns any failure for the server to answer in the error shape.
type apiFunc func(w http.ResponseWriter, r *http.Request) error

// New returns the HTTP API over svc (see the package documentation for the
// routes). Like http.ServeMux.Handle, it panics when a pattern of
// cfg.Mounts is invalid or overlaps a built-in route.
func New(svc Service, cfg Config) http.Handler {
	cfg = cfg.withDefaults()
	s := &server{svc: svc, cfg: cfg, log: cfg.Logger, mux: http.NewServeMux()}

	s.handle("POST /v1/queue/tasks", s.addTask)
	s.handle("POST /v1/queue/tasks/batch", s.addTasks)
	s.handle("POST /v1/queue/next", s.nextTask)
	s.handle("POST /v1/queue/tasks/{id}/done", s.doneTask)
	s.handle("POST /v1/queue/tasks/{id}/fail", s.failTask)
	s.handle("GET /v1/queue/tasks", s.listTasks)
	s.handle("GET /v1/queue/tasks/{id}", s.showTask)
	s.handle("POST /v1/queue/tasks/{id}/retry", s.retryTask)
	s.handle("POST /v1/queue/tasks/{id}/cancel", s.cancelTask)
	s.handle("POST /v1/queue/tasks/{id}/heartbeat", s.heartbeatTask)
	s.handle("POST /v1/queue/tasks/{id}/release", s.releaseTask)
	s.handle("POST /v1/schedules", s.addSchedule)
	s.handle("GET /v1/schedules", s.listSchedules)
	s.handle("DELETE /v1/schedules/{name}", s.removeSchedule)
	s.handle("GET /v1/queues/{queue}/controls", s.queueControls)
	s.handle("POST /v1/queues/{queue}/controls", s.controlQueue)
	s.handle("GET /v1/queue/export", s.exportTasks)
	s.handle("GET /v1/audit", s.auditQuery)
	s.handle("GET /v1/audit/{id}", s.audit)
	s.handle("POST /v1/replay", s.replay)
	s.handle("POST /v1/vine/next", s.vineNext)
	s.handle("POST /v1/vine/read", s.vineRead)
	s.handle("POST /v1/vine/write", s.vineWrite)
	s.handle("POST /v1/vine/claim", s.vineClaim)
	s.handle("POST /v1/vine/expand", s.vineExpand)
	s.handle("POST /v1/vine/import", s.vineImport)
	s.handle("GET /v1/vine/graphs/{id}/export", s.vineExport)
	s.handle("GET /healthz", s.healthz)
	s.memoryRoutes()
	s.workflowRoutes()
	s.codeRoutes()
	s.dashboardRoutes()

	for pattern, h := range cfg.Mounts {
		s.mux.Handle(pattern, h)
		s.patterns = append(s.patterns, pattern)
	}
	return s
}

// handle registers fn under pattern, answering its errors and panics in
// the error shape.
func (s *server) handle(pattern string, fn apiFunc) {
	s.mux.Handle(pattern, s.wrap(fn))
	s.patterns = append(s.patterns, pattern)
}

// wrap turns an apiFunc into an http.Handler.
func (s *server) wrap(fn apiFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tw := &trackingWriter{ResponseWriter: w}
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.log.Error("http handler panic", "method", r.Method, "path", r.URL.Path, "panic", v, "stack", string(debug.Stack()))
			if tw.started {
				panic(http.ErrAbortHandler) // too late for an error body: cut the response
			}
			s.writeError(tw, r, trellis.Errorf(trellis.CodeInternal, "panic: %v", v))
		}()
		if err := fn(tw, r); err != nil {
			if tw.started {
				s.log.Error("http handler failed after responding", "method", r.Method, "path", r.URL.Path, "err", err)
				panic(http.ErrAbortHandler)
			}
			s.writeError(tw, r, err)
		}
	})
}

// ServeHTTP implements http.Handler. Requests no route matches are answered
// in the error shape: 405 when the path exists with other methods, else 404.
func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h, pattern := s.mux.Handler(r)
	if pattern != "" {
		r, err := s.guard(w, r, pattern)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		// A call made with a token ends when the token is revoked.
		if rv, ok := s.cfg.Auth.(auth.Revocable); ok {
			if id, ok := auth.FromContext(r.Context()); ok {
				ctx, stop := rv.WhileValid(r.Context(), id.Name)
				defer stop()
				r = r.WithContext(ctx)
			}
		}
		s.mux.ServeHTTP(w, r)
		return
	}
	// No pattern: the mux would answer a plain-text 404 or 405. Ask it which,
	// and answer in the error shape instead.
	probe := &probeWriter{header: http.Header{}}
	h.ServeHTTP(probe, r)
	if probe.status == http.StatusMethodNotAllowed {
		allow := probe.header.Get("Allow")
		w.Header().Set("Allow", allow)
		s.writeError(w, r, &statusError{
			status: http.StatusMethodNotAllowed,
			err:    trellis.Errorf(trellis.CodeInvalid, "method %s is not allowed on %s; allowed: %s", r.Method, r.URL.Path, allow),
		})
		return
	}
	s.writeError(w, r, trellis.Errorf(trellis.CodeNotFound, "no route for %s %s", r.Method, r.URL.Path))
}

// statusError is an error answered with a status other than its code's
// (413 for an oversized body, 405 for a method a route does not allow).
type statusError struct {
	status int
	err    *trellis.Error
}

// Error implements error.
func (e *statusError) Error() string { return e.err.Error() }

// Unwrap returns the coded error.
func (e *statusError) Unwrap() error { return e.err }

// trackingWriter records whether a response has started, so a late failure
// is not answered with a second status line.
type trackingWriter struct {
	http.ResponseWriter
	started bool
}

// WriteHeader implements http.ResponseWriter.
func (w *trackingWriter) WriteHeader(status int) {
	if status >= 200 {
		w.started = true
	}
	w.ResponseWriter.WriteHeader(status)
}

// Write implements http.ResponseWriter.
func (w *trackingWriter) Write(p []byte) (int, error) {
	w.started = true
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *trackingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// probeWriter captures the status and headers of the mux's own 404/405
// answer and discards its body.
type probeWriter struct {
	header http.Header
	status int
}

func (p *probeWriter) Header() http.Header { return p.header }

func (p *probeWriter) WriteHeader(status int) {
	if p.status == 0 {
		p.status = status
	}
}

func (p *probeWriter) Write(b []byte) (int, error) {
	if p.status == 0 {
		p.status = http.StatusOK
	}
	return len(b), nil
}

// pathID returns the {id} path value after checking it is a task id.
func pathID(r *http.Request) (string, error) {
	id := r.PathValue("id")
	if err := trellis.ValidateTaskID("id", id); err != nil {
		return "", err
	}
	return id, nil
}

// Patterns lists the route and mount patterns h (a handler New returned)
// serves, as registered: a suite that must cover each one enumerates them
// here.
func Patterns(h http.Handler) []string {
	s, ok := h.(*server)
	if !ok {
		return nil
	}
	return append([]string(nil), s.patterns...)
}
