package main

import (
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/audit"
	"github.com/trellis/trellis/retention"
)

// maxPruneAge bounds --older-than (a century: anything longer is a typo).
const maxPruneAge = 100 * 365 * 24 * time.Hour

func (a *app) pruneCommand() *cobra.Command {
	var olderThan, archive string
	var rate int
	var asJSON bool
	c := &cobra.Command{
		Use:   "prune",
		Short: "Remove finished queue tasks older than a cut from the log, after archiving their events",
		Long: "Removes from the queue stream every task that is done, failed, dead or cancelled and whose events were all\n" +
			"stored more than --older-than ago. Their events are first written to --archive in the audit export format\n" +
			"(synced; `trellis audit verify --file ARCHIVE` checks it), then a prune record naming the removed sequences and\n" +
			"the archive's digest is appended to the log, then the events are removed: `trellis audit verify` stays OK, and\n" +
			"a removal without a record is still a finding. Open tasks (queued, claimed, waiting, scheduled), the queues'\n" +
			"gates and controls, schedules and unique keys are cut at a snapshot that continues their chain: the events it\n" +
			"replaces (for a task, those after its last dispatch; for a schedule, its ticks with their timers) are archived\n" +
			"and removed the same way. Workflow runs that completed, failed or were cancelled, and agent tasks that\n" +
			"completed, are removed whole the same way; open ones and VINE graphs are kept whole. One prune runs\n" +
			"at a time; a second one\n" +
			"stops with a conflict. See docs/retention.md for what queries can answer afterwards.",
		Example: `  trellis prune --older-than 720h --archive /var/backups/trellis
  trellis prune --older-than 30d --archive ./archive --json
  trellis prune --older-than 30d --archive ./archive --rate 250`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			age, err := parseAge("older-than", olderThan)
			if err != nil {
				return err
			}
			if rate < 0 || rate > retention.MaxRemoveRate {
				return trellis.FieldError("rate", "must be between 0 (unpaced) and %d messages a second, got %d", retention.MaxRemoveRate, rate)
			}
			if archive == "" {
				return trellis.FieldError("archive", "is required: the directory the pruned events are archived to")
			}
			if err := a.archiveOutsideLog(archive); err != nil {
				return err
			}
			s, err := a.openSession(cmd.Context())
			if err != nil {
				return err
			}
			defer s.close()
			store, err := s.log("prune")
			if err != nil {
				return err
			}
			// The records are keyed with the data directory's audit key
			// (the one the server's anchors use), so verify trusts them.
			key, err := audit.AnchorKey(a.dataDir, true)
			if err != nil {
				return trellis.Errorf(trellis.CodeInternal, "prune: the audit key of %s: %w", a.dataDir, err)
			}
			res, err := retention.Prune(cmd.Context(), store, retention.Options{OlderThan: age, Archive: archive, Key: key, RemoveRate: rate})
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(a.stdout, res)
			}
			printPrune(a, res)
			return nil
		},
	}
	c.Flags().StringVar(&olderThan, "older-than", "", "prune tasks whose events were all stored longer ago than this (a duration: 720h, 90m, or days: 30d)")
	c.Flags().StringVar(&archive, "archive", "", "the directory the pruned events are archived to (created when missing; required)")
	c.Flags().IntVar(&rate, "rate", 0, "remove at most this many pruned messages (events and tombstones) a second, alone or in a purge of a queue's tombstones (with fsync on, each removal is a synced write the worker pools wait behind; 0: as fast as the store takes them)")
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return c
}

// parseAge parses an age flag (--older-than, serve's --retention): a Go
// duration or a whole number of days ("30d"), positive; field names it.
func parseAge(field, s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, trellis.FieldError(field, "is required: a duration such as 720h or 30d")
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil {
			return 0, trellis.FieldError(field, "%q is not a duration (e.g. 720h, 90m, 30d)", s)
		}
		if n <= 0 {
			return 0, trellis.FieldError(field, "must be positive, got %s", s)
		}
		if n > int(maxPruneAge/(24*time.Hour)) {
			return 0, trellis.FieldError(field, "is %s; at most %s allowed", s, maxPruneAge)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	return trellis.ParseDuration(field, s, 0, maxPruneAge)
}

// archiveOutsideLog refuses an archive directory inside the data
// directory's JetStream store: the archive would live in the files of the
// log it stands in for.
func (a *app) archiveOutsideLog(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return trellis.FieldError("archive", "%v", err)
	}
	store, err := filepath.Abs(filepath.Join(a.dataDir, "jetstream"))
	if err != nil {
		return trellis.FieldError("archive", "%v", err)
	}
	if rel, err := filepath.Rel(store, abs); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return trellis.FieldError("archive", "%s is inside the log's own store (%s): archive outside it", dir, store)
	}
	return nil
}

// printPrune writes a prune's result for people.
func printPrune(a *app, res *retention.Result) {
	w := a.stdout
	fmt.Fprintf(w, "pruned %d task(s), %d event(s) stored before %s\n", res.Tasks, res.Events, res.Cut.Format(time.RFC3339))
	if res.UniqueEvents > 0 {
		fmt.Fprintf(w, "cut %d event(s) of unique keys at their snapshots\n", res.UniqueEvents)
	}
	if res.ControlEvents > 0 {
		fmt.Fprintf(w, "cut %d event(s) of queue controls at their snapshots\n", res.ControlEvents)
	}
	if res.ScheduleEvents > 0 {
		fmt.Fprintf(w, "cut %d event(s) of schedules at their snapshots\n", res.ScheduleEvents)
	}
	if res.GateEvents > 0 {
		fmt.Fprintf(w, "cut %d event(s) of open gates at their snapshots\n", res.GateEvents)
	}
	if res.Runs > 0 {
		fmt.Fprintf(w, "pruned %d finished workflow run(s), %d event(s)\n", res.Runs, res.RunEvents)
	}
	if res.AgentTasks > 0 {
		fmt.Fprintf(w, "pruned %d completed agent task name(s), %d event(s)\n", res.AgentTasks, res.AgentTaskEvents)
	}
	if res.Completed > 0 {
		fmt.Fprintf(w, "finished an interrupted prune: removed %d message(s) its record accounts for\n", res.Completed)
	}
	for _, ar := range res.Archives {
		fmt.Fprintf(w, "archive %s: %d task(s), %d event(s), %d bytes, digest %s (record %s)\n", ar.File, ar.Tasks, ar.Events, ar.Bytes, ar.Digest, ar.Record)
	}
	reasons := make([]string, 0, len(res.Kept))
	for r := range res.Kept {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	for _, r := range reasons {
		fmt.Fprintf(w, "kept %d task(s): %s\n", res.Kept[r], r)
	}
	for r, n := range res.GatesKept {
		fmt.Fprintf(w, "kept %d gate(s) whole: %s\n", n, r)
	}
}
