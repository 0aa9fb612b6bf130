package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/vine"
	"github.com/trellis/trellis/workers"
)

// maxVineFile bounds files the pure commands (validate, fmt) read.
const maxVineFile = 16 << 20

func (a *app) vineCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "vine",
		Short: "VINE task graphs: validate, format, and run them event-sourced with many agents at once",
		Long: `VINE graphs (.vine files) are executed as event-sourced aggregates: every mutation batch, claim,
expansion and hand edit of the file is an event on TRELLIS_VINE. The file is rewritten (canonical)
only after a change succeeds; a refused command leaves it byte for byte unchanged, and reads never
rewrite it (a missing file is written back). Files must lie inside the workspace roots: those of the
running server (trellis serve --workspace DIR) when one answers, else --workspace (default the
current directory). Paths are resolved against this command's working directory; the graph id
derives from the path relative to the root.`,
	}
	c.AddCommand(a.vineValidate(), a.vineFmt(), a.vineNext(), a.vineRead(), a.vineWrite(), a.vineClaim(),
		a.vineExpand(), a.vineImport(), a.vineExport(), a.vineRun())
	return c
}

// readVineText reads a .vine file for the pure commands.
func readVineText(path string) (string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return "", trellis.FieldError("file", "%v", err)
	}
	if info.Size() > maxVineFile {
		return "", trellis.FieldError("file", "%s is %d bytes; .vine files up to %d bytes are accepted", path, info.Size(), maxVineFile)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", trellis.FieldError("file", "%v", err)
	}
	if bytes.IndexByte(data, 0) >= 0 || !utf8.Valid(data) {
		return "", trellis.FieldError("file", "%s holds binary data, not UTF-8 text", path)
	}
	return string(data), nil
}

func vineInvalid(err error) error {
	return &trellis.Error{Code: trellis.CodeInvalid, Message: err.Error(), Err: err}
}

func (a *app) vineValidate() *cobra.Command {
	return &cobra.Command{
		Use:     "validate FILE",
		Short:   "Check a .vine file against every VINE constraint (no server needed)",
		Example: "  trellis vine validate plan.vine",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			text, err := readVineText(args[0])
			if err != nil {
				return err
			}
			g, err := vine.Parse(text)
			if err != nil {
				return vineInvalid(err)
			}
			if err := vine.Validate(g); err != nil {
				return vineInvalid(err)
			}
			fr := vine.Next(g)
			title := g.Title()
			if title != "" {
				title = " \"" + title + "\""
			}
			fmt.Fprintf(a.stdout, "valid: %s%s: %d nodes, root %s (%s), %d complete (%d%%)\n",
				args[0], title, fr.Progress.Total, fr.Progress.RootID, fr.Progress.RootStatus, fr.Progress.Complete, fr.Progress.Percentage)
			return nil
		},
	}
}

func (a *app) vineFmt() *cobra.Command {
	var write bool
	c := &cobra.Command{
		Use:     "fmt FILE",
		Short:   "Print the canonical serialization of a .vine file (or rewrite it with --write)",
		Example: "  trellis vine fmt plan.vine --write",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			text, err := readVineText(args[0])
			if err != nil {
				return err
			}
			g, err := vine.Parse(text)
			if err == nil {
				err = vine.Validate(g)
			}
			if err != nil {
				return vineInvalid(err)
			}
			out, err := vine.Serialize(g)
			if err != nil {
				return vineInvalid(err)
			}
			if !write {
				_, err := io.WriteString(a.stdout, out)
				return err
			}
			tmp := args[0] + ".tmp"
			if err := os.WriteFile(tmp, []byte(out), 0o644); err != nil {
				return trellis.Errorf(trellis.CodeInternal, "write %s: %w", args[0], err)
			}
			return os.Rename(tmp, args[0])
		},
	}
	c.Flags().BoolVar(&write, "write", false, "rewrite the file in place")
	return c
}

// vineCall is a.call for the commands that run on a server's graphs: it
// first warns when --workspace names roots the running server does not
// have (the server's roots decide).
func (a *app) vineCall(cmd *cobra.Command, asJSON bool, fn func(ctx context.Context, s *session) (any, error), human func(any)) error {
	return a.call(cmd, asJSON, func(ctx context.Context, s *session) (any, error) {
		a.warnWorkspaces(s)
		return fn(ctx, s)
	}, human)
}

