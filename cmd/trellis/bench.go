package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/bench"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/workers"
)

func (a *app) benchCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "bench",
		Short: "Measure Trellis beside raw JetStream on a fresh embedded server (or a cluster of its own: --nats-url)",
		Long: `Each benchmark starts a fresh embedded server and measures raw JetStream on it in the same run.
With --nats-url it runs on that NATS cluster instead, with --bench-replicas stream replicas (default 3),
raw JetStream beside it on the same cluster: the cluster must hold no Trellis streams (the benchmark
creates them and deletes them at the end), so never point it at a cluster in use.`,
	}
	c.PersistentFlags().IntVar(&a.batchMin, "batch-min", 0, "group commit: the fewest waiting appends committed as one atomic batch (0: the store's default per stream, -1: never batch)")
	c.PersistentFlags().IntVar(&a.benchReplicas, "bench-replicas", 3, "with --nats-url: the replicas of the streams the benchmark creates on the cluster")
	c.AddCommand(a.benchAppend(), a.benchQueue(), a.benchWorkers(), a.benchVine(), a.benchMemory(), a.benchIngest(), a.benchBoard(), a.benchSearch(), a.benchWorkflows())
	profiled(c)
	return c
}

// benchStore starts a fresh embedded server in a temporary directory (or
// connects to the cluster of --nats-url, see clusterBenchStore) and
// returns its store and a cleanup.
func (a *app) benchStore(cmd *cobra.Command, syncInterval time.Duration, batchMin int) (*events.Store, func(), error) {
	// Only an explicit --nats-url moves a benchmark onto a cluster (not
	// TRELLIS_NATS_URL, which other commands follow): it creates and
	// deletes streams there.
	if f := cmd.Flag("nats-url"); a.natsURL != "" && f != nil && f.Changed {
		if syncInterval > 0 {
			return nil, nil, trellis.FieldError("sync-interval", "does not apply to --nats-url: a cluster syncs as its nodes' jetstream sync_interval says")
		}
		return a.clusterBenchStore(cmd.Context(), batchMin)
	}
	return embeddedBenchStore(cmd, syncInterval, batchMin)
}

// embeddedBenchStore starts a fresh embedded server in a temporary
// directory and returns its store and a cleanup.
func embeddedBenchStore(cmd *cobra.Command, syncInterval time.Duration, batchMin int) (*events.Store, func(), error) {
	dir, err := os.MkdirTemp("", "trellis-bench-")
	if err != nil {
		return nil, nil, err
	}
	ns, err := events.StartEmbedded(events.EmbeddedConfig{StoreDir: dir, Addr: "-", SyncInterval: syncInterval})
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	cleanup := func() {
		ns.Shutdown()
		ns.WaitForShutdown()
		os.RemoveAll(dir)
	}
	nc, err := nats.Connect("", nats.InProcessServer(ns))
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	store, err := events.NewStore(nc, events.StoreConfig{BatchMin: batchMin})
	if err == nil {
		err = store.Ensure(cmd.Context())
	}
	if err != nil {
		nc.Close()
		cleanup()
		return nil, nil, err
	}
	return store, func() { _ = store.Close(); nc.Close(); cleanup() }, nil
}

// report is what a benchmark prints.
type report interface{ Print(io.Writer) }

// benchOn runs a benchmark on a fresh embedded server and prints its
// report as a table or JSON.
func (a *app) benchOn(cmd *cobra.Command, syncInterval time.Duration, asJSON bool, run func(*events.Store) (report, error)) error {
	store, cleanup, err := a.benchStore(cmd, syncInterval, a.batchMin)
	if err != nil {
		return err
	}
	defer cleanup()
	rep, err := run(store)
	if err != nil {
		return trellis.Errorf(trellis.CodeInternal, "bench: %w", err)
	}
	if asJSON {
		return printJSON(a.stdout, rep)
	}
	if f := cmd.Flag("nats-url"); a.natsURL != "" && f != nil && f.Changed {
		fmt.Fprintf(a.stdout, "server: the cluster at %s, %d replica(s) per stream; sync as its nodes are configured\n", a.natsURL, a.benchReplicas)
	} else {
		fmt.Fprintf(a.stdout, "mode: %s\n", syncMode(syncInterval))
	}
	rep.Print(a.stdout)
	return nil
}

func syncMode(d time.Duration) string {
	if d > 0 {
		return "sync every " + d.String()
	}
	return "fsync on every write"
}

