package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/audit"
	"github.com/trellis/trellis/auth"
	"github.com/trellis/trellis/codememory"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/handlers"
	"github.com/trellis/trellis/handlers/httpapi"
	"github.com/trellis/trellis/handlers/mcpapi"
	"github.com/trellis/trellis/handlers/natsapi"
	"github.com/trellis/trellis/retention"
	"github.com/trellis/trellis/vinegraph"
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
	// Replicas is the stream replica count the operator asks for: the
	// streams are created with it and existing ones changed to it. Zero
	// (the default) keeps existing streams' replicas and creates missing
	// ones like the existing ones, or with 1 (see events.StoreConfig).
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
	// Code configures code memory's embedding model (hybrid search) and
	// chat model (explain); zero: lexical search, explain shows evidence.
	Code codememory.Config

	// Auth turns authentication on for every listener: NATS (embedded),
	// HTTP, MCP and metrics take tokens and roles (see package auth). On
	// first start an admin token is created in <data>/auth/admin.token.
	Auth bool
	// AdminToken, with Auth, is the admin token recorded on first start
	// instead of a random one (a deployment's secret; at least 32
	// characters).
	AdminToken string
	// Insecure lets a server without Auth listen on a non-loopback
	// address (it warns on every start).
	Insecure bool
	// TLSCert and TLSKey serve the embedded NATS server and HTTP over TLS.
	TLSCert, TLSKey string
	// TLSCA verifies the certificate of the NATS server at NATSURL (a
	// cluster with TLS); the system roots otherwise.
	TLSCA string
	// NATSCreds is a NATS credentials file for NATSURL (a cluster with
	// accounts: the Trellis servers' user).
	NATSCreds string

	// Retention > 0 prunes the log periodically (see retention.Loop):
	// finished queue tasks whose events were all stored longer ago than
	// Retention are archived to Archive (required with it) and removed,
	// every PruneEvery (default retention.DefaultEvery(Retention)). The
	// prune records are keyed with the data directory's audit key.
	// PruneRate > 0 paces each prune's removals to that many messages a
	// second (retention.Options.RemoveRate).
	Retention  time.Duration
	Archive    string
	PruneEvery time.Duration
	PruneRate  int
}

