package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/client"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/failover"
	"github.com/trellis/trellis/server"
	"github.com/trellis/trellis/taskqueue"
	"github.com/trellis/trellis/workers"
)

func (a *app) workerCommand() *cobra.Command {
	var cfg workers.Config
	var command, metricsAddr string
	var embedded bool
	var backoff time.Duration
	c := &cobra.Command{
		Use:   "worker --queue Q --exec CMD",
		Short: "Run a worker pool: claim tasks with a lease, run CMD per task, retry failures, drain on SIGTERM",
		Long: `Runs CMD (with sh -c) for each task claimed from the queue. The task packet is JSON on stdin;
TRELLIS_TASK_ID, TRELLIS_QUEUE and TRELLIS_ATTEMPT are set. Exit 0 finishes the task: if the last
stdout line is a JSON object, its fields (what_was_done, what_changed, what_next, blockers, citations,
steps_used, tool_calls_used) fill the checkpoint, else the stdout tail is what_was_done. A non-zero
exit is a failed attempt (the stderr tail is the error), retried with exponential backoff and jitter
until the task's max attempts, then the task is dead.

A worker needs a running server (trellis serve): it finds it through --nats-url / TRELLIS_NATS_URL or
the data dir's serve.json, and exits 7 (unavailable) when none answers. --embedded runs a server inside
the worker instead (on a free loopback port, recorded in serve.json so other commands reach it).

A claim holds a lease that the worker extends while CMD runs; a worker that dies loses its leases and
another worker takes the tasks over after the lease. A worker that loses its server (restarted,
unreachable) keeps the outcomes it could not record and records them once the server answers again,
heartbeating their leases meanwhile. A worker whose NATS node is cut off from the JetStream quorum (a
partition) moves its connection to another node of the cluster (given in --nats-url or announced by the
cluster) where JetStream (with a token: the Trellis API) answers. A task that finishes within --claim-window is
recorded with one event (its outcome carries its claim); a worker that dies inside that window leaves
no record of the attempt, which runs again after the lease and is not counted against max attempts. SIGTERM or SIGINT drains: no new claims, running
commands get --grace to finish, the rest are released back to the queue.`,
		Example: `  trellis worker --queue default --concurrency 4 --exec ./handle-task.sh
  trellis worker --queue builds --exec 'make -C "$(jq -r .inputs[0])"' --lease 1m --grace 2m
  trellis worker --embedded --data ./data --exec ./handle-task.sh     # no server running: bring one along`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if command == "" {
				return trellis.FieldError("exec", "is required: the command to run per task")
			}
			if err := trellis.ValidateQueueName(cfg.Queue); err != nil {
				return err
			}
			log := slog.New(slog.NewTextHandler(a.stderr, nil))
			var s *session
			var err error
			if embedded {
				var srv *server.Server
				if s, srv, err = a.embeddedSession(cmd.Context(), log); err != nil {
					return err
				}
				log.Info("embedded server", "data", srv.Info().DataDir, "nats", srv.Info().NATSURL, "recorded_in", server.InfoPath(srv.Info().DataDir))
			} else if s, err = a.serverSession(cmd.Context(), "trellis worker"); err != nil {
				return err
			}
			defer s.close()
			if s.nc != nil {
				// A worker attached to a NATS node cut off from the
				// quorum moves to a node where what it needs answers:
				// JetStream, or with a token the Trellis API.
				probe := failover.Stream(events.StreamQueue, failover.StaleReplica)
				if s.store == nil {
					token := a.token
					probe = func(ctx context.Context, nc *nats.Conn) error {
						_, err := client.NewAPI(nc, 0).WithToken(token).Ping(ctx)
						return err
					}
				}
				wctx, stopWatch := context.WithCancel(cmd.Context())
				defer stopWatch()
				go failover.Watch(wctx, s.nc, failover.Config{Probe: probe, Logger: log})
			}
			reg := prometheus.NewRegistry()
			reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
			cfg.Metrics = workers.NewMetrics(reg)
			cfg.Logger = log
			if metricsAddr != "" {
				ln, err := net.Listen("tcp", metricsAddr)
				if err != nil {
					return trellis.Errorf(trellis.CodeInvalid, "metrics address %s: %w", metricsAddr, err)
				}
				srv := &http.Server{Handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), ReadHeaderTimeout: 5 * time.Second}
				go func() {
					if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
						log.Error("metrics server", "err", err)
					}
				}()
				defer srv.Close()
				fmt.Fprintf(a.stderr, "worker metrics: http://%s/metrics\n", ln.Addr())
			}
			qcfg := taskqueue.Config{}
			if backoff > 0 {
				qcfg.RetryBackoff = taskqueue.ExponentialBackoff(backoff, 5*time.Minute)
			}
			handler := &workers.Exec{Command: command}
			defer handler.Close()
			var pool *workers.Pool
			tokenName := ""
			if s.store == nil {
				// With a token the server claims, decides and appends for
				// this worker (retries are the server's backoff): the
				// worker acts as the token's name or one of its slots.
				who, err := s.client.Whoami(cmd.Context())
				if err != nil {
					return err
				}
				if who != nil {
					tokenName = who.Name
				}
				if who != nil && cfg.Worker == "" {
					// Pools of one token on several machines: each its own
					// claimant, all acting as the token's name.
					host, _ := os.Hostname()
					if host == "" {
						host = "worker"
					}
					cfg.Worker = fmt.Sprintf("%s/%s-%d", who.Name, host, os.Getpid())
				}
				pool, err = workers.NewWithSource(s.client.WorkerSource(), handler, cfg)
				if err != nil {
					return err
				}
			} else if pool, err = workers.New(taskqueue.New(s.store, qcfg), handler, cfg); err != nil {
				return err
			}
			lease := "the queue's"
			if cfg.Lease > 0 {
				lease = cfg.Lease.String()
			}
			log.Info("worker started", "queue", cfg.Queue, "concurrency", cfg.Concurrency, "lease", lease)
			err = pool.Run(cmd.Context())
			if trellis.ErrorCode(err) == trellis.CodeUnauthorized && tokenName != "" {
				return &trellis.Error{Code: trellis.CodeUnauthorized, Err: err,
					Message: fmt.Sprintf("token %q was revoked or has expired: the worker stops (%v)", tokenName, err)}
			}
			return err
		},
	}
	f := c.Flags()
	f.StringVar(&cfg.Queue, "queue", trellis.DefaultQueue, "queue to work")
	f.IntVar(&cfg.Concurrency, "concurrency", 1, "tasks run at once")
	f.StringVar(&command, "exec", "", "command run per task with sh -c (required)")
	f.DurationVar(&cfg.Lease, "lease", 0, "how long a claim survives without a heartbeat: the queue's lease, shared by all its pools (0 keeps the queue's; 30s for a new queue; another value becomes the queue's lease)")
	f.DurationVar(&cfg.TaskTimeout, "task-timeout", 0, "how long one attempt may run (tasks added with a shorter --timeout keep theirs; 0: unbounded): CMD is then stopped and the attempt fails with a timeout error, retried per the task's max attempts")
	f.DurationVar(&cfg.Grace, "grace", 30*time.Second, "on SIGTERM, how long running commands may finish before their tasks are released")
	f.StringVar(&cfg.Worker, "worker-id", "", "worker id in claims and history (default <hostname>-<pid>; with a token <token name>/<hostname>-<pid>, and an explicit one must start with <token name>/)")
	f.DurationVar(&backoff, "backoff", time.Second, "first retry delay; doubles per attempt up to 5m, with jitter")
	f.DurationVar(&cfg.ClaimWindow, "claim-window", workers.DefaultClaimWindow, "a task finishing within this long after its claim is recorded with one event, its outcome carrying the claim; "+
		"longer tasks have their claim recorded when it passes (at most a quarter of the lease; negative: record every claim before CMD starts; ignored with a token)")
	f.BoolVar(&embedded, "embedded", false, "run a Trellis server inside this worker instead of using a running one (it holds the data dir while the worker runs)")
	f.StringVar(&metricsAddr, "metrics-addr", "127.0.0.1:0", "serve Prometheus /metrics here (port 0 picks one; empty disables)")
	return c
}
