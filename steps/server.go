package steps

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trellis/trellis/client"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/server"
)

func serverSteps() []Definition {
	return []Definition{{
		Pattern: `^a Trellis server$`,
		Example: `Given a Trellis server`,
		Doc: "Starts a fresh Trellis for the scenario: an embedded NATS JetStream in a scratch directory " +
			"(or the --nats-url server, which must hold no Trellis data), with the NATS API served so worker " +
			"processes can connect. VINE graphs live in the scenario's workspace. Everything is removed when the scenario ends.",
		run: func(w *World) any { return w.startServer },
	}}
}

// startServer starts the scenario's Trellis.
func (w *World) startServer(ctx context.Context) error { return w.StartServer(ctx, nil) }

// StartServer starts the scenario's Trellis as "Given a Trellis server"
// does, with adjust (when not nil) changing its configuration first: a
// suite's own step can start a server with, say, code-memory models.
func (w *World) StartServer(ctx context.Context, adjust func(*server.Config)) error {
	if w.srv != nil {
		return errors.New("the scenario already has a Trellis server")
	}
	dir, err := os.MkdirTemp(w.cfg.TempDir, "trellis-scenario-")
	if err != nil {
		return fmt.Errorf("scratch directory: %w", err)
	}
	w.dir = dir
	w.ws = filepath.Join(dir, "workspace")
	if err := os.MkdirAll(w.ws, 0o755); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*w.cfg.CallTimeout)
	defer cancel()
	cfg := server.Config{
		DataDir:  filepath.Join(dir, "data"),
		NATSAddr: "127.0.0.1:0",
		ServeAPI: true,
		// The scenario's data is thrown away: no fsync per write.
		SyncInterval: time.Second,
		Workspaces:   []string{w.ws},
		Logger:       w.cfg.Logger,
	}
	if w.cfg.NATSURL != "" {
		if err := CheckScratch(ctx, w.cfg.NATSURL); err != nil {
			return err
		}
		cfg.NATSURL = w.cfg.NATSURL
		w.external = true
	}
	if adjust != nil {
		adjust(&cfg)
	}
	srv, err := server.Start(ctx, cfg)
	if err != nil {
		return fmt.Errorf("start Trellis: %w", err)
	}
	w.srv = srv
	svc := srv.Service()
	w.queue, w.admin, w.vine, w.memory = svc, svc, svc, svc
	w.natsURL = srv.Info().NATSURL
	return nil
}

// CheckScratch checks that the NATS server at url can serve as a scratch
// namespace for a scenario: none of Trellis's streams holds data and no
// Trellis server answers on it. Its empty streams (left by an
// interrupted run) are deleted so the scenario starts fresh.
func CheckScratch(ctx context.Context, url string) error {
	nc, err := nats.Connect(url, nats.Name("trellis-features"), nats.Timeout(5*time.Second))
	if err != nil {
		return fmt.Errorf("--nats-url %s: cannot connect: %w", url, err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	var empty []string
	for _, name := range events.StreamNames() {
		st, err := js.Stream(ctx, name)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("--nats-url %s: stream %s: %w", url, name, err)
		}
		if n := st.CachedInfo().State.Msgs; n > 0 {
			return fmt.Errorf("--nats-url %s holds Trellis data (stream %s has %d messages): features run only against "+
				"a NATS server or account without Trellis data, because each scenario deletes Trellis's streams when it ends", url, name, n)
		}
		empty = append(empty, name)
	}
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if info, err := client.NewAPI(nc, 2*time.Second).Ping(pctx); err == nil {
		return fmt.Errorf("--nats-url %s: a Trellis server (pid %d, data %s) is serving on it: features need a NATS server of their own",
			url, info.PID, info.DataDir)
	}
	for _, name := range empty {
		if err := js.DeleteStream(ctx, name); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
			return fmt.Errorf("--nats-url %s: delete empty stream %s: %w", url, name, err)
		}
	}
	return nil
}

// deleteStreams removes Trellis's streams (events.StreamNames, and with
// them every consumer) a scenario created on an external NATS server.
func deleteStreams(ctx context.Context, url string) error {
	nc, err := nats.Connect(url, nats.Name("trellis-features"), nats.Timeout(5*time.Second))
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	var errs []error
	for _, name := range events.StreamNames() {
		if err := js.DeleteStream(ctx, name); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
			errs = append(errs, fmt.Errorf("delete %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}
