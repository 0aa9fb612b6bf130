package events

import (
	"crypto/tls"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// EmbeddedConfig configures the in-process nats-server.
type EmbeddedConfig struct {
	// StoreDir is where JetStream keeps its files (required).
	StoreDir string
	// Addr is host:port to listen on (default 127.0.0.1:4222; port 0 picks
	// a free one; "-" listens on no port at all, in-process clients only).
	Addr string
	// SyncInterval, when > 0, replaces the durable default (fsync every
	// write before acknowledging) with periodic syncs: faster, but a power
	// loss or OS crash can lose acknowledged events.
	SyncInterval time.Duration
	// ServerName names the server (default "trellis").
	ServerName string
	// Auth, when set, authenticates every client connection (see
	// auth.NATSAuth); nil lets everyone in.
	Auth server.Authentication
	// TLS, when set, requires TLS on the client port (in-process
	// connections are exempt).
	TLS *tls.Config
}

// StartEmbedded starts a nats-server with JetStream storing in
// cfg.StoreDir and waits until it accepts connections.
func StartEmbedded(cfg EmbeddedConfig) (*server.Server, error) {
	if cfg.StoreDir == "" {
		return nil, fmt.Errorf("embedded nats: store dir is required")
	}
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:4222"
	}
	if cfg.ServerName == "" {
		cfg.ServerName = "trellis"
	}
	opts := &server.Options{
		ServerName:         cfg.ServerName,
		JetStream:          true,
		StoreDir:           filepath.Clean(cfg.StoreDir),
		NoSigs:             true,
		NoLog:              true,
		JetStreamMaxMemory: 256 << 20,
		SyncAlways:         cfg.SyncInterval <= 0,
	}
	if cfg.SyncInterval > 0 {
		opts.SyncInterval = cfg.SyncInterval
	}
	if cfg.Auth != nil {
		opts.CustomClientAuthentication = cfg.Auth
	}
	if cfg.TLS != nil {
		opts.TLSConfig = cfg.TLS
		opts.TLS = true
		opts.TLSTimeout = 5
	}
	if cfg.Addr == "-" {
		opts.DontListen = true
	} else {
		host, portStr, err := net.SplitHostPort(cfg.Addr)
		if err != nil {
			return nil, fmt.Errorf("embedded nats: address %q: %w", cfg.Addr, err)
		}
		port, err := strconv.Atoi(portStr)
		if err != nil {
			return nil, fmt.Errorf("embedded nats: port %q: %w", portStr, err)
		}
		if port == 0 {
			port = server.RANDOM_PORT
		} else {
			// Fail fast and clearly when the port is taken; the server
			// itself would only time out.
			l, err := net.Listen("tcp", cfg.Addr)
			if err != nil {
				return nil, fmt.Errorf("embedded nats: cannot listen on %s: %w", cfg.Addr, err)
			}
			_ = l.Close()
		}
		opts.Host, opts.Port = host, port
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("embedded nats: %w", err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(30 * time.Second) {
		ns.Shutdown()
		return nil, fmt.Errorf("embedded nats: not ready after 30s (address %s in use?)", cfg.Addr)
	}
	return ns, nil
}
