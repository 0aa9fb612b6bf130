package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/trellis/trellis"
)

func (a *app) queueCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "queue",
		Short: "The task queue: add bounded tasks, claim the next, finish with a checkpoint or fail",
	}
	c.AddCommand(a.queueAdd(), a.queueNext(), a.queueDone(), a.queueFail(), a.queueList(), a.queueShow(), a.queueExport(),
		a.queueRetry(), a.queueCancel(), a.queueHeartbeat(), a.queueRelease(), a.queueControls(), a.queueLimit(),
		a.queueControl("pause", "Pause a queue cluster-wide: no worker claims from it until resumed", "  trellis queue pause default --reason maintenance"),
		a.queueControl("resume", "Resume a paused queue", "  trellis queue resume default"),
		a.queueControl("lease", "Set the queue's lease for every pool: how long a claim survives without a heartbeat (a shorter lease waits until every pool heartbeats for it); with --agent, the default lease of queue next claims",
			"  trellis queue lease default 2m\n  trellis queue lease agents 1h --agent     # queue next claims without --lease hold 1h (0 restores 10m)"))
	return c
}

func (a *app) queueAdd() *cobra.Command {
	var req trellis.AddTaskRequest
	var meta []string
	var asJSON bool
	var from string
	c := &cobra.Command{
		Use:   "add --objective TEXT | --from FILE.jsonl",
		Short: "Add a task to a queue and print its packet (or many, one JSON add request per line of a file)",
		Example: `  trellis queue add --objective "Refactor authentication module" \
    --input chunk_abc123 --input auth.py --acceptance "All tests pass" \
    --max-tool-calls 20 --max-steps 10 --metadata team=core
  trellis queue add --objective "Send the digest" --delay 30s --priority 1 --unique-key digest --unique-for 1h
  trellis queue add --objective "Review the form" --after 01J... --concurrency-key repo-a
  trellis queue add --from plan.jsonl      # {"objective": "...", "inputs": [...], ...} per line; - reads stdin`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if from != "" {
				for _, name := range []string{"objective", "input", "acceptance", "max-tool-calls", "max-steps", "parent", "max-attempts", "metadata", "idempotency-key",
					"priority", "delay", "run-at", "unique-key", "unique-for", "after", "concurrency-key"} {
					if cmd.Flags().Changed(name) {
						return trellis.FieldError(name, "cannot be combined with --from: give it on each line of the file")
					}
				}
				return a.addFrom(cmd, from, req.Queue, asJSON)
			}
			m, err := parseMetadata(meta)
			if err != nil {
				return err
			}
			req.Metadata = m
			return a.call(cmd, asJSON, func(ctx context.Context, s *session) (any, error) { return s.queue.Add(ctx, req) },
				func(v any) { printTask(a.stdout, v.(*trellis.Task)) })
		},
	}
	f := c.Flags()
	f.StringVar(&req.Objective, "objective", "", "what the task must achieve (required)")
	f.StringVar(&req.Queue, "queue", trellis.DefaultQueue, "queue name")
	f.StringArrayVar(&req.Inputs, "input", nil, "an input (chunk id, path, ...); repeatable")
	f.StringVar(&req.Acceptance, "acceptance", "", "how to tell the task is done")
	f.IntVar(&req.MaxToolCalls, "max-tool-calls", trellis.DefaultMaxToolCalls, "tool-call budget")
	f.IntVar(&req.MaxSteps, "max-steps", trellis.DefaultMaxSteps, "step budget")
	f.StringVar(&req.ParentID, "parent", "", "parent task id")
	f.IntVar(&req.MaxAttempts, "max-attempts", trellis.DefaultMaxAttempts, "claims before a worker pool declares the task dead")
	f.StringArrayVar(&meta, "metadata", nil, "metadata key=value; repeatable")
	f.StringVar(&req.IdempotencyKey, "idempotency-key", "", "repeat-safe key: a second add with the same key (within the duplicate window) returns the first task")
	addSchedulingFlags(f, &req)
	f.StringVar(&from, "from", "", "add every task of a JSONL file (one add request per line, queue_add's fields; - reads stdin), in calls of up to 1000")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

// addSchedulingFlags adds the flags of an add's scheduling fields.
func addSchedulingFlags(f *pflag.FlagSet, req *trellis.AddTaskRequest) {
	f.IntVar(&req.Priority, "priority", trellis.DefaultPriority, fmt.Sprintf("1 (claimed first) to %d (last)", trellis.MaxPriority))
	f.StringVar(&req.Delay, "delay", "", "scheduled until this long from now (30s, 10m, 2h)")
	f.StringVar(&req.RunAt, "run-at", "", "scheduled until this RFC 3339 time (2026-12-01T09:00:00Z)")
	f.StringVar(&req.UniqueKey, "unique-key", "", "while a task added with this key holds it, an add with the key returns that task (\"duplicate\": true)")
	f.StringVar(&req.UniqueFor, "unique-for", "", "hold the unique key this long after the add (default: while the task is not finished)")
	f.StringArrayVar(&req.After, "after", nil, "a prerequisite task id: waiting until it is done; repeatable")
	f.StringVar(&req.ConcurrencyKey, "concurrency-key", "", "a key the queue's per-key limit applies to (e.g. a repository)")
	f.StringVar(&req.Timeout, "timeout", "", "how long one attempt may run (e.g. 10m): a worker cancels the handler and fails the attempt with a timeout error")
}

