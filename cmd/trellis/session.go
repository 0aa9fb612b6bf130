package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/audit"
	"github.com/trellis/trellis/auth"
	"github.com/trellis/trellis/client"
	"github.com/trellis/trellis/codememory"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/handlers"
	"github.com/trellis/trellis/handlers/natsapi"
	"github.com/trellis/trellis/server"
	"github.com/trellis/trellis/taskqueue"
)

// session is how one CLI command reaches Trellis: a running server over the
// NATS API when one answers, else an in-process server for the duration of
// the command.
type session struct {
	queue   trellis.QueueService
	admin   trellis.QueueAdmin
	leases  trellis.QueueLeases
	vine    trellis.VineService
	memory  trellis.MemoryService
	code    trellis.CodeService
	auditor trellis.AuditService
	// projections tells how far the serving process's projections
	// folded the log (audit verify compares them with the streams).
	projections trellis.ProjectionStatus
	store       *events.Store
	replay      func(context.Context) (*handlers.ReplayResult, error)
	// embed embeds chunks without vectors (local sessions with an
	// embedding model; a running server does it in the background).
	embed   func(context.Context) (*codememory.EmbedSummary, error)
	dataDir string // where checkpoints are written
	remote  bool
	ping    *natsapi.PingInfo // what the running server answered (remote only)
	// client is the NATS API client of a remote session. With a token
	// (store nil) everything goes through it: a token holder may not
	// read or append to the log directly.
	client *client.API
	// nc is a remote session's NATS connection.
	nc    *nats.Conn
	close func()
}

// pingTimeout bounds the discovery of a running server.
const pingTimeout = 2 * time.Second

// openSession finds a running server through --nats-url / TRELLIS_NATS_URL
// or the data directory's serve.json, and otherwise starts Trellis
// in-process (on an embedded NATS server unless a URL was given).
func (a *app) openSession(ctx context.Context) (*session, error) {
	url := a.natsURL
	if url == "" {
		info, err := server.ReadInfo(a.dataDir)
		if err != nil {
			return nil, err
		}
		if info != nil {
			url = info.NATSURL
			s, err := a.remoteSession(ctx, url)
			if err == nil {
				return s, nil
			}
			if trellis.ErrorCode(err) == trellis.CodeUnauthorized {
				return nil, err // the server is there and refuses us
			}
			url = "" // stale serve.json: the server is gone
		}
	} else if s, err := a.remoteSession(ctx, url); err == nil {
		return s, nil
	} else if trellis.ErrorCode(err) != trellis.CodeUnavailable || errors.Is(err, errNoNATS) {
		return nil, err
	} else {
		// NATS answers but no trellis server does. A command never becomes
		// a server on a NATS it was pointed at: it would manage the
		// cluster's streams (their replicas, their limits) with its own
		// defaults. Only `trellis serve` does, as its operator asks.
		return nil, &trellis.Error{Code: trellis.CodeUnavailable, Err: err, Message: fmt.Sprintf(
			"no trellis server answers on the NATS at %s (%s); a command never runs Trellis itself on an external NATS: "+
				"start `trellis serve --nats-url %s` (or check that it is up), or drop --nats-url (env TRELLIS_NATS_URL) to work on the local --data directory",
			url, trellis.AsError(err).Message, url)}
	}
	return a.localSession(ctx)
}

var errNoNATS = errors.New("cannot connect to NATS")

func (a *app) remoteSession(ctx context.Context, url string) (*session, error) {
	// Reconnect for as long as it takes: a long-running command (a worker)
	// must survive a server restart; one-shot requests have their own
	// timeouts.
	nc, err := nats.Connect(url, a.natsOptions()...)
	if errors.Is(err, nats.ErrAuthorization) || (err != nil && strings.Contains(err.Error(), "Authorization Violation")) {
		msg := fmt.Sprintf("the NATS server at %s refused the connection: it needs a valid token (--token or TRELLIS_TOKEN)", url)
		if a.token != "" {
			msg = fmt.Sprintf("the NATS server at %s refused the token: it is unknown or revoked", url)
		}
		return nil, &trellis.Error{Code: trellis.CodeUnauthorized, Message: msg, Err: errors.Join(errNoNATS, err)}
	}
	if err != nil {
		return nil, &trellis.Error{Code: trellis.CodeUnavailable, Message: fmt.Sprintf("connect to NATS %s: %v", url, err), Err: errors.Join(errNoNATS, err)}
	}
	client := client.NewAPI(nc, 0).WithToken(a.token)
	pctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	info, err := client.Ping(pctx)
	if err != nil {
		last := nc.LastError()
		nc.Close()
		if events.IsPermissionDenied(last) {
			return nil, &trellis.Error{Code: trellis.CodeUnauthorized, Err: errors.Join(err, last), Message: fmt.Sprintf(
				"the NATS server at %s refused the trellis API subject (permissions violation: %v): grant this NATS user trellis.api.> and its reply inbox", url, last)}
		}
		return nil, err
	}
	var store *events.Store
	if a.token == "" {
		// No token: a server without authentication, whose log this
		// client may read (and a worker append to) directly.
		if store, err = events.NewStore(nc, events.StoreConfig{}); err != nil {
			nc.Close()
			return nil, err
		}
	}
	return &session{
		client:  client,
		queue:   client,
		admin:   client,
		leases:  client,
		vine:    client,
		memory:  client,
		code:    client,
		auditor: client,
		store:   store,
		// A server that predates the operation answers it unknown:
		// verify then goes on without it.
		projections: client,
		replay:      client.Replay,
		dataDir:     info.DataDir,
		remote:      true,
		ping:        info,
		close: func() {
			if store != nil {
				_ = store.Close()
			}
			nc.Close()
		},
		nc: nc,
	}, nil
}

