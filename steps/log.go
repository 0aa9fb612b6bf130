package steps

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/taskqueue"
	"github.com/trellis/trellis/vine"
)

// The log steps read the event log itself, not a projection of it.

func logSteps() []Definition {
	return []Definition{
		{
			Pattern: `^the history of that task is "([^"]*)"$`,
			Example: `Then the history of that task is "added, claimed, completed"`,
			Doc: "Checks every event of that task, in log order: added, claimed, completed, failed, attempt_failed, dead, " +
				"lease_expired, released, requeued, due, linked, prerequisite_done, ready, cancel_requested, cancelled. " +
				"Write \"claimed by w1\" to check an event's actor too; a worker pool's name matches its slots (\"claimed by ci\" " +
				"matches ci/1). A worker pool's claim that its outcome carries (a quick task: one event) counts as a claimed " +
				"step of its own.",
			Check: true,
			run:   func(w *World) any { return w.historyThat },
		},
		{
			Pattern: `^the history of task "([^"]*)" is "([^"]*)"$`,
			Example: `Then the history of task "export" is "added, claimed by nightly/0, attempt_failed, claimed, completed"`,
			Doc:     "The same for a task named when it was added; it becomes \"that task\".",
			Check:   true,
			run:     func(w *World) any { return w.historyNamed },
		},
		{
			Pattern: `^that task was recorded in (\d+) events?$`,
			Example: `Then that task was recorded in 2 events`,
			Doc: "Counts the events the log holds for that task, as stored: a worker pool's quick task is recorded in 2 " +
				"(added, then completed carrying its claim), a task claimed on its own in 3.",
			Check: true,
			run:   func(w *World) any { return w.recordedIn },
		},
		{
			Pattern: `^no task was completed more than once$`,
			Example: `Then no task was completed more than once`,
			Doc:     "Checks the whole log: no task has two completed events.",
			Check:   true,
			run:     func(w *World) any { return w.noDoubleCompletion },
		},
		{
			Pattern: `^no task was held by two workers at once$`,
			Example: `Then no task was held by two workers at once`,
			Doc:     "Checks the whole log: every claim of a task follows the end of the previous one (finished, failed, expired or released).",
			Check:   true,
			run:     func(w *World) any { return w.noDoubleHold },
		},
		{
			Pattern: `^the log holds (\d+) "([a-z_]+)" events? for queue "([^"]*)"$`,
			Example: `Then the log holds 2 "attempt_failed" events for queue "nightly"`,
			Doc:     "Counts the events of one type over the tasks of a queue (a claim carried by its outcome counts as a claimed event).",
			Check:   true,
			run:     func(w *World) any { return w.eventCount },
		},
		{
			Pattern: `^replaying the log rebuilds the same board$`,
			Example: `Then replaying the log rebuilds the same board`,
			Doc: "Drops every projection and rebuilds it from the log (`trellis replay`), then checks that the queue board is the " +
				"same as before, and that every task's status on it is the one the log's events fold to. Run it once workers are idle.",
			run: func(w *World) any { return w.replaySameBoard },
		},
		{
			Pattern: `^every task of "([^"]*)" was claimed exactly once$`,
			Example: `Then every task of "login.vine" was claimed exactly once`,
			Doc:     "Checks the graph's history: one claim per task, however many agents ran.",
			Check:   true,
			run:     func(w *World) any { return w.graphClaimedOnce },
		},
	}
}