// warnWorkspaces tells on stderr that --workspace (or TRELLIS_WORKSPACE)
// has no effect on a running server whose roots do not cover it: files
// there will be refused until the server is restarted with them.
func (a *app) warnWorkspaces(s *session) {
	if !s.remote || s.ping == nil || len(a.workspaces) == 0 {
		return
	}
	var missing []string
	for _, w := range a.workspaces {
		if !insideAny(realPath(w), s.ping.Workspaces) {
			missing = append(missing, realPath(w))
		}
	}
	if len(missing) == 0 {
		return
	}
	fmt.Fprintf(a.stderr, "trellis: warning: --workspace %s is not used: VINE commands go to the running server (pid %d), whose workspace roots are %s; "+
		"to work on files there, restart it with `trellis serve --workspace %s`\n",
		strings.Join(missing, ","), s.ping.PID, strings.Join(s.ping.Workspaces, ", "), strings.Join(append(append([]string(nil), s.ping.Workspaces...), missing...), ","))
}

// realPath is p absolute with symbolic links resolved (as far as they
// exist), as the server judges paths.
func realPath(p string) string {
	p = absFile(p)
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

// insideAny reports whether path lies inside one of roots.
func insideAny(path string, roots []string) bool {
	for _, r := range roots {
		rel, err := filepath.Rel(r, path)
		if err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// vineFile is absFile for a VINE file named on this command line: when
// the command runs Trellis in this process (no server answers), the
// file's directory joins the workspace roots, so a path the user names
// works from any directory. A running server keeps its own roots.
func (a *app) vineFile(p string) string {
	abs := absFile(p)
	a.namedDirs = append(a.namedDirs, filepath.Dir(abs))
	return abs
}

// absFile makes a path absolute against this process's working directory,
// so a server in another directory resolves the same file.
func absFile(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

func printFrontier(w io.Writer, fr *vine.Frontier) {
	p := fr.Progress
	fmt.Fprintf(w, "progress: %d/%d complete (%d%%), root %s: %s, %d ready\n", p.Complete, p.Total, p.Percentage, p.RootID, p.RootStatus, p.ReadyCount)
	section := func(name string, nodes []vine.Node) {
		if len(nodes) == 0 {
			return
		}
		fmt.Fprintf(w, "%s:\n", name)
		for _, n := range nodes {
			fmt.Fprintf(w, "  %-24s %-11s %s\n", n.ID, n.Status, n.ShortName)
		}
	}
	section("ready to start", fr.ReadyToStart)
	section("ready to complete", fr.ReadyToComplete)
	section("blocked", fr.Blocked)
	section("needs expansion", fr.NeedsExpansion)
	if note := stalledNote(fr); note != "" {
		fmt.Fprintln(w, note)
	}
}

func (a *app) vineNext() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:     "next FILE",
		Short:   "Print the execution frontier: ready to start, ready to complete, blocked, needs expansion, progress",
		Example: "  trellis vine next plan.vine --json",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			file := a.vineFile(args[0])
			return a.vineCall(cmd, asJSON, func(ctx context.Context, s *session) (any, error) {
				return s.vine.VineNext(ctx, trellis.VineFileRequest{File: file})
			}, func(v any) { printFrontier(a.stdout, &v.(*trellis.VineFrontier).Frontier) })
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func (a *app) vineRead() *cobra.Command {
	var req trellis.VineReadRequest
	var asJSON bool
	c := &cobra.Command{
		Use:   "read FILE ACTION",
		Short: "Query a graph: summary, list, task, context, descendants, search, refs, validate",
		Long: `Answers a read query on the graph (the file is reconciled with the log first, never rewritten):
  summary                    root, totals, leaf and reference counts, counts by status
  list [--status S] [--query Q]  all nodes, or those in a status (ref for references) and/or matching a text
  task --id ID               one node in full
  context --id ID            a task with its dependencies (status, decisions, attachments) and dependants
  descendants --id ID        everything that transitively depends on ID (its blast radius)
  search --query Q           nodes whose id, name or description contains Q (case-insensitive)
  refs                       the reference nodes
  validate                   check every constraint
With --json: {"graph_id", "action", "result"}, result being the query's answer.`,
		Example: "  trellis vine read plan.vine context --id build\n  trellis vine read plan.vine search --query deploy --json",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			req.File, req.Action = a.vineFile(args[0]), args[1]
			return a.vineCall(cmd, asJSON, func(ctx context.Context, s *session) (any, error) {
				return s.vine.VineRead(ctx, req)
			}, func(v any) {
				if err := printRead(a.stdout, v.(*trellis.VineReadResult)); err != nil {
					fmt.Fprintf(a.stderr, "trellis: %v\n", err)
				}
			})
		},
	}
	c.Flags().StringVar(&req.ID, "id", "", "node id (task, context, descendants)")
	c.Flags().StringVar(&req.Status, "status", "", "status filter (list)")
	c.Flags().StringVar(&req.Query, "query", "", "search text (list, search)")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON: {graph_id, action, result}")
	return c
}

func (a *app) printWrite(res *trellis.VineWriteResult) {
	fmt.Fprintln(a.stdout, res.Summary)
	for _, r := range res.Results {
		fmt.Fprintf(a.stdout, "  %s: %s\n", r.Op, r.Summary)
	}
	printFrontier(a.stdout, &res.Frontier)
}

func (a *app) vineWrite() *cobra.Command {
	var opsJSON, opsFile, agent string
	var asJSON bool
	c := &cobra.Command{
		Use:   "write FILE --ops JSON",
		Short: "Apply one atomic batch of operations and rewrite the file",
		Long:  writeHelp(),
		Example: `  trellis vine write plan.vine --ops '[{"op":"set_status","id":"build","status":"reviewing"},
    {"op":"update","id":"build","decisions":["> built with -trimpath"]}]'`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data := []byte(opsJSON)
			if opsFile != "" {
				if opsJSON != "" {
					return trellis.FieldError("ops", "give --ops or --ops-file, not both")
				}
				var err error
				if data, err = os.ReadFile(opsFile); err != nil {
					return trellis.FieldError("ops-file", "%v", err)
				}
			}
			if strings.TrimSpace(string(data)) == "" {
				return trellis.FieldError("ops", "is required: a JSON array of operations")
			}
			if !utf8.Valid(data) {
				return trellis.FieldError("ops", "is not valid UTF-8")
			}
			ops, err := vine.DecodeOps(data)
			if err != nil {
				return &trellis.Error{Code: trellis.CodeInvalid, Field: "ops", Message: err.Error(), Err: err}
			}
			file := a.vineFile(args[0])
			return a.vineCall(cmd, asJSON, func(ctx context.Context, s *session) (any, error) {
				return s.vine.VineWrite(ctx, trellis.VineWriteRequest{File: file, Operations: ops, Agent: agent})
			}, func(v any) { a.printWrite(v.(*trellis.VineWriteResult)) })
		},
	}
	c.Flags().StringVar(&opsJSON, "ops", "", "JSON array of operations")
	c.Flags().StringVar(&opsFile, "ops-file", "", "file holding the JSON array of operations")
	c.Flags().StringVar(&agent, "agent", "", "who writes (recorded in the history)")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func (a *app) vineClaim() *cobra.Command {
	var req trellis.VineClaimRequest
	var asJSON bool
	c := &cobra.Command{
		Use:   "claim FILE --agent A",
		Short: "Atomically claim one ready task (the given one, or the first ready) and print it with its context",
		Long: `Claims a task that is ready to start (sets it started) in one checked append, so two agents never
start the same task. With --id, a task another agent got first is a conflict (exit 4); without it,
the next ready task is claimed. When no task is ready it says so and exits 0.
With --json: {"graph_id", "task", "resolved_dependencies", "progress"}; task is null when none is ready.`,
		Example: "  trellis vine claim plan.vine --agent agent-3 --json",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req.File = a.vineFile(args[0])
			s, err := a.openSession(cmd.Context())
			if err != nil {
				return err
			}
			defer s.close()
			a.warnWorkspaces(s)
			res, err := s.vine.VineClaim(cmd.Context(), req)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(a.stdout, newClaimOutput(res))
			}
			printClaim(a.stdout, res)
			return nil
		},
	}
	c.Flags().StringVar(&req.ID, "id", "", "claim this task (else the first ready one)")
	c.Flags().StringVar(&req.Agent, "agent", "", "agent id (required)")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func (a *app) vineExpand() *cobra.Command {
	var agent string
	var asJSON bool
	c := &cobra.Command{
		Use:     "expand FILE REF_ID CHILD_FILE",
		Short:   "Inline the child graph at a reference node and rewrite FILE",
		Example: "  trellis vine expand project.vine infra ./infra.vine",
		Args:    cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			child := args[2]
			if !filepath.IsAbs(child) && !strings.HasPrefix(child, "./") && !strings.HasPrefix(child, "../") {
				child = "./" + child
			}
			file := a.vineFile(args[0])
			return a.vineCall(cmd, asJSON, func(ctx context.Context, s *session) (any, error) {
				return s.vine.VineExpand(ctx, trellis.VineExpandRequest{File: file, RefID: args[1], ChildFile: child, Agent: agent})
			}, func(v any) { a.printWrite(v.(*trellis.VineWriteResult)) })
		},
	}
	c.Flags().StringVar(&agent, "agent", "", "who expands (recorded in the history)")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func (a *app) vineImport() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:     "import FILE",
		Short:   "Take a .vine file under Trellis's care (record it in the log), or reconcile a hand edit",
		Example: "  trellis vine import plan.vine",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			file := a.vineFile(args[0])
			return a.vineCall(cmd, asJSON, func(ctx context.Context, s *session) (any, error) {
				return s.vine.VineImport(ctx, trellis.VineFileRequest{File: file})
			}, func(v any) {
				info := v.(*trellis.VineGraphInfo)
				what := "already in the log"
				switch {
				case info.Imported:
					what = "imported"
				case info.HandEdit:
					what = "hand edit recorded"
				}
				fmt.Fprintf(a.stdout, "%s: graph %s (%s), %d nodes, %d%% complete\n", what, info.GraphID, info.Path, info.Progress.Total, info.Progress.Percentage)
			})
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func (a *app) vineExport() *cobra.Command {
	var out string
	c := &cobra.Command{
		Use:     "export GRAPH",
		Short:   "Write a graph's canonical text from the log (by graph id or file) to stdout or --out",
		Example: "  trellis vine export g3f2a9c0d1e2b3a4c5d6e --out plan.vine",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			graph := args[0]
			if _, err := os.Stat(graph); err == nil || strings.ContainsAny(graph, "/.") {
				graph = a.vineFile(graph)
			}
			s, err := a.openSession(cmd.Context())
			if err != nil {
				return err
			}
			defer s.close()
			a.warnWorkspaces(s)
			res, err := s.vine.VineExport(cmd.Context(), trellis.VineExportRequest{Graph: graph})
			if err != nil {
				return err
			}
			if out == "" {
				_, err := io.WriteString(a.stdout, res.Text)
				return err
			}
			tmp := out + ".tmp"
			if err := os.WriteFile(tmp, []byte(res.Text), 0o644); err != nil {
				return trellis.Errorf(trellis.CodeInvalid, "write %s: %w", out, err)
			}
			return os.Rename(tmp, out)
		},
	}
	c.Flags().StringVar(&out, "out", "", "write to this file")
	return c
}

func (a *app) vineRun() *cobra.Command {
	var agent, command string
	var idle time.Duration
	var asJSON bool
	c := &cobra.Command{
		Use:   "run FILE --agent A [--exec CMD]",
		Short: "Run the sub-agent loop on a graph until its root is complete (many agents may run it at once)",
		Long: `Runs the VINE agent loop: next -> expand references -> complete what is ready to complete -> claim ONE
ready task (atomic across agents) -> work -> record decisions -> set reviewing -> repeat, until the root
is complete. With --exec, CMD (sh -c) does each task: the task and its resolved dependencies as JSON on
stdin, TRELLIS_VINE_FILE and TRELLIS_VINE_TASK set; every stdout line starting with "> " is recorded as
a decision; a non-zero exit sets the task blocked with the stderr tail. Without --exec each task is
marked done by the agent. Exits 0 when the root is complete, 8 (stalled) when the graph cannot move
forward: the root is not complete and no task is ready or in progress (blocked tasks, references whose
child file is missing or invalid), or nothing became ready for --idle while others hold started tasks.`,
		Example: "  trellis vine run plan.vine --agent agent-1 --exec ./do-task.sh",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := trellis.ValidateWorkerID(agent); err != nil {
				return trellis.FieldError("agent", "%s", trellis.AsError(err).Message)
			}
			s, err := a.openSession(cmd.Context())
			if err != nil {
				return err
			}
			defer s.close()
			a.warnWorkspaces(s)
			file := a.vineFile(args[0])
			ag := &workers.VineAgent{Service: s.vine, File: file, Agent: agent, Idle: idle}
			if command != "" {
				ag.Work = &workers.VineExec{Command: command, File: file}
			}
			rep, err := ag.Run(cmd.Context())
			if rep != nil {
				if asJSON {
					_ = printJSON(a.stdout, rep)
				} else {
					fmt.Fprintf(a.stdout, "%s: claimed %d, completed %d, blocked %d, expanded %d; %d/%d complete, root %s\n",
						agent, len(rep.Claimed), len(rep.Completed), len(rep.Blocked), len(rep.Expanded),
						rep.Progress.Complete, rep.Progress.Total, rep.Progress.RootStatus)
				}
			}
			if errors.Is(err, workers.ErrStalled) {
				te := *trellis.AsError(err)
				te.Message += fmt.Sprintf(" (e.g. trellis vine write %s --ops '[{\"op\":\"set_status\",\"id\":\"ID\",\"status\":\"notstarted\"}]')", args[0])
				return &te
			}
			return err
		},
	}
	c.Flags().StringVar(&agent, "agent", "", "agent id (required)")
	c.Flags().StringVar(&command, "exec", "", "command doing each task (default: mark it done)")
	c.Flags().DurationVar(&idle, "idle", 10*time.Minute, "give up when nothing is ready for this long while other agents hold started tasks (0 = wait for ever)")
	c.Flags().BoolVar(&asJSON, "json", false, "print the run report as JSON")
	return c
}
