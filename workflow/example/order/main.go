package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/server"
	"github.com/trellis/trellis/workflow"
)

// Input is the order workflow's input.
type Input struct {
	ID string `json:"id"`
}

// Output is the order workflow's output.
type Output struct {
	ID        string `json:"id"`
	ShippedBy string `json:"shipped_by"`
}

// Ship is the data of the signal "ship".
type Ship struct {
	Carrier string `json:"carrier"`
}

// order is the workflow's code.
type order struct {
	ledger string
	delay  time.Duration
	sleep  time.Duration
	mu     sync.Mutex
}

// step returns a step body that records its run in the ledger.
func (o *order) step(runID, name string) func(ctx context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		if o.delay > 0 {
			t := time.NewTimer(o.delay)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return "", ctx.Err()
			}
		}
		if o.ledger != "" {
			o.mu.Lock()
			defer o.mu.Unlock()
			f, err := os.OpenFile(o.ledger, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return "", err
			}
			_, err = fmt.Fprintf(f, "%s %s\n", runID, name)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return "", err
			}
		}
		return name + " done", nil
	}
}

func (o *order) run(c *workflow.Context, in Input) (Output, error) {
	for _, name := range []string{"reserve", "charge"} {
		if _, err := workflow.Step(c, name, o.step(c.RunID(), name), workflow.StepOptions{Attempts: 3}); err != nil {
			return Output{}, err
		}
	}
	if err := workflow.Sleep(c, "sleep", o.sleep); err != nil {
		return Output{}, err
	}
	ship, err := workflow.WaitFor[Ship](c, "ship", 0)
	if err != nil {
		return Output{}, err
	}
	if _, err := workflow.Step(c, "ship", o.step(c.RunID(), "ship"), workflow.StepOptions{Attempts: 3}); err != nil {
		return Output{}, err
	}
	return Output{ID: in.ID, ShippedBy: ship.Carrier}, nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "order:", err)
		os.Exit(1)
	}
}

func run() error {
	if len(os.Args) < 2 || os.Args[1] != "worker" {
		return errors.New("usage: order worker [--queue Q] [--concurrency N] [--lease D] [--nats-url URL] [--data DIR]")
	}
	fs := flag.NewFlagSet("order worker", flag.ContinueOnError)
	queue := fs.String("queue", "", "base of the dispatch queue (default wf-order; runs of version 1 go to <base>-v1)")
	concurrency := fs.Int("concurrency", 8, "activations at once")
	lease := fs.Duration("lease", 0, "the dispatch queue's lease (0: the queue's, 30s for a new one)")
	natsURL := fs.String("nats-url", os.Getenv("TRELLIS_NATS_URL"), "NATS server (env TRELLIS_NATS_URL)")
	dataDir := fs.String("data", envOr("TRELLIS_DATA", "data"), "data directory whose serve.json names the server (env TRELLIS_DATA)")
	if err := fs.Parse(os.Args[2:]); err != nil {
		return err
	}
	o := &order{ledger: os.Getenv("ORDER_LEDGER")}
	var err error
	if o.delay, err = envDuration("ORDER_STEP_DELAY"); err != nil {
		return err
	}
	if o.sleep, err = envDuration("ORDER_SLEEP"); err != nil {
		return err
	}
	url := *natsURL
	if url == "" {
		info, err := server.ReadInfo(*dataDir)
		if err != nil {
			return err
		}
		if info == nil {
			return fmt.Errorf("no running trellis server: no --nats-url and no %s (start one with trellis serve --data %s)", server.InfoPath(*dataDir), *dataDir)
		}
		url = info.NATSURL
	}
	nc, err := nats.Connect(url, nats.Name("order-worker"), nats.MaxReconnects(-1), nats.ReconnectWait(250*time.Millisecond))
	if err != nil {
		return fmt.Errorf("connect to %s: %w", url, err)
	}
	defer nc.Close()
	store, err := events.NewStore(nc, events.StoreConfig{})
	if err != nil {
		return err
	}
	defer store.Close()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	e := workflow.New(store, workflow.Config{Logger: log})
	if err := workflow.Register(e, "order", 1, o.run); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log.Info("order worker started", "queue", workflow.QueueFor(*queue, "order", 1), "nats", url)
	return e.Serve(ctx, workflow.ServeConfig{Queue: *queue, Concurrency: *concurrency, Lease: *lease, Logger: log})
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func envDuration(k string) (time.Duration, error) {
	v := os.Getenv(k)
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", k, err)
	}
	return d, nil
}
