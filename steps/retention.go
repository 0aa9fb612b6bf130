package steps

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/audit"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/retention"
	"github.com/trellis/trellis/server"
	"github.com/trellis/trellis/taskqueue"
	"github.com/trellis/trellis/workflow"
)

// GroupRetention is the group of the retention steps.
const GroupRetention = "Retention"

// retentionState is what the retention steps remember: the last prune's
// result.
type retentionState struct {
	last *retention.Result
}

func retentionSteps() []Definition {
	return []Definition{
		{
			Pattern: `^a Trellis server that prunes finished tasks older than (\S+) every (\S+) into the archive "([^"]*)"$`,
			Example: `Given a Trellis server that prunes finished tasks older than 1ms every 1s into the archive "nightly"`,
			Doc: "Starts the scenario's Trellis as \"a Trellis server\" does, with retention on, as `trellis serve --retention D " +
				"--prune-every E --archive DIR` does: a prune at start, then one every E. The archive is a directory of that name " +
				"in the scenario's scratch directory. Durations: 1ms, 90s, 720h, or whole days (30d).",
			run: func(w *World) any { return w.startRetainingServer },
		},
		{
			Pattern: `^an operator prunes finished tasks older than (\S+) into the archive "([^"]*)"$`,
			Example: `When an operator prunes finished tasks older than 1ms into the archive "nightly"`,
			Doc: "Runs `trellis prune --older-than D --archive DIR` on the scenario's log (keyed with the server's audit key): " +
				"finished tasks whose events were all stored before now - D are archived to DIR (a directory of that name in the " +
				"scenario's scratch directory), recorded, and removed from the log, and so are workflow runs and agent tasks that ended " +
				"before it. Open tasks, runs and agent tasks stay.",
			run: func(w *World) any { return w.prune },
		},
		{
			Pattern: `^the prune removed (\d+) tasks? and kept (\d+) open tasks?$`,
			Example: `Then the prune removed 5 tasks and kept 2 open tasks`,
			Doc:     "Checks the last prune an operator ran: how many tasks it removed, how many it kept because they are open.",
			Check:   true,
			run:     func(w *World) any { return w.pruneRemoved },
		},
		{
			Pattern: `^the prune removed (\d+) workflow runs? and kept (\d+) open runs?$`,
			Example: `Then the prune removed 1 workflow run and kept 1 open run`,
			Doc: "Checks the last prune an operator ran: how many finished workflow runs it removed whole, how many it kept " +
				"because they are running, sleeping or waiting.",
			Check: true,
			run:   func(w *World) any { return w.pruneRemovedRuns },
		},
		{
			Pattern: `^` + runRef + ` is no longer in the log$`,
			Example: `Then run "shipped" is no longer in the log`,
			Doc:     "Checks that a workflow run was pruned: the log holds none of its events (but its tombstone, when it is the stream's last message) and showing it is not_found.",
			Check:   true,
			run:     func(w *World) any { return w.runPruned },
		},
		{
			Pattern: `^the archive "([^"]*)" verifies and holds (\d+) workflow runs?$`,
			Example: `Then the archive "nightly" verifies and holds 1 workflow run`,
			Doc:     "Checks the archive files as \"the archive ... verifies and holds N tasks\" does, and counts the workflow runs whose events they hold.",
			Check:   true,
			run:     func(w *World) any { return w.archiveVerifiesRuns },
		},
		{
			Pattern: `^the server's retention has pruned (\d+) tasks?$`,
			Example: `Then the server's retention has pruned 5 tasks`,
			Doc:     "Checks how many tasks the server's periodic prunes removed so far (wait on it with \"wait up to N seconds until\").",
			Check:   true,
			run:     func(w *World) any { return w.retentionPruned },
		},
		{
			Pattern: `^the archive "([^"]*)" verifies and holds (\d+) tasks?$`,
			Example: `Then the archive "nightly" verifies and holds 5 tasks`,
			Doc: "Checks every archive file in the directory as `trellis audit verify --file` does (no finding, the digest its " +
				"prune record carries) and counts the tasks whose events they hold.",
			Check: true,
			run:   func(w *World) any { return w.archiveVerifies },
		},
		{
			Pattern: `^the live log verifies$`,
			Example: `Then the live log verifies`,
			Doc: "Runs `trellis audit verify` on the scenario's log with the server's audit key: no removed, altered or " +
				"reordered event (a prune's removals are accounted for by its records).",
			Check: true,
			run:   func(w *World) any { return w.liveLogVerifies },
		},
		{
			Pattern: `^an edit to the archive "([^"]*)" is found$`,
			Example: `Then an edit to the archive "nightly" is found`,
			Doc: "Changes one character of an event in a copy of the first archive file and checks that `audit verify --file` " +
				"reports it. The archive itself is left as it is.",
			Check: true,
			run:   func(w *World) any { return w.archiveEditFound },
		},
		{
			Pattern: `^task "([^"]*)" is no longer in the log$`,
			Example: `Then task "export" is no longer in the log`,
			Doc:     "Checks that a task named when it was added was pruned: the log holds no event of it and showing it is not_found.",
			Check:   true,
			run:     func(w *World) any { return w.taskPruned },
		},
	}
}