func (a *app) benchWorkers() *cobra.Command {
	var cfg bench.WorkersConfig
	var syncInterval time.Duration
	var asJSON bool
	c := &cobra.Command{
		Use:     "workers",
		Short:   "Worker-pool tasks/s at 1, 4, 8, 32 handlers (no-op) vs the raw JetStream work-queue rate, with claim latency",
		Example: "  trellis bench workers --tasks 2000",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.benchOn(cmd, syncInterval, asJSON, func(store *events.Store) (report, error) {
				return bench.RunWorkers(cmd.Context(), store, cfg)
			})
		},
	}
	c.Flags().IntVar(&cfg.Tasks, "tasks", 1000, "tasks per concurrency level")
	c.Flags().IntSliceVar(&cfg.Levels, "levels", []int{1, 4, 8, 32}, "handler concurrencies to measure")
	c.Flags().IntVar(&cfg.AddBatch, "add-batch", 100, "tasks a producer adds per call (AddMany); 1 adds them one by one")
	c.Flags().DurationVar(&cfg.ClaimWindow, "claim-window", workers.DefaultClaimWindow, "the pools' claim window (see trellis worker --claim-window); negative records every claim before its handler runs")
	c.Flags().DurationVar(&syncInterval, "sync-interval", 0, "sync every interval instead of every write")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func (a *app) benchWorkflows() *cobra.Command {
	var cfg bench.WorkflowsConfig
	var syncInterval time.Duration
	var asJSON bool
	c := &cobra.Command{
		Use:     "workflows",
		Short:   "Durable workflow runs/s (3 no-op steps) at several concurrencies and start → completed latency at an offered rate, beside raw JetStream appends",
		Example: "  trellis bench workflows\n  trellis bench workflows --levels 8,64,256 --rate 100 --seconds 5",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.benchOn(cmd, syncInterval, asJSON, func(store *events.Store) (report, error) {
				return bench.RunWorkflows(cmd.Context(), store, cfg)
			})
		},
	}
	f := c.Flags()
	f.IntSliceVar(&cfg.Levels, "levels", []int{8, 32, 128}, "runs in flight (closed loop) to measure")
	f.Float64Var(&cfg.Seconds, "seconds", 3, "seconds per measurement")
	f.IntVar(&cfg.Rate, "rate", 100, "offered start rate of the latency phase (runs/s)")
	f.DurationVar(&syncInterval, "sync-interval", 0, "sync every interval instead of every write")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func (a *app) benchAppend() *cobra.Command {
	var cfg bench.AppendConfig
	var syncInterval time.Duration
	var asJSON bool
	c := &cobra.Command{
		Use:   "append",
		Short: "Checked appends: raw single messages, raw atomic batches by size (where batching pays off), and the Store's group commit",
		Example: `  trellis bench append
  trellis bench append --sizes 4,8,12,16,32 --seconds 3`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.benchOn(cmd, syncInterval, asJSON, func(store *events.Store) (report, error) {
				return bench.RunAppend(cmd.Context(), store, cfg)
			})
		},
	}
	f := c.Flags()
	f.IntSliceVar(&cfg.Publishers, "publishers", []int{1, 8, 32}, "concurrencies of raw single appends")
	f.IntSliceVar(&cfg.Sizes, "sizes", []int{2, 4, 8, 12, 16, 32, 64, 128, 256}, "atomic batch sizes")
	f.IntSliceVar(&cfg.Appenders, "appenders", []int{1, 8, 32, 128}, "concurrencies of appends through the group commit")
	f.Float64Var(&cfg.Seconds, "seconds", 2, "seconds per measurement")
	f.DurationVar(&syncInterval, "sync-interval", 0, "sync every interval instead of every write")
	f.BoolVar(&asJSON, "json", false, "print JSON")
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
			return a.benchOn(cmd, syncInterval, asJSON, func(store *events.Store) (report, error) {
				return bench.RunQueue(cmd.Context(), store, cfg)
			})
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

