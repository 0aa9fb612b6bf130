package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/handlers"
	"github.com/trellis/trellis/handlers/httpapi"
	"github.com/trellis/trellis/handlers/mcpapi"
	"github.com/trellis/trellis/handlers/natsapi"
	"github.com/trellis/trellis/web"
)

// Version is the release version, reported by ping, the MCP server and
// `trellis version`. It is a variable only so a release build can stamp
// it: go build -ldflags "-X github.com/trellis/trellis/server.Version=v1.2.3".
var Version = "0.1.0"

// Config configures a Trellis server. Zero values take the documented
// defaults.
type Config struct {
	// DataDir holds JetStream's files (embedded mode), the projections and
	// the checkpoints (default ./data).
	DataDir string
	// NATSURL connects to an existing NATS server or cluster instead of
	// starting an embedded one.
	NATSURL string
	// NATSAddr is where the embedded server listens (default
	// 127.0.0.1:4222; port 0 picks a free port; "-" no listener, in-process
	// connections only).
	NATSAddr string
	// HTTPAddr is where the HTTP API, /mcp and /metrics listen; empty means
	// no HTTP server.
	HTTPAddr string
	// Replicas is the stream replica count (default 1).
	Replicas int
	// SyncInterval > 0 opts the embedded server out of fsync-per-write.
	SyncInterval time.Duration
	// Workspaces are the roots VINE files and their references must lie in
	// (default: the current directory); a relative file resolves against
	// the first. With ServeAPI, errors about them tell clients to restart
	// the server with --workspace.
	Workspaces []string
	// ServeAPI answers NATS API requests (trellis serve does; a one-shot
	// CLI command does not).
	ServeAPI bool
	// WriteInfo records the listening addresses in <data>/serve.json.
	WriteInfo bool
	// Logger receives logs (default slog.Default()).
	Logger *slog.Logger
}

// Server is a running Trellis.
type Server struct {
	cfg       Config
	lock      *dirLock
	ns        *natsserver.Server
	nc        *nats.Conn
	store     *events.Store
	svc       *handlers.Service
	responder *natsapi.Responder
	httpSrv   *http.Server
	httpLn    net.Listener
	registry  *prometheus.Registry
	info      Info
}