// parseAge reads a step's duration: a Go duration or whole days ("30d").
func parseAge(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("%q is not a positive number of days", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%q is not a positive duration (1ms, 90s, 720h, 30d)", s)
	}
	return d, nil
}

// archiveDir is the archive directory name in the scenario's scratch
// directory.
func (w *World) archiveDir(name string) (string, error) {
	if err := checkArchiveName(name); err != nil {
		return "", err
	}
	if w.dir == "" {
		return "", errNoServer
	}
	return filepath.Join(w.dir, name), nil
}

// checkArchiveName refuses an archive name that is not a plain
// directory name (a path would leave the scratch directory).
func checkArchiveName(name string) error {
	if name == "" || name != filepath.Base(name) || name == "." || name == ".." {
		return fmt.Errorf("archive %q: give a plain directory name (it lies in the scenario's scratch directory)", name)
	}
	return nil
}

func (w *World) startRetainingServer(ctx context.Context, age, every, name string) error {
	if err := checkArchiveName(name); err != nil {
		return err
	}
	retain, err := parseAge(age)
	if err != nil {
		return err
	}
	interval, err := parseAge(every)
	if err != nil {
		return err
	}
	return w.StartServer(ctx, func(c *server.Config) {
		c.Retention, c.PruneEvery = retain, interval
		c.Archive = filepath.Join(filepath.Dir(c.DataDir), name)
	})
}