// serverSession reaches a running server (through --nats-url /
// TRELLIS_NATS_URL or the data dir's serve.json) and never starts one:
// for long-running clients such as a worker, which would otherwise hold
// the data directory and lock every other command out. who names the
// command in the error.
func (a *app) serverSession(ctx context.Context, who string) (*session, error) {
	fix := fmt.Sprintf("start one with `trellis serve --data %s` (or `make run`) and run %s again, "+
		"point --nats-url (env TRELLIS_NATS_URL) at one, or pass --embedded to run a server inside %s", a.dataDir, who, who)
	url, where := a.natsURL, "--nats-url"
	if url == "" {
		info, err := server.ReadInfo(a.dataDir)
		if err != nil {
			return nil, err
		}
		if info == nil {
			return nil, trellis.Errorf(trellis.CodeUnavailable, "%s needs a running trellis server and found none "+
				"(no --nats-url, no %s): %s", who, server.InfoPath(a.dataDir), fix)
		}
		url, where = info.NATSURL, fmt.Sprintf("%s (pid %d)", server.InfoPath(a.dataDir), info.PID)
	}
	s, err := a.remoteSession(ctx, url)
	if trellis.ErrorCode(err) == trellis.CodeUnauthorized {
		return nil, err
	}
	if err != nil {
		return nil, trellis.Errorf(trellis.CodeUnavailable, "%s needs a running trellis server; the one at %s from %s does not answer (%s): %s",
			who, url, where, trellis.AsError(err).Message, fix)
	}
	return s, nil
}

// embeddedSession starts a full server inside this process for a
// long-running command (worker --embedded): it serves the NATS API on a
// free loopback port and records itself in serve.json, so other commands
// on the data dir reach it while it runs.
func (a *app) embeddedSession(ctx context.Context, log *slog.Logger) (*session, *server.Server, error) {
	s, srv, err := a.startLocal(ctx, server.Config{
		DataDir: a.dataDir, NATSURL: a.natsURL, NATSAddr: "127.0.0.1:0", Workspaces: a.workspaces,
		ServeAPI: true, WriteInfo: true, Logger: log,
	})
	if errors.Is(err, server.ErrLocked) {
		return nil, nil, &trellis.Error{Code: trellis.CodeUnavailable, Err: err, Message: fmt.Sprintf(
			"--embedded needs the data directory to itself: %s; drop --embedded to work through the running server, or use another --data",
			trellis.AsError(err).Message)}
	}
	return s, srv, err
}