// Server is a running Trellis.
type Server struct {
	cfg       Config
	lock      *dirLock
	ns        *natsserver.Server
	nc        *nats.Conn
	store     *events.Store
	svc       *handlers.Service
	mu        sync.Mutex // guards responder (see quorum.go)
	responder *natsapi.Responder
	quorum    *quorumWatch
	retention *retention.Loop
	httpSrv   *http.Server
	httpLn    net.Listener
	registry  *prometheus.Registry
	info      Info
	auth      *auth.Service
	natsAuth  *auth.NATSAuth
	tls       *tls.Config
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
	if err := checkExposure(cfg); err != nil {
		return nil, err
	}
	if (cfg.TLSCert == "") != (cfg.TLSKey == "") {
		return nil, trellis.FieldError("tls_cert", "--tls-cert and --tls-key go together")
	}
	if cfg.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(cfg.TLSCert, cfg.TLSKey)
		if err != nil {
			return nil, trellis.FieldError("tls_cert", "cannot load the certificate %s and key %s: %v", cfg.TLSCert, cfg.TLSKey, err)
		}
		s.tls = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	rcfg, err := retentionConfig(cfg)
	if err != nil {
		return nil, err
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
		ecfg := events.EmbeddedConfig{
			StoreDir:     filepath.Join(cfg.DataDir, "jetstream"),
			Addr:         cfg.NATSAddr,
			SyncInterval: cfg.SyncInterval,
			TLS:          s.tls,
		}
		if cfg.Auth {
			if s.natsAuth, err = auth.NewNATSAuth(); err != nil {
				return nil, err
			}
			ecfg.Auth = s.natsAuth
			opts = append(opts, nats.Token(s.natsAuth.Internal()))
		}
		s.ns, err = events.StartEmbedded(ecfg)
		if err != nil {
			return nil, listenError("nats", cfg.NATSAddr, "--nats-addr", err)
		}
		opts = append(opts, nats.InProcessServer(s.ns))
		if cfg.NATSAddr != "-" {
			url = s.ns.ClientURL()
		}
	} else {
		if cfg.NATSCreds != "" {
			opts = append(opts, nats.UserCredentials(cfg.NATSCreds))
		}
		if cfg.TLSCA != "" {
			opts = append(opts, nats.RootCAs(cfg.TLSCA))
		}
	}
	connectURL := url
	if s.ns != nil {
		// In process: no TLS between Trellis and its own server.
		connectURL = strings.Replace(url, "tls://", "nats://", 1)
	}
	if s.nc, err = nats.Connect(connectURL, opts...); err != nil {
		return nil, fmt.Errorf("connect to NATS %s: %w", url, err)
	}
	if s.store, err = events.NewStore(s.nc, events.StoreConfig{Replicas: cfg.Replicas}); err != nil {
		return nil, err
	}
	if err = s.store.Ensure(ctx); err != nil {
		if events.IsPermissionDenied(err) {
			return nil, &trellis.Error{Code: trellis.CodeUnauthorized, Err: err, Message: fmt.Sprintf(
				"the NATS server at %s refused a subject Trellis needs (permissions violation): grant this NATS user the JetStream API ($JS.API.>, $JS.ACK.>) and the trellis.> subjects: %v", url, err)}
		}
		return nil, err
	}
	if cfg.Auth {
		s.auth = auth.NewService(s.store, cfg.Logger)
		if err = s.auth.Start(ctx); err != nil {
			return nil, err
		}
		if s.natsAuth != nil {
			s.natsAuth.Attach(s.auth.Registry(), s.ns)
		}
		path, created, err := s.auth.Bootstrap(ctx, cfg.DataDir, cfg.AdminToken)
		if err != nil {
			return nil, err
		}
		s.info.Auth = true
		s.info.AdminTokenFile = path
		s.info.AdminTokenCreated = created
	}
	s.registry = prometheus.NewRegistry()
	s.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	s.svc = handlers.NewService(s.store, handlers.ServiceConfig{DataDir: cfg.DataDir, AnchorInterval: audit.AnchorInterval, Logger: cfg.Logger, Metrics: s.registry,
		Vine: vinegraph.Config{Roots: cfg.Workspaces, Served: cfg.ServeAPI}, Code: cfg.Code})
	if err = s.svc.Start(ctx); err != nil {
		return nil, err
	}
	s.info = Info{PID: os.Getpid(), NATSURL: url, DataDir: cfg.DataDir, Embedded: s.ns != nil, StartedAt: time.Now().UTC(),
		Workspaces: s.svc.VineHandler().Roots(), Auth: s.info.Auth, AdminTokenFile: s.info.AdminTokenFile,
		AdminTokenCreated: s.info.AdminTokenCreated, TLS: s.tls != nil}

	if cfg.HTTPAddr != "" {
		if err = s.startHTTP(); err != nil {
			return nil, err
		}
	}
	if cfg.ServeAPI {
		scfg := natsapi.ServeConfig{
			Info:   natsapi.PingInfo{Version: Version, PID: s.info.PID, DataDir: cfg.DataDir, HTTPURL: s.info.HTTPURL, Workspaces: s.info.Workspaces},
			Logger: cfg.Logger,
		}
		if s.auth != nil {
			scfg.Auth, scfg.Tokens = s.auth, s.auth
		}
		r, err := natsapi.Serve(s.nc, s.svc, scfg)
		if err != nil {
			return nil, err
		}
		s.mu.Lock()
		s.responder = r
		s.mu.Unlock()
		if s.ns == nil {
			// On an external NATS: leave the API to other servers while
			// this one's node has no JetStream quorum.
			s.watchQuorum(scfg)
		}
	}
	if rcfg != nil {
		if err = s.startRetention(rcfg); err != nil {
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
	mcpSrv := mcpapi.NewServerWith(s.svc, mcpapi.Config{Version: Version, Logger: s.cfg.Logger})
	liveDone := make(chan struct{})
	hcfg := httpapi.Config{
		Ready: func() error {
			s.mu.Lock()
			q := s.quorum
			s.mu.Unlock()
			return q.ready()
		},
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
		Loopback: isLoopback(s.cfg.HTTPAddr),
	}
	if s.auth != nil {
		hcfg.Auth = s.auth
	}
	s.httpSrv = &http.Server{
		Handler:           httpapi.New(s.svc, hcfg),
		ReadHeaderTimeout: HTTPReadHeaderTimeout,
		ReadTimeout:       HTTPReadTimeout,
		WriteTimeout:      HTTPWriteTimeout,
		IdleTimeout:       HTTPIdleTimeout,
		TLSConfig:         s.tls,
		ErrorLog:          slog.NewLogLogger(s.cfg.Logger.Handler(), slog.LevelDebug),
	}
	var once sync.Once
	s.httpSrv.RegisterOnShutdown(func() { once.Do(func() { close(liveDone) }) })
	scheme := "http://"
	if s.tls != nil {
		scheme = "https://"
		ln = tls.NewListener(ln, s.tls)
	}
	base := scheme + ln.Addr().String()
	s.info.HTTPURL = base
	s.info.MCPURL = base + "/mcp"
	go func() {
		if err := s.httpSrv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.cfg.Logger.Error("http server", "err", err)
		}
	}()
	return nil
}

// The HTTP server's timeouts. The write timeout is above the longest
// operation's own bound (a replay: 10 min); an MCP event stream (GET
// /mcp) lifts it for itself.
const (
	HTTPReadHeaderTimeout = 10 * time.Second
	HTTPReadTimeout       = time.Minute
	HTTPWriteTimeout      = 15 * time.Minute
	HTTPIdleTimeout       = 2 * time.Minute
)

// Auth returns the access control (nil when authentication is off).
func (s *Server) Auth() *auth.Service { return s.auth }

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
	s.retention.Close()
	if s.httpSrv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = s.httpSrv.Shutdown(ctx)
		cancel()
	}
	if s.quorum != nil {
		s.quorum.close()
	}
	s.mu.Lock()
	if s.responder != nil {
		s.responder.Stop()
		s.responder = nil
	}
	s.mu.Unlock()
	if s.auth != nil {
		s.auth.Stop()
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
	if s.store != nil {
		if err := s.store.Close(); err != nil {
			s.cfg.Logger.Warn("event store close", "err", err)
		}
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