// parseMetadata turns k=v pairs into a map.
func parseMetadata(pairs []string) (map[string]string, error) {
	if len(pairs) == 0 {
		return nil, nil
	}
	m := make(map[string]string, len(pairs))
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return nil, trellis.FieldError("metadata", "%q is not key=value", p)
		}
		if _, dup := m[k]; dup {
			return nil, trellis.FieldError("metadata", "key %q given twice", k)
		}
		m[k] = v
	}
	return m, nil
}

func (a *app) queueNext() *cobra.Command {
	var req trellis.NextRequest
	var asJSON bool
	var lease time.Duration
	c := &cobra.Command{
		Use:   "next --worker W [--lease 10m]",
		Short: "Claim the oldest queued task and print it; prints null when nothing is queued",
		Long: "Claim the oldest queued task and print it; prints null when nothing is queued.\n\n" +
			"The claim holds a lease (--lease, default the queue's agent lease: 10m unless set with `trellis queue lease QUEUE D --agent`): keep it with `trellis queue heartbeat TASK_ID --worker W` " +
			"before it runs out, or the task is given to another worker (a lease_expired event, which counts as an attempt). " +
			"See docs/queue.md.",
		Example: "  trellis queue next --worker agent-1 --json\n  trellis queue next --worker agent-1 --lease 30m",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			req.LeaseSeconds = lease.Seconds()
			s, err := a.openSession(cmd.Context())
			if err != nil {
				return err
			}
			defer s.close()
			t, err := s.queue.Next(cmd.Context(), req)
			if err != nil {
				return err
			}
			if t == nil {
				fmt.Fprintln(a.stdout, "null")
				return nil
			}
			if asJSON {
				return printJSON(a.stdout, t)
			}
			printTask(a.stdout, t)
			return nil
		},
	}
	c.Flags().StringVar(&req.Queue, "queue", trellis.DefaultQueue, "queue name")
	c.Flags().StringVar(&req.Worker, "worker", "", "worker id (required)")
	c.Flags().DurationVar(&lease, "lease", 0, "how long the claim holds without a heartbeat (0: the queue's agent lease, 10m unless set; 1s to 24h)")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func (a *app) queueDone() *cobra.Command {
	var req trellis.DoneRequest
	var asJSON bool
	c := &cobra.Command{
		Use:   "done TASK_ID --worker W --what-was-done TEXT",
		Short: "Finish a claimed task with a checkpoint",
		Example: `  trellis queue done 01J... --worker agent-1 --what-was-done "Fixed the null check" \
    --changed payment.py --next "Deploy to staging" --citation chunk_xyz123 --steps-used 4`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req.TaskID = args[0]
			var dataDir string
			return a.call(cmd, asJSON, func(ctx context.Context, s *session) (any, error) {
				dataDir = s.dataDir
				return s.queue.Done(ctx, req)
			}, func(v any) { a.printFinished(dataDir, v.(*trellis.Task)) })
		},
	}
	f := c.Flags()
	f.StringVar(&req.Worker, "worker", "", "worker id that claimed the task (required)")
	f.StringVar(&req.WhatWasDone, "what-was-done", "", "what was done (required)")
	f.StringArrayVar(&req.WhatChanged, "changed", nil, "a changed path; repeatable")
	f.StringVar(&req.WhatNext, "next", "", "what should happen next")
	f.StringArrayVar(&req.Blockers, "blocker", nil, "a blocker; repeatable")
	f.StringArrayVar(&req.Citations, "citation", nil, "a cited chunk id; repeatable")
	f.IntVar(&req.StepsUsed, "steps-used", 0, "steps used")
	f.IntVar(&req.ToolCallsUsed, "tool-calls-used", 0, "tool calls used")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func (a *app) queueFail() *cobra.Command {
	var req trellis.FailRequest
	var asJSON bool
	c := &cobra.Command{
		Use:     "fail TASK_ID --worker W --error TEXT",
		Short:   "End a claimed task as failed with a checkpoint",
		Example: `  trellis queue fail 01J... --worker agent-1 --error "Database unreachable" --blocker "Missing .env file"`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req.TaskID = args[0]
			var dataDir string
			return a.call(cmd, asJSON, func(ctx context.Context, s *session) (any, error) {
				dataDir = s.dataDir
				return s.queue.Fail(ctx, req)
			}, func(v any) { a.printFinished(dataDir, v.(*trellis.Task)) })
		},
	}
	f := c.Flags()
	f.StringVar(&req.Worker, "worker", "", "worker id that claimed the task (required)")
	f.StringVar(&req.Error, "error", "", "what went wrong (required)")
	f.StringVar(&req.WhatWasDone, "what-was-done", "", "what was done before failing")
	f.StringArrayVar(&req.Blockers, "blocker", nil, "a blocker; repeatable")
	f.IntVar(&req.StepsUsed, "steps-used", 0, "steps used")
	f.IntVar(&req.ToolCallsUsed, "tool-calls-used", 0, "tool calls used")
	f.BoolVar(&req.Retry, "retry", false, "ask for another attempt (after a backoff) instead of ending the task; dead once max attempts are used")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func (a *app) printFinished(dataDir string, t *trellis.Task) {
	printTask(a.stdout, t)
	fmt.Fprintf(a.stdout, "  Checkpoint: %s\n", filepath.Join(dataDir, "checkpoints", t.TaskID+".md"))
}