// Start brings a Trellis server up. On error everything started is stopped.
func Start(ctx context.Context, cfg Config) (_ *Server, err error) {
	if cfg.DataDir == "" {
		cfg.DataDir = "data"
	}
	if cfg.NATSAddr == "" {
		cfg.NATSAddr = "127.0.0.1:4222"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	abs, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("data dir %s: %w", cfg.DataDir, err)
	}
	cfg.DataDir = abs
	s := &Server{cfg: cfg}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if cfg.NATSURL == "" && cfg.NATSAddr != "-" {
		if err := checkAddr("nats_addr", cfg.NATSAddr); err != nil {
			return nil, err
		}
	}
	if cfg.HTTPAddr != "" {
		if err := checkAddr("http_addr", cfg.HTTPAddr); err != nil {
			return nil, err
		}
	}
	if s.lock, err = lockDataDir(cfg.DataDir); err != nil {
		return nil, err
	}
	opts := []nats.Option{
		nats.Name("trellis"),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
	}
	url := cfg.NATSURL
	if url == "" {
		s.ns, err = events.StartEmbedded(events.EmbeddedConfig{
			StoreDir:     filepath.Join(cfg.DataDir, "jetstream"),
			Addr:         cfg.NATSAddr,
			SyncInterval: cfg.SyncInterval,
		})
		if err != nil {
			return nil, listenError("nats", cfg.NATSAddr, "--nats-addr", err)
		}
		opts = append(opts, nats.InProcessServer(s.ns))
		if cfg.NATSAddr != "-" {
			url = s.ns.ClientURL()
		}
	}
	if s.nc, err = nats.Connect(url, opts...); err != nil {
		return nil, fmt.Errorf("connect to NATS %s: %w", url, err)
	}
	if s.store, err = events.NewStore(s.nc, events.StoreConfig{Replicas: cfg.Replicas}); err != nil {
		return nil, err
	}
	if err = s.store.Ensure(ctx); err != nil {
		return nil, err
	}
	s.registry = prometheus.NewRegistry()
	s.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	s.svc = handlers.NewService(s.store, handlers.ServiceConfig{DataDir: cfg.DataDir, Logger: cfg.Logger, Metrics: s.registry,
		Vine: handlers.VineConfig{Roots: cfg.Workspaces, Served: cfg.ServeAPI}})
	if err = s.svc.Start(ctx); err != nil {
		return nil, err
	}
	s.info = Info{PID: os.Getpid(), NATSURL: url, DataDir: cfg.DataDir, Embedded: s.ns != nil, StartedAt: time.Now().UTC(),
		Workspaces: s.svc.VineHandler().Roots()}
	if cfg.HTTPAddr != "" {
		if err = s.startHTTP(); err != nil {
			return nil, err
		}
	}
	if cfg.ServeAPI {
		s.responder, err = natsapi.Serve(s.nc, s.svc, natsapi.ServeConfig{
			Info:   natsapi.PingInfo{Version: Version, PID: s.info.PID, DataDir: cfg.DataDir, HTTPURL: s.info.HTTPURL, Workspaces: s.info.Workspaces},
			Logger: cfg.Logger,
		})
		if err != nil {
			return nil, err
		}
	}
	if cfg.WriteInfo {
		if err = writeInfo(cfg.DataDir, s.info); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func (s *Server) startHTTP() error {
	ln, err := net.Listen("tcp", s.cfg.HTTPAddr)
	if err != nil {
		return listenError("http", s.cfg.HTTPAddr, "--http-addr", err)
	}
	s.httpLn = ln
	mcpSrv := mcpapi.NewServer(s.svc, Version)
	liveDone := make(chan struct{})
	h := httpapi.New(s.svc, httpapi.Config{
		Logger: s.cfg.Logger,
		Done:   liveDone,
		Mounts: map[string]http.Handler{
			"/mcp":     mcpapi.HTTPHandler(mcpSrv),
			"/metrics": promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{}),
			// The dashboard: its page and assets (web/), which call the
			// routes above.
			"GET /{$}": web.Handler(),
			"GET /ui/": web.Handler(),
		},
	})
	s.httpSrv = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	var once sync.Once
	s.httpSrv.RegisterOnShutdown(func() { once.Do(func() { close(liveDone) }) })
	base := "http://" + ln.Addr().String()
	s.info.HTTPURL = base
	s.info.MCPURL = base + "/mcp"
	go func() {
		if err := s.httpSrv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.cfg.Logger.Error("http server", "err", err)
		}
	}()
	return nil
}

// Service returns the API.
func (s *Server) Service() *handlers.Service { return s.svc }

// Store returns the event store.
func (s *Server) Store() *events.Store { return s.store }

// Conn returns the server's NATS connection.
func (s *Server) Conn() *nats.Conn { return s.nc }

// Info returns where the server listens.
func (s *Server) Info() Info { return s.info }

// Close stops everything in reverse order: HTTP, API, projections (after a
// bounded catch-up so checkpoints of the last events are written), NATS,
// and the data directory lock.
func (s *Server) Close() {
	if s.httpSrv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = s.httpSrv.Shutdown(ctx)
		cancel()
	}
	if s.responder != nil {
		s.responder.Stop()
	}
	if s.svc != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := s.svc.CatchUp(ctx); err != nil {
			s.cfg.Logger.Warn("projections did not catch up before shutdown", "err", err)
		}
		cancel()
		if err := s.svc.Close(); err != nil {
			s.cfg.Logger.Warn("projections close", "err", err)
		}
	}
	if s.cfg.WriteInfo && s.lock != nil {
		_ = os.Remove(InfoPath(s.cfg.DataDir))
	}
	if s.nc != nil {
		_ = s.nc.Drain()
		s.nc.Close()
	}
	if s.ns != nil {
		s.ns.Shutdown()
		s.ns.WaitForShutdown()
	}
	s.lock.release()
}
