package main

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/trellis/trellis/retention"
	"github.com/trellis/trellis/server"
)

func (a *app) serveCommand() *cobra.Command {
	var cfg server.Config
	var syncInterval time.Duration
	var retain, archive string
	c := &cobra.Command{
		Use:   "serve",
		Short: "Run Trellis: embedded NATS JetStream (or --nats-url), projections, NATS API, HTTP API, MCP",
		Example: `  trellis serve                                  # embedded NATS on 127.0.0.1:4222, HTTP on 127.0.0.1:7070
  trellis serve --nats-addr 127.0.0.1:0 --http-addr 127.0.0.1:0
  TRELLIS_NATS_URL=nats://n1:4222,nats://n2:4222 trellis serve --replicas 3
  trellis serve --auth --nats-addr 0.0.0.0:4222 --http-addr 0.0.0.0:7070 --tls-cert srv.pem --tls-key srv.key`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.DataDir, cfg.NATSURL, cfg.Workspaces = a.dataDir, a.natsURL, a.workspaces
			cfg.SyncInterval = syncInterval
			if err := a.retentionFlags(&cfg, retain, archive); err != nil {
				return err
			}
			cfg.ServeAPI, cfg.WriteInfo = true, true
			cfg.TLSCA, cfg.NATSCreds = a.tlsCA, a.natsCreds
			if cfg.Auth {
				cfg.AdminToken = os.Getenv("TRELLIS_ADMIN_TOKEN")
			}
			cfg.Logger = slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
			code, err := a.models.codeConfig()
			if err != nil {
				return err
			}
			code.EmbedInterval = 2 * time.Second
			cfg.Code = code
			srv, err := server.Start(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			defer srv.Close()
			info := srv.Info()
			mode := "embedded, fsync on every write"
			if cfg.SyncInterval > 0 {
				mode = fmt.Sprintf("embedded, fsync every %s (acknowledged events can be lost on power loss)", cfg.SyncInterval)
			}
			if !info.Embedded {
				mode = "external"
			}
			fmt.Fprintf(a.stdout, "trellis %s serving (pid %d)\n", server.Version, os.Getpid())
			fmt.Fprintf(a.stdout, "  data:  %s\n", info.DataDir)
			fmt.Fprintf(a.stdout, "  nats:  %s (%s)\n", info.NATSURL, mode)
			if info.HTTPURL != "" {
				fmt.Fprintf(a.stdout, "  http:  %s\n", info.HTTPURL)
				fmt.Fprintf(a.stdout, "  dashboard: %s/\n", info.HTTPURL)
				fmt.Fprintf(a.stdout, "  mcp:   %s\n", info.MCPURL)
				fmt.Fprintf(a.stdout, "  metrics: %s/metrics\n", info.HTTPURL)
			}
			fmt.Fprintf(a.stdout, "  workspace: %s (VINE files must lie here; relative paths resolve against the first)\n", strings.Join(info.Workspaces, ", "))
			if cfg.Retention > 0 {
				every := cfg.PruneEvery
				if every == 0 {
					every = retention.DefaultEvery(cfg.Retention)
				}
				pace := ""
				if cfg.PruneRate > 0 {
					pace = fmt.Sprintf(", at most %d messages removed a second", cfg.PruneRate)
				}
				fmt.Fprintf(a.stdout, "  retention: finished tasks older than %s pruned every %s, archived to %s%s\n", cfg.Retention, every, cfg.Archive, pace)
			}
			if code.Embedder != nil {
				fmt.Fprintf(a.stdout, "  embeddings: %s (hybrid search)\n", code.Embedder.Model())
			}
			if code.Chat != nil {
				fmt.Fprintf(a.stdout, "  chat:  %s (explain)\n", code.Chat.Model())
			}
			switch {
			case info.AdminTokenCreated:
				fmt.Fprintf(a.stdout, "  auth:  on; admin token created in %s (mode 0600; give it with --token or TRELLIS_TOKEN)\n", info.AdminTokenFile)
			case info.Auth:
				fmt.Fprintf(a.stdout, "  auth:  on (tokens on every listener; the admin token was created on first start: %s)\n", info.AdminTokenFile)
			default:
				fmt.Fprintf(a.stdout, "  auth:  off (loopback only; start with --auth to require tokens)\n")
			}
			if !cfg.Auth && server.Exposed(cfg) {
				fmt.Fprintf(a.stderr, "trellis: WARNING: --insecure: listening on a non-loopback address without authentication: anyone who reaches it can read and change everything\n")
				cfg.Logger.Warn("insecure: no authentication on a non-loopback address")
			}
			fmt.Fprintf(a.stdout, "  recorded in %s\n", server.InfoPath(info.DataDir))
			<-cmd.Context().Done()
			fmt.Fprintln(a.stdout, "trellis: shutting down")
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&cfg.NATSAddr, "nats-addr", "127.0.0.1:4222", "embedded NATS listen address (port 0 picks a free port)")
	f.StringVar(&cfg.HTTPAddr, "http-addr", "127.0.0.1:7070", "HTTP API, /mcp and /metrics listen address (port 0 picks a free port; empty disables)")
	f.IntVar(&cfg.Replicas, "replicas", 0, "stream replicas (3 on a cluster); given, existing streams are changed to it; omitted, existing streams keep theirs and new ones get 1")
	f.BoolVar(&cfg.Auth, "auth", false, "require tokens on every listener (NATS, HTTP, MCP, metrics); the first start creates <data>/auth/admin.token (TRELLIS_ADMIN_TOKEN chooses it)")
	f.BoolVar(&cfg.Insecure, "insecure", false, "allow listening on a non-loopback address without --auth (warns on every start)")
	f.StringVar(&cfg.TLSCert, "tls-cert", "", "serve NATS and HTTP over TLS with this certificate (PEM; with --tls-key)")
	f.StringVar(&cfg.TLSKey, "tls-key", "", "the private key of --tls-cert (PEM)")
	f.StringVar(&retain, "retention", "", "prune finished queue tasks whose events were all stored longer ago than this `duration` (720h, 30d), periodically, as trellis prune does; needs --archive")
	f.StringVar(&archive, "archive", "", "with --retention: the directory pruned events are archived to first (created when missing; outside the data directory's jetstream/)")
	f.DurationVar(&cfg.PruneEvery, "prune-every", 0, "with --retention: the time between two prunes (default a tenth of --retention, between 1m and 1h)")
	f.IntVar(&cfg.PruneRate, "prune-rate", 0, "with --retention: remove at most this many pruned messages (events and tombstones) a second, alone or in a purge of a queue's tombstones (with fsync on, each removal is a synced write the worker pools wait behind; 0: as fast as the store takes them)")
	f.DurationVar(&syncInterval, "sync-interval", 0, "opt out of fsync-per-write on the embedded server: sync every interval instead (faster; a power loss can lose acknowledged events)")
	return c
}

// retentionFlags checks serve's --retention and --archive into cfg
// (server.Start checks the rest: --archive without --retention, an
// archive directory that cannot be written, --prune-every's bounds).
func (a *app) retentionFlags(cfg *server.Config, retain, archive string) error {
	cfg.Archive = archive
	if retain == "" {
		return nil
	}
	age, err := parseAge("retention", retain)
	if err != nil {
		return err
	}
	cfg.Retention = age
	if archive != "" {
		return a.archiveOutsideLog(archive)
	}
	return nil
}