func (a *app) queueList() *cobra.Command {
	var req trellis.ListRequest
	var status, asOf string
	var asJSON bool
	c := &cobra.Command{
		Use:   "list",
		Short: "List one page of tasks from the queue board, oldest first (or --newest first), with counts per queue",
		Long: "List one page of tasks from the queue board in task id (creation) order, newest first with --newest, with the task\n" +
			"counts per queue and status.\n" +
			"A page holds at most --limit rows (default 100, at most 1000); when more match, the output ends with the\n" +
			"next cursor (next_cursor in --json): pass it as --cursor for the next page.\n" +
			"With --as-of TIME the board is the one the log held at TIME (rebuilt from the log, cached under <data>/asof/).",
		Example: `  trellis queue list --status queued --json
  trellis queue list --as-of 2026-01-02T09:30:00Z
  trellis queue list --queue ops --since 2026-01-02T15:04:05Z --limit 50
  trellis queue list --limit 50 --cursor dDE6MDFKLi4u
  trellis queue list --newest --limit 10`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			req.Status = trellis.Status(status)
			// One time syntax everywhere: RFC 3339, a date or a duration
			// ago, like audit --since.
			if req.Since != "" {
				t, err := trellis.ParseTimeArg("since", req.Since, time.Now())
				if err != nil {
					return err
				}
				req.Since = t.Format(time.RFC3339Nano)
			}
			if asOf != "" {
				return a.listAsOf(cmd, req, asOf, asJSON)
			}
			return a.call(cmd, asJSON, func(ctx context.Context, s *session) (any, error) { return s.queue.List(ctx, req) },
				func(v any) { printList(a.stdout, v.(*trellis.TaskList)) })
		},
	}
	c.Flags().StringVar(&req.Queue, "queue", "", "only this queue")
	c.Flags().StringVar(&status, "status", "", "only this status: scheduled, waiting, queued, claimed, done, failed, dead, cancelled")
	c.Flags().StringVar(&req.Since, "since", "", "only tasks updated at or after this time (RFC 3339, a date, or a duration ago: 90m)")
	c.Flags().IntVar(&req.Limit, "limit", trellis.DefaultListLimit, fmt.Sprintf("rows per page (at most %d)", trellis.MaxListLimit))
	c.Flags().StringVar(&req.Cursor, "cursor", "", "continue after the previous page: its next cursor")
	c.Flags().StringVar(&req.Text, "text", "", "only tasks whose objective contains this text (ignoring case) or whose id starts with it")
	c.Flags().BoolVar(&req.Newest, "newest", false, "newest first (a --cursor continues in its page's order)")
	c.Flags().StringVar(&asOf, "as-of", "", "the board as the log stood at this time (RFC 3339, a date, or a duration ago), rebuilt from the log")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func (a *app) queueShow() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:     "show TASK_ID",
		Short:   "Show one task's packet, folded from the log",
		Example: "  trellis queue show 01J... --json",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.call(cmd, asJSON, func(ctx context.Context, s *session) (any, error) { return s.queue.Show(ctx, args[0]) },
				func(v any) { printTask(a.stdout, v.(*trellis.Task)) })
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func (a *app) queueExport() *cobra.Command {
	var out string
	c := &cobra.Command{
		Use:     "export",
		Short:   "Write the JSONL task-packet log: one packet per queue event, as it stood after the event",
		Example: "  trellis queue export --out tasks.jsonl",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := a.openSession(cmd.Context())
			if err != nil {
				return err
			}
			defer s.close()
			if out == "" {
				_, err := s.exportTasks(cmd.Context(), a.stdout)
				return err
			}
			n, err := exportToFile(cmd.Context(), s, out)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stderr, "wrote %d task packets to %s\n", n, out)
			return nil
		},
	}
	c.Flags().StringVar(&out, "out", "", "write to this file instead of stdout")
	return c
}

// exportToFile streams the export into out through writeAtomic: out is
// either the old file or a whole export, and memory does not grow with
// the log.
func exportToFile(ctx context.Context, s *session, out string) (int, error) {
	var n int
	err := writeAtomic(out, func(w io.Writer) (err error) {
		n, err = s.exportTasks(ctx, w)
		return err
	})
	return n, err
}