func (a *app) benchBoard() *cobra.Command {
	var cfg bench.BoardConfig
	syncInterval := time.Second
	var asJSON bool
	c := &cobra.Command{
		Use:   "board",
		Short: "The queue board at a million tasks: rebuild by replay, memory, list latency, commit cost of live writes",
		Long: "Writes a queue log of --tasks tasks (all added, half claimed, a quarter completed) straight to a fresh\n" +
			"embedded server with asynchronous publishes, then measures the board built from it: the time to rebuild it\n" +
			"by replay, memory after the load, the latency of one page of each kind of list, the time spent committing\n" +
			"per second of live writes, and the former JSON board's heap and snapshot at --legacy-tasks tasks.\n" +
			"The log is written in the sync-interval mode (1 s) by default: generating it is not what is measured; the\n" +
			"board syncs each of its own commits whatever the mode.",
		Example: `  trellis bench board                    # 1,000,000 tasks
  trellis bench board --tasks 100000 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Progress = a.stderr
			return a.benchOn(cmd, syncInterval, asJSON, func(store *events.Store) (report, error) {
				return bench.RunBoard(cmd.Context(), store, cfg)
			})
		},
	}
	f := c.Flags()
	f.IntVar(&cfg.Tasks, "tasks", 1_000_000, "tasks on the board")
	f.IntVar(&cfg.Queues, "queues", 4, "queues the tasks are spread over")
	f.IntVar(&cfg.WriteRate, "write-rate", 5000, "offered rate of the live-writes phase (events/s)")
	f.Float64Var(&cfg.WriteSeconds, "write-seconds", 5, "length of the live-writes phase")
	f.IntVar(&cfg.LegacyTasks, "legacy-tasks", 0, "tasks for the former JSON board's figures (default min(tasks, 100000); -1 skips)")
	f.DurationVar(&syncInterval, "sync-interval", time.Second, "the log's sync interval while it is generated (0: fsync every write)")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func (a *app) benchVine() *cobra.Command {
	var cfg bench.VineConfig
	var syncInterval time.Duration
	var asJSON bool
	c := &cobra.Command{
		Use:     "vine",
		Short:   "Atomic VINE claims/s of concurrent agents vs the raw checked-append rate, and frontier timings",
		Example: "  trellis bench vine --tasks 500 --agents 8",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.benchOn(cmd, syncInterval, asJSON, func(store *events.Store) (report, error) {
				return bench.RunVine(cmd.Context(), store, cfg)
			})
		},
	}
	c.Flags().IntVar(&cfg.Tasks, "tasks", 500, "ready tasks to claim")
	c.Flags().IntVar(&cfg.Agents, "agents", 8, "concurrent agents")
	c.Flags().DurationVar(&syncInterval, "sync-interval", 0, "sync every interval instead of every write")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func (a *app) benchMemory() *cobra.Command {
	var cfg bench.MemoryConfig
	var asJSON bool
	c := &cobra.Command{
		Use:     "memory",
		Short:   "Session consolidation of 100,000 observations (~20% near duplicates): time and memory",
		Example: "  trellis bench memory --observations 100000",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rep := bench.RunMemory(cfg)
			if asJSON {
				return printJSON(a.stdout, rep)
			}
			rep.Print(a.stdout)
			return nil
		},
	}
	c.Flags().IntVar(&cfg.Observations, "observations", 100000, "observations to consolidate")
	c.Flags().Float64Var(&cfg.NearDuplicates, "near", 0.2, "share of near-duplicate observations")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func (a *app) benchIngest() *cobra.Command {
	var cfg bench.IngestConfig
	var syncInterval time.Duration
	var asJSON bool
	c := &cobra.Command{
		Use:   "ingest",
		Short: "Ingest a tree (default the Go standard library) and index it, beside raw bleve indexing of the same chunks; re-ingest and query latency",
		Example: `  trellis bench ingest --root $(go env GOROOT)/src
  trellis bench ingest --embed-url http://localhost:11434/v1 --embed-model nomic-embed-text   # + embedding time and hybrid latency`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			code, err := a.models.codeConfig()
			if err != nil {
				return err
			}
			cfg.Code = code
			return a.benchOn(cmd, syncInterval, asJSON, func(store *events.Store) (report, error) {
				return bench.RunIngest(cmd.Context(), store, cfg)
			})
		},
	}
	c.Flags().StringVar(&cfg.Root, "root", "", "tree to ingest (default $(go env GOROOT)/src)")
	c.Flags().IntVar(&cfg.Queries, "queries", 300, "queries to time")
	c.Flags().DurationVar(&syncInterval, "sync-interval", 0, "sync every interval instead of every write")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func (a *app) benchSearch() *cobra.Command {
	var cfg bench.SearchConfig
	var asJSON, verbose bool
	c := &cobra.Command{
		Use:   "search",
		Short: "Rank the evaluation questions' held-out half with plain BM25, Trellis lexical and Trellis hybrid over the same chunks: MRR@10, hit@1, hit@10 per kind",
		Example: `  trellis bench search
  trellis bench search --half tuning -v
  trellis bench search --embed-url http://localhost:11434/v1 --embed-model nomic-embed-text   # adds the hybrid row`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			code, err := a.models.codeConfig()
			if err != nil {
				return err
			}
			cfg.Service.Code = code
			store, cleanup, err := embeddedBenchStore(cmd, time.Second, a.batchMin) // a quality measure: no cluster needed
			if err != nil {
				return err
			}
			defer cleanup()
			rep, err := bench.RunSearch(cmd.Context(), store, cfg)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(a.stdout, rep)
			}
			rep.Verbose = verbose
			rep.Print(a.stdout)
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&cfg.GoSrc, "go-src", "", "Go source tree holding the Go codebases (default $(go env GOROOT)/src)")
	f.StringVar(&cfg.Half, "half", bench.HalfHeldOut, "questions to rank: held-out, tuning or all")
	f.BoolVarP(&verbose, "verbose", "v", false, "print every question's rank per ranker")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	return c
}
