package steps

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/cucumber/godog"

	"github.com/trellis/trellis"
)

func queueSteps() []Definition {
	return []Definition{
		{
			Pattern: `^I add (\d+) tasks? to queue "([^"]*)" with objective "([^"]*)"$`,
			Example: `When I add 5 tasks to queue "jobs" with objective "Build report"`,
			Doc:     "Adds N tasks with the default budgets and attempts. The last one becomes \"that task\".",
			run:     func(w *World) any { return w.addTasks },
		},
		{
			Pattern: `^I add (\d+) tasks? to queue "([^"]*)" with:$`,
			Example: "When I add 2 tasks to queue \"nightly\" with:\n" +
				"  | objective       | Export the orders  |\n" +
				"  | input           | orders.csv         |\n" +
				"  | acceptance      | the export is sent |\n" +
				"  | max tool calls  | 5                  |\n" +
				"  | max steps       | 3                  |\n" +
				"  | max attempts    | 2                  |\n" +
				"  | metadata        | team=data          |\n" +
				"  | idempotency key | nightly-orders     |\n" +
				"  | priority        | 1                  |",
			Doc: "Adds N tasks with every field of `trellis queue add`: objective (required), input (repeat the row for " +
				"several), acceptance, max tool calls, max steps, max attempts, metadata (key=value; repeat the row), " +
				"idempotency key, parent (a task named in an earlier step, or a task id), priority (1 first to 4 last), " +
				"delay (30s) or run at (RFC 3339), unique key and unique for (1h), after (a prerequisite: a task named " +
				"earlier or a task id; repeat the row), concurrency key. Adds with one idempotency key return the first task; " +
				"an add whose unique key is held returns the holder. The last one becomes \"that task\".",
			run: func(w *World) any { return w.addTasksWith },
		},
		{
			Pattern: `^I add (\d+) tasks? to queue "([^"]*)" in one call with objective "([^"]*)"$`,
			Example: `When I add 200 tasks to queue "plan" in one call with objective "Migrate a module"`,
			Doc: "Adds N tasks in bulk (`trellis queue add --from FILE.jsonl`, AddMany: up to 1,000 per call, stored " +
				"together); each is its own task. The last one becomes \"that task\".",
			run: func(w *World) any { return w.addBulk },
		},
		{
			Pattern: `^I add a task "([^"]*)" to queue "([^"]*)" with:$`,
			Example: "When I add a task \"export\" to queue \"nightly\" with:\n" +
				"  | objective    | Export the orders |\n" +
				"  | max attempts | 3                 |",
			Doc: "Adds one task, as the table step above, and names it so later steps can say task \"export\". " +
				"It becomes \"that task\".",
			run: func(w *World) any { return w.addNamedTask },
		},
		{
			Pattern: `^worker "([^"]*)" claims the next task from queue "([^"]*)"$`,
			Example: `When worker "w1" claims the next task from queue "jobs"`,
			Doc:     "Claims the oldest queued task (queue next); fails when none is queued. The claimed task becomes \"it\" for the worker and \"that task\".",
			run:     func(w *World) any { return w.claimNext },
		},
		{
			Pattern: `^worker "([^"]*)" finds no task in queue "([^"]*)"$`,
			Example: `Then worker "w2" finds no task in queue "jobs"`,
			Doc:     "Asks for the next task and expects none (nothing is claimed).",
			run:     func(w *World) any { return w.claimNothing },
		},
		{
			Pattern: `^worker "([^"]*)" completes it with "([^"]*)"$`,
			Example: `When worker "w1" completes it with "Report built"`,
			Doc:     "Finishes the task the worker claimed (queue done) with what was done.",
			run:     func(w *World) any { return w.complete },
		},
		{
			Pattern: `^worker "([^"]*)" completes it with "([^"]*)" using (\d+) steps and (\d+) tool calls$`,
			Example: `When worker "w1" completes it with "Summarised" using 12 steps and 3 tool calls`,
			Doc:     "Finishes the claimed task reporting its usage; usage over the budget marks the task budget exhausted.",
			run:     func(w *World) any { return w.completeUsing },
		},
		{
			Pattern: `^worker "([^"]*)" fails it with "([^"]*)"$`,
			Example: `When worker "w1" fails it with "database unreachable"`,
			Doc:     "Fails the claimed task for good (queue fail): it ends failed.",
			run:     func(w *World) any { return w.failNoRetry },
		},
		{
			Pattern: `^worker "([^"]*)" fails it with "([^"]*)" and asks for a retry$`,
			Example: `When worker "w1" fails it with "upstream returned 503" and asks for a retry`,
			Doc:     "Fails the attempt (queue fail --retry): the task is queued again after a backoff, or dead once its attempts are used.",
			run:     func(w *World) any { return w.failRetry },
		},
		{
			Pattern: `^worker "([^"]*)" (completing|failing) that task is refused as "([a-z_]+)"$`,
			Example: `Then worker "w2" completing that task is refused as "conflict"`,
			Doc:     "Tries to finish that task as the worker and expects the error code (invalid, not_found, conflict, budget_exhausted, ...).",
			run:     func(w *World) any { return w.refused },
		},
		{
			Pattern: `^an operator retries that task$`,
			Example: `When an operator retries that task`,
			Doc:     "Queues a failed or dead task again with fresh attempts (queue retry).",
			run:     func(w *World) any { return w.retry },
		},
		{
			Pattern: `^an operator (pauses|resumes) queue "([^"]*)"$`,
			Example: `When an operator pauses queue "jobs"`,
			Doc:     "Pauses (no claims) or resumes a queue.",
			run:     func(w *World) any { return w.pauseResume },
		},
		{
			Pattern: `^an operator limits queue "([^"]*)" to (\d+) tasks? in flight$`,
			Example: `When an operator limits queue "jobs" to 2 tasks in flight`,
			Doc:     "Caps the tasks claimed at once across all workers of the queue (0 removes the cap).",
			run:     func(w *World) any { return w.limit },
		},
		{
			Pattern: `^queue "([^"]*)" has (\d+ tasks? "[a-z]+"(?:(?:, | and )\d+ tasks? "[a-z]+")*)$`,
			Example: `Then queue "jobs" has 1 task "done" and 4 tasks "queued"`,
			Doc:     "Checks the queue board's counts: each named status has exactly that many tasks and every status not named has none.",
			Check:   true,
			run:     func(w *World) any { return w.queueCounts },
		},
		{
			Pattern: `^queue "([^"]*)" is idle$`,
			Example: `Then queue "jobs" is idle`,
			Doc:     "Checks that no task of the queue is queued (waiting retries included), claimed, scheduled or waiting: workers have nothing left to do.",
			Check:   true,
			run:     func(w *World) any { return w.queueIdle },
		},
		{
			Pattern: `^that task is "([a-z]+)"$`,
			Example: `Then that task is "done"`,
			Doc:     "Checks that task's status: queued, claimed, done, failed or dead.",
			Check:   true,
			run:     func(w *World) any { return w.thatTaskIs },
		},
		{
			Pattern: `^task "([^"]*)" is "([a-z]+)"$`,
			Example: `Then task "export" is "dead"`,
			Doc:     "Checks the status of a task named when it was added; it becomes \"that task\".",
			Check:   true,
			run:     func(w *World) any { return w.namedTaskIs },
		},
		{
			Pattern: `^that task is claimed by "([^"]*)"$`,
			Example: `Then that task is claimed by "w1"`,
			Doc:     "Checks that that task is claimed, by the worker (a pool or process name also matches its slots, NAME/0, NAME/1, ...).",
			Check:   true,
			run:     func(w *World) any { return w.claimedBy },
		},
		{
			Pattern: `^that task was tried (\d+) times?$`,
			Example: `Then that task was tried 3 times`,
			Doc:     "Checks how many times that task was claimed (its attempts).",
			Check:   true,
			run:     func(w *World) any { return w.tried },
		},
		{
			Pattern: `^that task is marked budget exhausted$`,
			Example: `Then that task is marked budget exhausted`,
			Doc:     "Checks that that task's checkpoint reports usage over its budget.",
			Check:   true,
			run:     func(w *World) any { return w.budgetExhausted },
		},
		{
			Pattern: `^that task's checkpoint says "([^"]*)"$`,
			Example: `Then that task's checkpoint says "Report built"`,
			Doc:     "Checks that that task's checkpoint (what was done) contains the text.",
			Check:   true,
			run:     func(w *World) any { return w.checkpointSays },
		},
		{
			Pattern: `^that task's last error says "([^"]*)"$`,
			Example: `Then that task's last error says "upstream returned 503"`,
			Doc:     "Checks that that task's last failed attempt's error contains the text.",
			Check:   true,
			run:     func(w *World) any { return w.lastErrorSays },
		},
	}
}