func (w *World) prune(ctx context.Context, age, name string) error {
	d, err := parseAge(age)
	if err != nil {
		return err
	}
	dir, err := w.archiveDir(name)
	if err != nil {
		return err
	}
	ctx, cancel, key, err := w.keyedCall(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	if err := settle(ctx, w.srv.Store(), d); err != nil {
		return err
	}
	res, err := retention.Prune(ctx, w.srv.Store(), retention.Options{OlderThan: d, Archive: dir, Key: key})
	if err != nil {
		return fmt.Errorf("prune: %w", err)
	}
	w.retain.last = res
	return nil
}

func (w *World) pruneRemoved(_ context.Context, tasks, open int) error {
	res := w.retain.last
	if res == nil {
		return errors.New("no prune ran yet: use `an operator prunes finished tasks older than ...` first")
	}
	if res.Tasks != tasks || res.Kept["open"] != open {
		return fmt.Errorf("the prune removed %d task(s) and kept %d open (kept: %v); expected %d and %d open", res.Tasks, res.Kept["open"], res.Kept, tasks, open)
	}
	return nil
}

func (w *World) retentionPruned(_ context.Context, n int) error {
	if w.srv == nil {
		return errNoServer
	}
	st, ok := w.srv.Retention()
	if !ok {
		return errors.New("the scenario's server does not prune: start it with `a Trellis server that prunes finished tasks ...`")
	}
	if st.Tasks != n {
		return fmt.Errorf("the server's retention pruned %d task(s) in %d prune(s) (last error: %q); expected %d", st.Tasks, st.Runs, st.LastErr, n)
	}
	return nil
}

// archiveFiles lists an archive directory's files.
func (w *World) archiveFiles(name string) ([]string, error) {
	dir, err := w.archiveDir(name)
	if err != nil {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(dir, "prune-*.jsonl"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("the archive %q holds no archive file", name)
	}
	return files, nil
}

func (w *World) archiveVerifies(ctx context.Context, name string, n int) error {
	return w.archiveHolds(ctx, name, n, "task")
}

func (w *World) archiveVerifiesRuns(ctx context.Context, name string, n int) error {
	return w.archiveHolds(ctx, name, n, "workflow run")
}

// archiveHolds checks the archive files and counts the aggregates of kind
// ("task" or "workflow run") they hold.
func (w *World) archiveHolds(ctx context.Context, name string, n int, kind string) error {
	files, err := w.archiveFiles(name)
	if err != nil {
		return err
	}
	ctx, cancel, err := w.call(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	recs, _, err := w.srv.Store().Load(ctx, events.StreamQueue, events.RetentionFilter)
	if err != nil && !errors.Is(err, events.ErrNotFound) {
		return fmt.Errorf("read the prune records: %w", err)
	}
	digests := map[string]string{}
	for _, r := range recs {
		var p events.PrunedPayload
		if r.DecodePayload(&p) == nil {
			digests[p.Archive] = p.Digest
		}
	}
	tasks := map[string]bool{}
	for _, f := range files {
		var findings []string
		rep, err := audit.VerifyFile(ctx, f, func(x audit.Finding) error { findings = append(findings, x.String()); return nil })
		if err != nil {
			return fmt.Errorf("verify %s: %w", filepath.Base(f), err)
		}
		if len(findings) > 0 {
			return fmt.Errorf("archive %s: %s", filepath.Base(f), strings.Join(findings, "; "))
		}
		if want, ok := digests[filepath.Base(f)]; !ok || want != rep.Digest {
			return fmt.Errorf("archive %s has digest %s; its prune record says %q", filepath.Base(f), rep.Digest, want)
		}
		if err := archivedTasks(f, kind, tasks); err != nil {
			return err
		}
	}
	if len(tasks) != n {
		return fmt.Errorf("the archive %q holds %d %s(s); expected %d", name, len(tasks), kind, n)
	}
	return nil
}

// archivedTasks adds the ids of the tasks (or workflow runs, by kind)
// of an archive's events to tasks.
func archivedTasks(path, kind string, tasks map[string]bool) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		var l audit.ExportLine
		if json.Unmarshal(sc.Bytes(), &l) != nil || l.Event == nil {
			continue
		}
		if kind == "task" && taskqueue.IsTaskSubject(l.Subject) || kind != "task" && strings.HasPrefix(l.Subject, "trellis.workflows.run.") {
			tasks[l.Event.AggregateID] = true
		}
	}
	return sc.Err()
}

// keyedCall is call with the server's audit key (made on first use).
func (w *World) keyedCall(ctx context.Context) (context.Context, context.CancelFunc, []byte, error) {
	ctx, cancel, err := w.call(ctx)
	if err != nil {
		return ctx, cancel, nil, err
	}
	key, err := audit.AnchorKey(w.srv.Info().DataDir, true)
	if err != nil {
		cancel()
		return ctx, func() {}, nil, err
	}
	return ctx, cancel, key, nil
}

func (w *World) liveLogVerifies(ctx context.Context) error {
	ctx, cancel, key, err := w.keyedCall(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	var findings []string
	if _, err := audit.Verify(ctx, w.srv.Store(), audit.VerifyOptions{AnchorKey: key}, func(f audit.Finding) error {
		findings = append(findings, f.String())
		return nil
	}); err != nil {
		return fmt.Errorf("audit verify: %w", err)
	}
	if len(findings) > 0 {
		return fmt.Errorf("audit verify found %d problem(s): %s", len(findings), strings.Join(findings, "; "))
	}
	return nil
}

func (w *World) archiveEditFound(ctx context.Context, name string) error {
	files, err := w.archiveFiles(name)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		return err
	}
	// Change the first event's objective (or any payload) by a letter.
	i := strings.Index(string(data), `"objective":"`)
	if i < 0 {
		return fmt.Errorf("archive %s holds no task objective to edit", filepath.Base(files[0]))
	}
	i += len(`"objective":"`)
	edited := []byte(string(data))
	if edited[i] == 'X' {
		edited[i] = 'Y'
	} else {
		edited[i] = 'X'
	}
	dir, err := os.MkdirTemp(w.dir, "edited-archive-")
	if err != nil {
		return err
	}
	copyPath := filepath.Join(dir, filepath.Base(files[0]))
	if err := os.WriteFile(copyPath, edited, 0o600); err != nil {
		return err
	}
	found := 0
	if _, err := audit.VerifyFile(ctx, copyPath, func(audit.Finding) error { found++; return nil }); err != nil {
		return fmt.Errorf("verify the edited copy: %w", err)
	}
	if found == 0 {
		return fmt.Errorf("audit verify --file found nothing in a copy of %s with an edited objective", filepath.Base(files[0]))
	}
	return nil
}

func (w *World) taskPruned(ctx context.Context, name string) error {
	t, err := w.named1(name)
	if err != nil {
		return err
	}
	ctx, cancel, err := w.call(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	recs, _, err := w.srv.Store().Load(ctx, events.StreamQueue, taskqueue.Filter(t.TaskID))
	if err != nil && !errors.Is(err, events.ErrNotFound) {
		return fmt.Errorf("read the events of %s: %w", t.TaskID, err)
	}
	if len(recs) > 0 {
		return fmt.Errorf("the log still holds %d event(s) of task %q (%s)", len(recs), name, t.TaskID)
	}
	if _, err := w.queue.Show(ctx, t.TaskID); trellis.ErrorCode(err) != trellis.CodeNotFound {
		return fmt.Errorf("showing the pruned task %q answers %v; expected not_found", name, err)
	}
	return nil
}

func (w *World) pruneRemovedRuns(_ context.Context, runs, open int) error {
	res := w.retain.last
	if res == nil {
		return errors.New("no prune ran yet: use `an operator prunes finished tasks older than ...` first")
	}
	if res.Runs != runs || res.RunsKept["open"] != open {
		return fmt.Errorf("the prune removed %d workflow run(s) and kept %d open (kept: %v); expected %d and %d open", res.Runs, res.RunsKept["open"], res.RunsKept, runs, open)
	}
	return nil
}

func (w *World) runPruned(ctx context.Context, ref string) error {
	id, err := w.RunID(ref)
	if err != nil {
		return err
	}
	ctx, cancel, err := w.call(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	recs, _, err := w.srv.Store().Load(ctx, events.StreamWorkflows, workflow.RunFilter(id))
	if err != nil && !errors.Is(err, events.ErrNotFound) {
		return fmt.Errorf("read the events of run %s: %w", id, err)
	}
	if len(recs) > 1 || len(recs) == 1 && recs[0].Type != workflow.Pruned {
		return fmt.Errorf("the log still holds %d event(s) of %s (%s)", len(recs), ref, id)
	}
	if _, err := w.srv.Service().Workflows().Show(ctx, id); trellis.ErrorCode(err) != trellis.CodeNotFound {
		return fmt.Errorf("showing the pruned %s answers %v; expected not_found", ref, err)
	}
	return nil
}

// settle waits, for a short age (at most settleMax), until every event
// the queue and workflow streams hold is older than age: a prune "older
// than 1ms" right after a task finished then removes that task on any
// machine, however fast the step follows the event (the cut is taken
// after the wait).
func settle(ctx context.Context, store *events.Store, age time.Duration) error {
	if age > settleMax {
		return nil
	}
	var last time.Time
	for _, stream := range []string{events.StreamQueue, events.StreamWorkflows} {
		info, err := store.StreamInfo(ctx, stream)
		if err != nil {
			return fmt.Errorf("read the stream %s: %w", stream, err)
		}
		if info.State.LastTime.After(last) {
			last = info.State.LastTime
		}
	}
	for !time.Now().After(last.Add(age)) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
	return nil
}

// settleMax bounds the ages settle waits for.
const settleMax = 10 * time.Second
