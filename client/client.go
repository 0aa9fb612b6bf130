package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/auth"
	"github.com/trellis/trellis/handlers/natsapi"
	"github.com/trellis/trellis/workers"
)

// DefaultTimeout is how long one request waits for the server's answer
// when Options.Timeout is zero.
const DefaultTimeout = 30 * time.Second

// Options configures a connection. Zero values take the defaults.
type Options struct {
	// Token authenticates the client on a server started with --auth
	// (trellis token create); empty for a server without authentication.
	Token string
	// TLS is the TLS configuration for a server serving NATS over TLS
	// (its RootCAs verify the server's certificate).
	TLS *tls.Config
	// CredsFile is a NATS credentials file, for a cluster with accounts.
	CredsFile string
	// Name names the connection in the NATS server's monitoring (default
	// "trellis-client").
	Name string
	// Timeout is how long one request waits for an answer (default
	// DefaultTimeout).
	Timeout time.Duration
	// ConnectTimeout bounds the first connection and the first ping
	// (default 5 s). After that the connection reconnects for as long as
	// it takes, so a long-running pool survives a server restart.
	ConnectTimeout time.Duration
}

// Client is a connection to a running Trellis. Its methods are safe for
// concurrent use.
type Client struct {
	nc   *nats.Conn
	api  *API
	info natsapi.PingInfo
}

// ErrConnect is wrapped by the error Connect returns when no NATS server
// answers at the URL.
var ErrConnect = errors.New("cannot connect to Trellis")

// Connect connects to the Trellis server whose NATS API listens at url
// (for example nats://127.0.0.1:4222, the address `trellis serve` prints)
// and checks that a server answers. A refused token is a *trellis.Error
// with code unauthorized; no answer is code unavailable.
func Connect(ctx context.Context, url string, opts Options) (*Client, error) {
	if opts.Name == "" {
		opts.Name = "trellis-client"
	}
	if opts.ConnectTimeout <= 0 {
		opts.ConnectTimeout = 5 * time.Second
	}
	nopts := []nats.Option{nats.Name(opts.Name), nats.Timeout(opts.ConnectTimeout),
		nats.MaxReconnects(-1), nats.ReconnectWait(250 * time.Millisecond)}
	if opts.Token != "" {
		if opts.CredsFile == "" {
			nopts = append(nopts, nats.Token(opts.Token))
		}
		// Answers come back on the token's own inbox prefix, the only
		// one a token holder may subscribe to.
		nopts = append(nopts, nats.CustomInboxPrefix(auth.InboxPrefix(opts.Token)))
	}
	if opts.CredsFile != "" {
		nopts = append(nopts, nats.UserCredentials(opts.CredsFile))
	}
	if opts.TLS != nil {
		nopts = append(nopts, nats.Secure(opts.TLS))
	}
	nc, err := nats.Connect(url, nopts...)
	if err != nil {
		code := trellis.CodeUnavailable
		if errors.Is(err, nats.ErrAuthorization) || strings.Contains(err.Error(), "Authorization Violation") {
			code = trellis.CodeUnauthorized
		}
		return nil, &trellis.Error{Code: code, Message: fmt.Sprintf("connect to %s: %v", url, err), Err: errors.Join(ErrConnect, err)}
	}
	api := NewAPI(nc, opts.Timeout).WithToken(opts.Token)
	pctx, cancel := context.WithTimeout(ctx, opts.ConnectTimeout)
	defer cancel()
	info, err := api.Ping(pctx)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("no Trellis server answers at %s: %w", url, err)
	}
	return &Client{nc: nc, api: api, info: *info}, nil
}

// API is the whole NATS API over this client's connection: besides the
// domain interfaces, tokens, export, replay, ingest and workflows.
func (c *Client) API() *API { return c.api }

// Close closes the connection. Pools made by the client stop claiming.
func (c *Client) Close() { c.nc.Close() }

// Server describes the server that answered when the client connected:
// its version, process id, data directory and HTTP URL.
func (c *Client) Server() natsapi.PingInfo { return c.info }

// Queue adds, claims, finishes, lists and shows queue tasks.
func (c *Client) Queue() trellis.QueueService { return c.api }

// Admin retries, cancels and controls queues (pause, resume, rate limits):
// an admin token's work.
func (c *Client) Admin() trellis.QueueAdmin { return c.api }

// Schedules adds, lists and removes recurring schedules.
func (c *Client) Schedules() trellis.ScheduleService { return c.api }

// Vine reads, claims and writes VINE task graphs.
func (c *Client) Vine() trellis.VineService { return c.api }

// Memory runs agent tasks and their memory (observations, facts,
// consolidation).
func (c *Client) Memory() trellis.MemoryService { return c.api }

// Code searches and explains the ingested code.
func (c *Client) Code() trellis.CodeService { return c.api }

// Audit reads an aggregate's history and verifies the log.
func (c *Client) Audit() trellis.AuditService { return c.api }

// WorkerSource is where a pool made with workers.NewWithSource claims
// tasks and records outcomes: this server, through its API.
func (c *Client) WorkerSource() workers.Source { return c.api.WorkerSource() }

// NewPool returns a pool of handlers working cfg.Queue on this server;
// Run starts it and returns when ctx ends (after draining). The server
// decides and records every claim and outcome.
func (c *Client) NewPool(h workers.Handler, cfg workers.Config) (*workers.Pool, error) {
	return workers.NewWithSource(c.WorkerSource(), h, cfg)
}