func (w *World) addTasks(ctx context.Context, n int, queue, objective string) error {
	return w.add(ctx, n, "", trellis.AddTaskRequest{Queue: queue, Objective: objective})
}

func (w *World) addTasksWith(ctx context.Context, n int, queue string, table *godog.Table) error {
	req, err := w.addRequest(queue, table)
	if err != nil {
		return err
	}
	return w.add(ctx, n, "", req)
}

func (w *World) addNamedTask(ctx context.Context, name, queue string, table *godog.Table) error {
	if _, ok := w.named[name]; ok {
		return fmt.Errorf("a task named %q was already added in this scenario", name)
	}
	req, err := w.addRequest(queue, table)
	if err != nil {
		return err
	}
	return w.add(ctx, 1, name, req)
}

func (w *World) add(ctx context.Context, n int, name string, req trellis.AddTaskRequest) error {
	if n < 1 {
		return fmt.Errorf("add %d tasks: give at least 1", n)
	}
	ctx, cancel, err := w.call(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	for i := 0; i < n; i++ {
		t, err := w.queue.Add(ctx, req)
		if err != nil {
			return fmt.Errorf("add task %d of %d: %w", i+1, n, err)
		}
		w.task = t
	}
	if name != "" {
		w.named[name] = w.task
	}
	return nil
}

func (w *World) addBulk(ctx context.Context, n int, queue, objective string) error {
	if n < 1 {
		return fmt.Errorf("add %d tasks: give at least 1", n)
	}
	ctx, cancel, err := w.call(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	for start := 0; start < n; start += trellis.MaxAddMany {
		reqs := make([]trellis.AddTaskRequest, min(trellis.MaxAddMany, n-start))
		for i := range reqs {
			reqs[i] = trellis.AddTaskRequest{Queue: queue, Objective: objective}
		}
		res, err := w.queue.AddMany(ctx, trellis.AddManyRequest{Tasks: reqs})
		if err != nil {
			return fmt.Errorf("add tasks %d-%d of %d: %w", start+1, start+len(reqs), n, err)
		}
		if len(res.Errors) > 0 {
			e := res.Errors[0]
			return fmt.Errorf("task %d of %d not added: %s: %s", start+e.Index+1, n, e.Code, e.Message)
		}
		w.task = res.Tasks[len(res.Tasks)-1]
	}
	return nil
}

// addFields are the rows an add table may hold, as `trellis queue add`
// names its flags.
var addFields = []string{"objective", "input", "acceptance", "max tool calls", "max steps", "max attempts", "metadata", "idempotency key", "parent",
	"priority", "delay", "run at", "unique key", "unique for", "after", "concurrency key"}

// addRequest reads an add table: two columns, field and value.
func (w *World) addRequest(queue string, table *godog.Table) (trellis.AddTaskRequest, error) {
	req := trellis.AddTaskRequest{Queue: queue}
	if table == nil {
		return req, errors.New("the step needs a table of fields and values")
	}
	for i, row := range table.Rows {
		if len(row.Cells) != 2 {
			return req, fmt.Errorf("table row %d has %d cells; give a field and a value", i+1, len(row.Cells))
		}
		key := strings.Join(strings.FieldsFunc(strings.ToLower(row.Cells[0].Value), func(r rune) bool { return r == ' ' || r == '-' || r == '_' }), " ")
		val := strings.TrimSpace(row.Cells[1].Value)
		number := func() (int, error) {
			n, err := strconv.Atoi(val)
			if err != nil {
				return 0, fmt.Errorf("table row %d: %s must be a number, got %q", i+1, key, val)
			}
			return n, nil
		}
		var err error
		switch key {
		case "objective":
			req.Objective = val
		case "input", "inputs":
			req.Inputs = append(req.Inputs, val)
		case "acceptance":
			req.Acceptance = val
		case "max tool calls":
			req.MaxToolCalls, err = number()
		case "max steps":
			req.MaxSteps, err = number()
		case "max attempts":
			req.MaxAttempts, err = number()
		case "metadata":
			k, v, ok := strings.Cut(val, "=")
			if !ok {
				return req, fmt.Errorf("table row %d: metadata must be key=value, got %q", i+1, val)
			}
			if req.Metadata == nil {
				req.Metadata = map[string]string{}
			}
			req.Metadata[strings.TrimSpace(k)] = strings.TrimSpace(v)
		case "idempotency key":
			req.IdempotencyKey = val
		case "parent":
			if t, ok := w.named[val]; ok {
				req.ParentID = t.TaskID
			} else {
				req.ParentID = val
			}
		case "priority":
			req.Priority, err = number()
		case "delay":
			req.Delay = val
		case "run at":
			req.RunAt = val
		case "unique key":
			req.UniqueKey = val
		case "unique for":
			req.UniqueFor = val
		case "after":
			if t, ok := w.named[val]; ok {
				val = t.TaskID
			}
			req.After = append(req.After, val)
		case "concurrency key":
			req.ConcurrencyKey = val
		default:
			return req, fmt.Errorf("table row %d: unknown field %q; the fields are %s", i+1, row.Cells[0].Value, strings.Join(addFields, ", "))
		}
		if err != nil {
			return req, err
		}
	}
	return req, nil
}

// next claims the next task of queue as worker (nil when none is ready).
func (w *World) next(ctx context.Context, worker, queue string) (*trellis.Task, error) {
	ctx, cancel, err := w.call(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	return w.queue.Next(ctx, trellis.NextRequest{Queue: queue, Worker: worker})
}

func (w *World) claimNext(ctx context.Context, worker, queue string) error {
	t, err := w.next(ctx, worker, queue)
	if err != nil {
		return err
	}
	if t == nil {
		return fmt.Errorf("queue %q has no task to claim", queue)
	}
	w.held[worker] = t
	w.task = t
	return nil
}

func (w *World) claimNothing(ctx context.Context, worker, queue string) error {
	t, err := w.next(ctx, worker, queue)
	if err != nil {
		return err
	}
	if t != nil {
		w.held[worker] = t
		return fmt.Errorf("worker %q claimed task %s (%q); expected none", worker, t.TaskID, t.Objective)
	}
	return nil
}

// heldBy returns the task a worker claimed with "claims the next task".
func (w *World) heldBy(worker string) (*trellis.Task, error) {
	t := w.held[worker]
	if t == nil {
		return nil, fmt.Errorf("worker %q holds no task: it must claim one first", worker)
	}
	return t, nil
}

func (w *World) complete(ctx context.Context, worker, what string) error {
	return w.completeUsing(ctx, worker, what, 0, 0)
}

func (w *World) completeUsing(ctx context.Context, worker, what string, steps, calls int) error {
	held, err := w.heldBy(worker)
	if err != nil {
		return err
	}
	ctx, cancel, err := w.call(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	t, err := w.queue.Done(ctx, trellis.DoneRequest{TaskID: held.TaskID, Worker: worker, WhatWasDone: what, StepsUsed: steps, ToolCallsUsed: calls})
	if err != nil {
		return err
	}
	delete(w.held, worker)
	w.task = t
	return nil
}

func (w *World) failNoRetry(ctx context.Context, worker, msg string) error {
	return w.fail(ctx, worker, msg, false)
}

func (w *World) failRetry(ctx context.Context, worker, msg string) error {
	return w.fail(ctx, worker, msg, true)
}

func (w *World) fail(ctx context.Context, worker, msg string, retry bool) error {
	held, err := w.heldBy(worker)
	if err != nil {
		return err
	}
	ctx, cancel, err := w.call(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	t, err := w.queue.Fail(ctx, trellis.FailRequest{TaskID: held.TaskID, Worker: worker, Error: msg, Retry: retry})
	if err != nil {
		return err
	}
	delete(w.held, worker)
	w.task = t
	return nil
}

func (w *World) refused(ctx context.Context, worker, action, code string) error {
	if w.task == nil {
		return errors.New("there is no task yet to finish")
	}
	ctx, cancel, err := w.call(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	if action == "completing" {
		_, err = w.queue.Done(ctx, trellis.DoneRequest{TaskID: w.task.TaskID, Worker: worker, WhatWasDone: "finished by " + worker})
	} else {
		_, err = w.queue.Fail(ctx, trellis.FailRequest{TaskID: w.task.TaskID, Worker: worker, Error: "failed by " + worker})
	}
	if err == nil {
		return fmt.Errorf("worker %q %s task %s was accepted; expected a %s error", worker, action, w.task.TaskID, code)
	}
	if got := trellis.ErrorCode(err); string(got) != code {
		return fmt.Errorf("worker %q %s task %s was refused with %s (%v); expected %s", worker, action, w.task.TaskID, got, err, code)
	}
	return nil
}

func (w *World) retry(ctx context.Context) error {
	if w.task == nil {
		return errors.New("there is no task yet to retry")
	}
	ctx, cancel, err := w.call(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	t, err := w.admin.Retry(ctx, trellis.RetryRequest{TaskID: w.task.TaskID, Actor: "operator"})
	if err != nil {
		return err
	}
	w.task = t
	return nil
}

func (w *World) pauseResume(ctx context.Context, action, queue string) error {
	act := map[string]string{"pauses": "pause", "resumes": "resume"}[action]
	return w.control(ctx, trellis.ControlRequest{Queue: queue, Action: act, Actor: "operator"})
}

func (w *World) limit(ctx context.Context, queue string, n int) error {
	return w.control(ctx, trellis.ControlRequest{Queue: queue, Action: "limit", MaxInFlight: n, Actor: "operator"})
}

func (w *World) control(ctx context.Context, req trellis.ControlRequest) error {
	ctx, cancel, err := w.call(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	_, err = w.admin.Control(ctx, req)
	return err
}

var countRE = regexp.MustCompile(`(\d+) tasks? "([a-z]+)"`)

func (w *World) queueCounts(ctx context.Context, queue, list string) error {
	want := map[trellis.Status]int{}
	for _, m := range countRE.FindAllStringSubmatch(list, -1) {
		s := trellis.Status(m[2])
		if !s.Valid() {
			return fmt.Errorf("%q is not a task status: use queued, claimed, done, failed or dead", m[2])
		}
		if _, dup := want[s]; dup {
			return fmt.Errorf("status %q is named twice", s)
		}
		want[s], _ = strconv.Atoi(m[1])
	}
	got, err := w.counts(ctx, queue)
	if err != nil {
		return err
	}
	for _, s := range trellis.Statuses() {
		if got[s] != want[s] {
			return fmt.Errorf("queue %q has %s; expected %s", queue, describeCounts(got), describeCounts(want))
		}
	}
	return nil
}

// counts returns the board's counts of a queue.
func (w *World) counts(ctx context.Context, queue string) (map[trellis.Status]int, error) {
	ctx, cancel, err := w.call(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	l, err := w.queue.List(ctx, trellis.ListRequest{Queue: queue})
	if err != nil {
		return nil, err
	}
	return l.Counts[queue], nil
}

// describeCounts writes counts as the step phrases them.
func describeCounts(c map[trellis.Status]int) string {
	var parts []string
	for _, s := range trellis.Statuses() {
		switch n := c[s]; {
		case n == 1:
			parts = append(parts, fmt.Sprintf(`1 task %q`, s))
		case n > 1:
			parts = append(parts, fmt.Sprintf(`%d tasks %q`, n, s))
		}
	}
	if len(parts) == 0 {
		return "no tasks"
	}
	return strings.Join(parts, ", ")
}

func (w *World) queueIdle(ctx context.Context, queue string) error {
	got, err := w.counts(ctx, queue)
	if err != nil {
		return err
	}
	if got[trellis.StatusQueued]+got[trellis.StatusClaimed]+got[trellis.StatusScheduled]+got[trellis.StatusWaiting] > 0 {
		return fmt.Errorf("queue %q is not idle: it has %s%s", queue, describeCounts(got), w.workerTrouble())
	}
	return nil
}

// show reloads a task from the log.
func (w *World) show(ctx context.Context, t *trellis.Task) (*trellis.Task, error) {
	if t == nil {
		return nil, errors.New("there is no task yet: add or claim one first")
	}
	ctx, cancel, err := w.call(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	return w.queue.Show(ctx, t.TaskID)
}

// that reloads "that task" and keeps the fresh copy.
func (w *World) that(ctx context.Context) (*trellis.Task, error) {
	t, err := w.show(ctx, w.task)
	if err == nil {
		w.task = t
	}
	return t, err
}

func (w *World) named1(name string) (*trellis.Task, error) {
	t, ok := w.named[name]
	if !ok {
		names := make([]string, 0, len(w.named))
		for n := range w.named {
			names = append(names, strconv.Quote(n))
		}
		sort.Strings(names)
		return nil, fmt.Errorf("no task is named %q in this scenario (named: %s); name one with `I add a task \"NAME\" to queue ...`", name, strings.Join(names, ", "))
	}
	return t, nil
}

func statusIs(t *trellis.Task, status string) error {
	if !trellis.Status(status).Valid() {
		return fmt.Errorf("%q is not a task status: use queued, claimed, done, failed or dead", status)
	}
	if t.Status != trellis.Status(status) {
		return fmt.Errorf("task %s (%q) is %s; expected %s", t.TaskID, t.Objective, t.Status, status)
	}
	return nil
}

func (w *World) thatTaskIs(ctx context.Context, status string) error {
	t, err := w.that(ctx)
	if err != nil {
		return err
	}
	return statusIs(t, status)
}

func (w *World) namedTaskIs(ctx context.Context, name, status string) error {
	t, err := w.named1(name)
	if err != nil {
		return err
	}
	if t, err = w.show(ctx, t); err != nil {
		return err
	}
	w.task = t
	return statusIs(t, status)
}

// isWorker reports whether actor is worker or one of its pool slots.
func isWorker(actor, worker string) bool {
	return actor == worker || strings.HasPrefix(actor, worker+"/")
}

func (w *World) claimedBy(ctx context.Context, worker string) error {
	t, err := w.that(ctx)
	if err != nil {
		return err
	}
	if t.Status != trellis.StatusClaimed || !isWorker(t.ClaimedBy, worker) {
		return fmt.Errorf("task %s is %s by %q; expected claimed by %q", t.TaskID, t.Status, t.ClaimedBy, worker)
	}
	return nil
}

func (w *World) tried(ctx context.Context, n int) error {
	t, err := w.that(ctx)
	if err != nil {
		return err
	}
	if t.Attempts != n {
		return fmt.Errorf("task %s was tried %d times; expected %d", t.TaskID, t.Attempts, n)
	}
	return nil
}

func (w *World) budgetExhausted(ctx context.Context) error {
	t, err := w.that(ctx)
	if err != nil {
		return err
	}
	if !t.BudgetExhausted {
		return fmt.Errorf("task %s is not marked budget exhausted (budget %d steps, %d tool calls)", t.TaskID, t.Budget.MaxSteps, t.Budget.MaxToolCalls)
	}
	return nil
}

func (w *World) checkpointSays(ctx context.Context, text string) error {
	t, err := w.that(ctx)
	if err != nil {
		return err
	}
	if t.Checkpoint == nil {
		return fmt.Errorf("task %s (%s) has no checkpoint yet", t.TaskID, t.Status)
	}
	if !strings.Contains(t.Checkpoint.WhatWasDone, text) {
		return fmt.Errorf("task %s's checkpoint says %q; expected it to contain %q", t.TaskID, t.Checkpoint.WhatWasDone, text)
	}
	return nil
}

func (w *World) lastErrorSays(ctx context.Context, text string) error {
	t, err := w.that(ctx)
	if err != nil {
		return err
	}
	if !strings.Contains(t.LastError, text) {
		return fmt.Errorf("task %s's last error is %q; expected it to contain %q", t.TaskID, t.LastError, text)
	}
	return nil
}
