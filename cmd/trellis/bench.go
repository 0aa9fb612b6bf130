package main

import (
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/bench"
	"github.com/trellis/trellis/events"
)

func (a *app) benchCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "bench",
		Short: "Measure Trellis beside raw JetStream on a fresh embedded server",
	}
	c.AddCommand(a.benchQueue())
	return c
}

func (a *app) benchQueue() *cobra.Command {
	var cfg bench.QueueConfig
	var syncInterval time.Duration
	var asJSON bool
	c := &cobra.Command{
		Use:   "queue",
		Short: "Task lifecycles/s (add -> next -> done) vs the raw JetStream work-queue round trip, and claim latency",
		Example: `  trellis bench queue                       # fsync on every write (the durable default)
  trellis bench queue --sync-interval 2m    # JetStream's lazy default, for comparison`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := os.MkdirTemp("", "trellis-bench-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(dir)
			ns, err := events.StartEmbedded(events.EmbeddedConfig{StoreDir: dir, Addr: "-", SyncInterval: syncInterval})
			if err != nil {
				return err
			}
			defer ns.Shutdown()
			nc, err := nats.Connect("", nats.InProcessServer(ns))
			if err != nil {
				return err
			}
			defer nc.Close()
			store, err := events.NewStore(nc, events.StoreConfig{})
			if err != nil {
				return err
			}
			if err := store.Ensure(cmd.Context()); err != nil {
				return err
			}
			rep, err := bench.RunQueue(cmd.Context(), store, cfg)
			if err != nil {
				return trellis.Errorf(trellis.CodeInternal, "bench: %w", err)
			}
			if asJSON {
				return printJSON(a.stdout, rep)
			}
			mode := "fsync on every write"
			if syncInterval > 0 {
				mode = "sync every " + syncInterval.String()
			}
			fmt.Fprintf(a.stdout, "mode: %s\n", mode)
			rep.Print(a.stdout)
			return nil
		},
	}
	f := c.Flags()
	f.IntVar(&cfg.Tasks, "tasks", 2000, "tasks per phase")
	f.IntVar(&cfg.Workers, "workers", 8, "concurrent workers")
	f.IntVar(&cfg.OfferedRate, "rate", 1000, "offered add rate of the latency phase (tasks/s)")
	f.Float64Var(&cfg.LatencySeconds, "seconds", 3, "length of the latency phase")
	f.DurationVar(&syncInterval, "sync-interval", 0, "sync every interval instead of every write")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	return c
}