// history returns a task's events in order.
func (w *World) history(ctx context.Context, t *trellis.Task) ([]events.Recorded, error) {
	if t == nil {
		return nil, errors.New("there is no task yet: add or claim one first")
	}
	ctx, cancel, err := w.call(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	recs, _, err := w.srv.Store().Load(ctx, events.StreamQueue, taskqueue.Filter(t.TaskID))
	if err != nil {
		return nil, fmt.Errorf("read the history of %s: %w", t.TaskID, err)
	}
	return taskqueue.ExpandClaims(recs), nil
}

// checkHistory compares a task's events with "type[ by actor], ...".
func checkHistory(id string, recs []events.Recorded, want string) error {
	items := splitList(want)
	got := make([]string, len(recs))
	withActors := make([]string, len(recs))
	for i, r := range recs {
		got[i] = r.Type
		withActors[i] = r.Type
		if r.Actor != "" {
			withActors[i] += " by " + r.Actor
		}
	}
	mismatch := len(items) != len(recs)
	for i := 0; !mismatch && i < len(items); i++ {
		typ, actor, byActor := strings.Cut(items[i], " by ")
		actor = strings.TrimSpace(actor)
		mismatch = recs[i].Type != strings.TrimSpace(typ) || byActor && recs[i].Actor != actor && !strings.HasPrefix(recs[i].Actor, actor+"/")
	}
	if mismatch {
		return fmt.Errorf("the history of task %s is %q; expected %q", id, strings.Join(withActors, ", "), strings.Join(items, ", "))
	}
	return nil
}

func (w *World) recordedIn(ctx context.Context, n int) error {
	if w.task == nil {
		return errors.New("there is no task yet: add or claim one first")
	}
	ctx, cancel, err := w.call(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	recs, _, err := w.srv.Store().Load(ctx, events.StreamQueue, taskqueue.Filter(w.task.TaskID))
	if err != nil {
		return fmt.Errorf("read the events of %s: %w", w.task.TaskID, err)
	}
	if len(recs) != n {
		var types []string
		for _, r := range recs {
			types = append(types, r.Type)
		}
		return fmt.Errorf("task %s is recorded in %d events (%s); expected %d", w.task.TaskID, len(recs), strings.Join(types, ", "), n)
	}
	return nil
}

func (w *World) historyThat(ctx context.Context, want string) error {
	recs, err := w.history(ctx, w.task)
	if err != nil {
		return err
	}
	return checkHistory(w.task.TaskID, recs, want)
}

func (w *World) historyNamed(ctx context.Context, name, want string) error {
	t, err := w.named1(name)
	if err != nil {
		return err
	}
	w.task = t
	recs, err := w.history(ctx, t)
	if err != nil {
		return err
	}
	return checkHistory(t.TaskID, recs, want)
}

// foldLog reads the whole queue log and calls check before each event is
// folded into its task; it returns the folded tasks.
func (w *World) foldLog(ctx context.Context, check func(before *trellis.Task, rec events.Recorded) error) (map[string]*trellis.Task, error) {
	ctx, cancel, err := w.call(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	tasks := map[string]*trellis.Task{}
	err = w.srv.Store().Read(ctx, events.StreamQueue, "", 0, func(rec events.Recorded) error {
		if rec.Type == "" || !taskqueue.IsTaskSubject(rec.Subject) {
			return nil // not a task event
		}
		// A claim carried by its outcome is checked as a step of its own.
		for _, step := range taskqueue.ExpandClaims([]events.Recorded{rec}) {
			if err := check(tasks[step.AggregateID], step); err != nil {
				return err
			}
			t, err := taskqueue.Apply(tasks[step.AggregateID], step)
			if err != nil {
				return fmt.Errorf("event #%d (%s of %s): %w", step.Seq, step.Type, step.AggregateID, err)
			}
			if t != nil {
				tasks[step.AggregateID] = t
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return tasks, nil
}

func (w *World) noDoubleCompletion(ctx context.Context) error {
	completed := map[string]int{}
	_, err := w.foldLog(ctx, func(_ *trellis.Task, rec events.Recorded) error {
		if rec.Type == taskqueue.Completed {
			completed[rec.AggregateID]++
		}
		return nil
	})
	if err != nil {
		return err
	}
	var twice []string
	for id, n := range completed {
		if n > 1 {
			twice = append(twice, fmt.Sprintf("%s (%d times)", id, n))
		}
	}
	if len(twice) > 0 {
		sort.Strings(twice)
		return fmt.Errorf("tasks completed more than once: %s", strings.Join(twice, ", "))
	}
	return nil
}

func (w *World) noDoubleHold(ctx context.Context) error {
	_, err := w.foldLog(ctx, func(before *trellis.Task, rec events.Recorded) error {
		if rec.Type == taskqueue.Claimed && before != nil && before.Status == trellis.StatusClaimed {
			return fmt.Errorf("task %s was claimed by %q (event #%d) while %q still held it", rec.AggregateID, rec.Actor, rec.Seq, before.ClaimedBy)
		}
		return nil
	})
	return err
}

func (w *World) eventCount(ctx context.Context, n int, typ, queue string) error {
	got := 0
	_, err := w.foldLog(ctx, func(before *trellis.Task, rec events.Recorded) error {
		if rec.Type != typ {
			return nil
		}
		q := ""
		if before != nil {
			q = before.Queue
		} else if rec.Type == taskqueue.Added {
			var p taskqueue.AddedPayload
			if err := rec.DecodePayload(&p); err != nil {
				return err
			}
			q = p.Queue
		}
		if q == queue {
			got++
		}
		return nil
	})
	if err != nil {
		return err
	}
	if got != n {
		return fmt.Errorf("the log holds %d %q events for queue %q; expected %d", got, typ, queue, n)
	}
	return nil
}

func (w *World) replaySameBoard(ctx context.Context) error {
	board := func() (*trellis.TaskList, string, error) {
		ctx, cancel, err := w.call(ctx)
		if err != nil {
			return nil, "", err
		}
		defer cancel()
		l, err := listAll(ctx, w.queue, trellis.ListRequest{})
		if err != nil {
			return nil, "", err
		}
		data, err := json.Marshal(l)
		return l, string(data), err
	}
	_, before, err := board()
	if err != nil {
		return err
	}
	rctx, cancel, err := w.call(ctx)
	if err != nil {
		return err
	}
	_, err = w.srv.Service().Replay(rctx)
	cancel()
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	l, after, err := board()
	if err != nil {
		return err
	}
	if after != before {
		return fmt.Errorf("the rebuilt board differs from the live one:\n  live:    %s\n  rebuilt: %s", before, after)
	}
	folded, err := w.foldLog(ctx, func(*trellis.Task, events.Recorded) error { return nil })
	if err != nil {
		return err
	}
	if len(folded) != len(l.Tasks) {
		return fmt.Errorf("the board has %d tasks; the log has %d", len(l.Tasks), len(folded))
	}
	for _, row := range l.Tasks {
		t := folded[row.TaskID]
		if t == nil || t.Status != row.Status {
			return fmt.Errorf("task %s is %s on the board; the log says %v", row.TaskID, row.Status, t)
		}
	}
	return nil
}

func (w *World) graphClaimedOnce(ctx context.Context, name string) error {
	g, err := w.graph(ctx, name)
	if err != nil {
		return err
	}
	ctx, cancel, err := w.call(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	recs, _, err := w.srv.Store().Load(ctx, events.StreamVine, events.GraphFilter(events.GraphID(filepath.ToSlash(name))))
	if err != nil {
		return fmt.Errorf("read the history of %s: %w", name, err)
	}
	claims := map[string]int{}
	for _, r := range recs {
		if r.Type != events.GraphBatchApplied {
			continue
		}
		var p events.GraphBatchPayload
		if err := r.DecodePayload(&p); err != nil {
			return err
		}
		for _, op := range p.Ops {
			if op.Op == vine.OpClaim {
				claims[op.ID]++
			}
		}
	}
	var wrong []string
	for _, n := range g.Nodes {
		if n.Kind == vine.KindTask && claims[n.ID] != 1 {
			wrong = append(wrong, fmt.Sprintf("%s %d times", n.ID, claims[n.ID]))
		}
	}
	if len(wrong) > 0 {
		return fmt.Errorf("not every task of %s was claimed exactly once: %s", name, strings.Join(wrong, ", "))
	}
	return nil
}

// listAll follows a listing's pages to its end (a list answers one page).
func listAll(ctx context.Context, q trellis.QueueService, req trellis.ListRequest) (*trellis.TaskList, error) {
	req.Limit = trellis.MaxListLimit
	all, err := q.List(ctx, req)
	for page := all; err == nil && page.NextCursor != ""; {
		req.Cursor = page.NextCursor
		if page, err = q.List(ctx, req); err == nil {
			all.Tasks = append(all.Tasks, page.Tasks...)
		}
	}
	if err != nil {
		return nil, err
	}
	all.NextCursor = ""
	return all, nil
}