// localSession runs Trellis in this process for one command, on the
// embedded NATS server of the data directory (never on an external one:
// see openSession).
func (a *app) localSession(ctx context.Context) (*session, error) {
	code, err := a.models.codeConfig()
	if err != nil {
		return nil, err
	}
	s, _, err := a.startLocal(ctx, server.Config{
		Code:       code,
		DataDir:    a.dataDir,
		NATSAddr:   "-",
		Workspaces: a.localRoots(),
		Logger:     slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if errors.Is(err, server.ErrLocked) {
		return nil, &trellis.Error{Code: trellis.CodeUnavailable, Err: err, Message: fmt.Sprintf(
			"%s, and no running trellis server answered: if `trellis serve` is starting, retry in a moment; "+
				"otherwise point TRELLIS_NATS_URL at the server or use another --data", trellis.AsError(err).Message)}
	}
	return s, err
}

// localRoots are the workspace roots of an in-process session: --workspace
// (or the working directory), plus the directories of the VINE files the
// user named on this command line.
func (a *app) localRoots() []string {
	if len(a.namedDirs) == 0 {
		return a.workspaces
	}
	roots := append([]string(nil), a.workspaces...)
	if len(roots) == 0 {
		if wd, err := os.Getwd(); err == nil {
			roots = append(roots, wd)
		}
	}
	return append(roots, a.namedDirs...)
}

// startLocal starts Trellis in this process; its errors keep their code
// (a held data dir, a port in use: unavailable), anything else is
// unavailable.
func (a *app) startLocal(ctx context.Context, cfg server.Config) (*session, *server.Server, error) {
	srv, err := server.Start(ctx, cfg)
	if err != nil {
		if te := trellis.AsError(err); te.Code != trellis.CodeInternal {
			return nil, nil, err
		}
		return nil, nil, &trellis.Error{Code: trellis.CodeUnavailable, Message: err.Error(), Err: err}
	}
	dataDir, _ := filepath.Abs(a.dataDir)
	return &session{
		queue:   srv.Service(),
		admin:   srv.Service(),
		leases:  srv.Service(),
		vine:    srv.Service(),
		memory:  srv.Service(),
		code:    srv.Service(),
		auditor: srv.Service(),
		store:   srv.Store(),
		// An in-process server's projections resume from their files:
		// where the last process left them.
		projections: srv.Service(),
		replay:      srv.Service().Replay,
		embed:       srv.Service().EmbedPending,
		dataDir:     dataDir,
		close:       srv.Close,
	}, srv, nil
}

// natsOptions are the connection options of a client: reconnect for as
// long as it takes (a long-running command such as a worker must survive
// a server restart; one-shot requests have their own timeouts), the token
// (the embedded server's credential; replies arrive under the token's own
// inbox prefix, the only one it may subscribe to), the CA and the
// credentials file.
func (a *app) natsOptions() []nats.Option {
	opts := []nats.Option{nats.Name("trellis-cli"), nats.Timeout(pingTimeout),
		nats.MaxReconnects(-1), nats.ReconnectWait(250 * time.Millisecond)}
	if a.token != "" {
		if a.natsCreds == "" {
			opts = append(opts, nats.Token(a.token))
		}
		opts = append(opts, nats.CustomInboxPrefix(auth.InboxPrefix(a.token)))
	}
	if a.natsCreds != "" {
		opts = append(opts, nats.UserCredentials(a.natsCreds))
	}
	if a.tlsCA != "" {
		opts = append(opts, nats.RootCAs(a.tlsCA))
	}
	return opts
}

// audit returns an aggregate's events: from the log, or through the
// server's API when this client may not read the log (a token).
func (s *session) audit(ctx context.Context, id string) ([]events.Recorded, error) {
	if s.store == nil {
		return s.client.Audit(ctx, id)
	}
	return audit.AggregateEvents(ctx, s.store, id)
}

// exportTasks writes the JSONL task-packet log and returns the number of
// packets (counted from the lines when it comes through the API).
func (s *session) exportTasks(ctx context.Context, w io.Writer) (int, error) {
	if s.store == nil {
		cw := &lineCounter{w: w}
		err := s.client.Export(ctx, cw)
		return cw.n, err
	}
	return taskqueue.ExportTasks(ctx, s.store, w)
}

// ingest ingests a directory: here, or with a token by the server, which
// must be able to read the same path.
func (s *session) ingest(ctx context.Context, cfg codememory.IngestConfig) (*codememory.IngestSummary, error) {
	if s.store == nil {
		root, err := filepath.Abs(cfg.Root)
		if err != nil {
			return nil, trellis.FieldError("path", "%v", err)
		}
		return s.client.Ingest(ctx, root, cfg.Repo)
	}
	return codememory.Ingest(ctx, s.store, cfg)
}

// lineCounter counts the lines written through it.
type lineCounter struct {
	w io.Writer
	n int
}

func (c *lineCounter) Write(p []byte) (int, error) {
	c.n += strings.Count(string(p), "\n")
	return c.w.Write(p)
}

// log returns the event log for a command that reads it directly (audit
// verify and export, replay --until, queue list --as-of), or an error
// saying why it cannot: a token holder reaches Trellis only through its
// API, never the log.
func (s *session) log(command string) (*events.Store, error) {
	if s.store == nil {
		return nil, &trellis.Error{Code: trellis.CodeUnauthorized, Field: "token",
			Message: command + " reads the event log directly, which a token may not: run it where the server runs, " +
				"without --token, with NATS credentials that may read the log's streams (the servers' user)"}
	}
	return s.store, nil
}
