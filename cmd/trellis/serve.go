package main

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/trellis/trellis/server"
)

func (a *app) serveCommand() *cobra.Command {
	var cfg server.Config
	var syncInterval time.Duration
	c := &cobra.Command{
		Use:   "serve",
		Short: "Run Trellis: embedded NATS JetStream (or --nats-url), projections, NATS API, HTTP API, MCP",
		Example: `  trellis serve                                  # embedded NATS on 127.0.0.1:4222, HTTP on 127.0.0.1:7070
  trellis serve --nats-addr 127.0.0.1:0 --http-addr 127.0.0.1:0
  TRELLIS_NATS_URL=nats://n1:4222,nats://n2:4222 trellis serve --replicas 3`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.DataDir, cfg.NATSURL, cfg.Workspaces = a.dataDir, a.natsURL, a.workspaces
			cfg.SyncInterval = syncInterval
			cfg.ServeAPI, cfg.WriteInfo = true, true
			cfg.Logger = slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
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
			fmt.Fprintf(a.stdout, "  recorded in %s\n", server.InfoPath(info.DataDir))
			<-cmd.Context().Done()
			fmt.Fprintln(a.stdout, "trellis: shutting down")
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&cfg.NATSAddr, "nats-addr", "127.0.0.1:4222", "embedded NATS listen address (port 0 picks a free port)")
	f.StringVar(&cfg.HTTPAddr, "http-addr", "127.0.0.1:7070", "HTTP API, /mcp and /metrics listen address (port 0 picks a free port; empty disables)")
	f.IntVar(&cfg.Replicas, "replicas", 1, "stream replicas (3 on a cluster)")
	f.DurationVar(&syncInterval, "sync-interval", 0, "opt out of fsync-per-write on the embedded server: sync every interval instead (faster; a power loss can lose acknowledged events)")
	return c
}
