package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/handlers"
	"github.com/trellis/trellis/handlers/natsapi"
	"github.com/trellis/trellis/server"
)

// session is how one CLI command reaches Trellis: a running server over the
// NATS API when one answers, else an in-process server for the duration of
// the command.
type session struct {
	queue   trellis.QueueService
	admin   trellis.QueueAdmin
	vine    trellis.VineService
	memory  trellis.MemoryService
	code    trellis.CodeService
	audit   trellis.AuditService
	store   *events.Store
	replay  func(context.Context) (*handlers.ReplayResult, error)
	dataDir string // where checkpoints are written
	remote  bool
	ping    *natsapi.PingInfo // what the running server answered (remote only)
	close   func()
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
			if s, err := a.remoteSession(ctx, url); err == nil {
				return s, nil
			}
			url = "" // stale serve.json: the server is gone
		}
	} else if s, err := a.remoteSession(ctx, url); err == nil {
		return s, nil
	} else if trellis.ErrorCode(err) != trellis.CodeUnavailable || errors.Is(err, errNoNATS) {
		return nil, err
	}
	return a.localSession(ctx, url)
}

var errNoNATS = errors.New("cannot connect to NATS")

func (a *app) remoteSession(ctx context.Context, url string) (*session, error) {
	// Reconnect for as long as it takes: a long-running command (a worker)
	// must survive a server restart; one-shot requests have their own
	// timeouts.
	nc, err := nats.Connect(url, nats.Name("trellis-cli"), nats.Timeout(pingTimeout),
		nats.MaxReconnects(-1), nats.ReconnectWait(250*time.Millisecond))
	if err != nil {
		return nil, &trellis.Error{Code: trellis.CodeUnavailable, Message: fmt.Sprintf("connect to NATS %s: %v", url, err), Err: errors.Join(errNoNATS, err)}
	}
	client := natsapi.NewClient(nc, 0)
	pctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	info, err := client.Ping(pctx)
	if err != nil {
		nc.Close()
		return nil, err
	}
	store, err := events.NewStore(nc, events.StoreConfig{})
	if err != nil {
		nc.Close()
		return nil, err
	}
	return &session{
		queue:   client,
		admin:   client,
		vine:    client,
		memory:  client,
		code:    client,
		audit:   client,
		store:   store,
		replay:  client.Replay,
		dataDir: info.DataDir,
		remote:  true,
		ping:    info,
		close:   nc.Close,
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

// localSession runs Trellis in this process for one command.
func (a *app) localSession(ctx context.Context, url string) (*session, error) {
	s, _, err := a.startLocal(ctx, server.Config{
		DataDir:    a.dataDir,
		NATSURL:    url,
		NATSAddr:   "-",
		Workspaces: a.workspaces,
		Logger:     slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if errors.Is(err, server.ErrLocked) {
		return nil, &trellis.Error{Code: trellis.CodeUnavailable, Err: err, Message: fmt.Sprintf(
			"%s, and no running trellis server answered: if `trellis serve` is starting, retry in a moment; "+
				"otherwise point TRELLIS_NATS_URL at the server or use another --data", trellis.AsError(err).Message)}
	}
	return s, err
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
		vine:    srv.Service(),
		memory:  srv.Service(),
		code:    srv.Service(),
		audit:   srv.Service(),
		store:   srv.Store(),
		replay:  srv.Service().Replay,
		dataDir: dataDir,
		close:   srv.Close,
	}, srv, nil
}
