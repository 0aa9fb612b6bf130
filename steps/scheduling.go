package steps

import (
	"context"
	"fmt"
	"strings"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/taskqueue"
)

// Scheduling and flow control: cancel, per-key and rate limits,
// prerequisites' summaries, periodic schedules. Delays, priorities,
// prerequisites, unique and concurrency keys are rows of the add table
// (see addRequest).

func schedulingSteps() []Definition {
	return []Definition{
		{
			Pattern: `^an operator cancels (?:that task|task "([^"]*)")(?: because "([^"]*)")?$`,
			Example: `When an operator cancels task "export" because "wrong region"`,
			Doc: "Cancels a task (queue cancel): a scheduled, waiting or queued one at once; one a worker runs is stopped at the " +
				"worker's next heartbeat. Its dependants are cancelled too. Say \"that task\" or name one.",
			run: func(w *World) any { return w.cancel },
		},
		{
			Pattern: `^an operator limits queue "([^"]*)" to (\d+) tasks? per concurrency key$`,
			Example: `When an operator limits queue "agents" to 1 task per concurrency key`,
			Doc:     "Caps the tasks running at once per concurrency key (queue limit --per-key; 0 removes the cap).",
			run:     func(w *World) any { return w.limitPerKey },
		},
		{
			Pattern: `^an operator limits queue "([^"]*)" to a rate of "([^"]*)"$`,
			Example: `When an operator limits queue "llm" to a rate of "10/s"`,
			Doc:     "Caps the claims of the queue for the whole cluster (queue limit --rate: N/s, N/m, N/h, or off).",
			run:     func(w *World) any { return w.limitRate },
		},
		{
			Pattern: `^task "([^"]*)" shows what task "([^"]*)" did$`,
			Example: `Then task "review" shows what task "implement" did`,
			Doc: "Checks that the first task's packet lists the second among its prerequisites, with the second's checkpoint " +
				"summary (what was done).",
			Check: true,
			run:   func(w *World) any { return w.showsPrerequisite },
		},
		{
			Pattern: `^no two tasks with one concurrency key ran at once in queue "([^"]*)"$`,
			Example: `Then no two tasks with one concurrency key ran at once in queue "agents"`,
			Doc:     "Checks the whole log: between a task's claim and its end, no other task of the queue with its concurrency key was claimed.",
			Check:   true,
			run:     func(w *World) any { return w.oneRunningPerKey },
		},
		{
			Pattern: `^an operator adds schedule "([^"]*)" to queue "([^"]*)" (every|at cron) "([^"]*)" with objective "([^"]*)"$`,
			Example: `When an operator adds schedule "nightly" to queue "reports" at cron "0 2 * * *" with objective "Export the orders"`,
			Doc: "Creates a periodic schedule (schedule add): every \"10m\" (a duration) or at cron \"0 2 * * *\" (five fields, UTC); " +
				"each tick adds one task with the objective.",
			run: func(w *World) any { return w.addSchedule },
		},
		{
			Pattern: `^an operator removes schedule "([^"]*)"$`,
			Example: `When an operator removes schedule "nightly"`,
			Doc:     "Removes a schedule (schedule remove): no later tick adds a task.",
			run:     func(w *World) any { return w.removeSchedule },
		},
		{
			Pattern: `^schedule "([^"]*)" next ticks at "([^"]*)"$`,
			Example: `Then schedule "nightly" next ticks at "02:00"`,
			Doc:     "Checks the time of day (UTC, HH:MM) of the schedule's next tick.",
			Check:   true,
			run:     func(w *World) any { return w.nextTickAt },
		},
		{
			Pattern: `^schedule "([^"]*)" has added (\d+) or more tasks, one per tick$`,
			Example: `Then schedule "pulse" has added 2 or more tasks, one per tick`,
			Doc: "Checks the log: the schedule fired at least N ticks, each tick added exactly one task (its idempotency key is " +
				"the schedule's name and the tick time), and no other task names the schedule.",
			Check: true,
			run:   func(w *World) any { return w.schedulePerTick },
		},
	}
}

func (w *World) cancel(ctx context.Context, name, reason string) error {
	t := w.task
	if name != "" {
		nt, ok := w.named[name]
		if !ok {
			return fmt.Errorf("no task named %q was added in this scenario", name)
		}
		t = nt
	}
	if t == nil {
		return fmt.Errorf("there is no task yet: add or claim one first")
	}
	ctx, cancel, err := w.call(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	got, err := w.admin.Cancel(ctx, trellis.CancelRequest{TaskID: t.TaskID, Reason: reason, Actor: "operator"})
	if err != nil {
		return err
	}
	w.task = got
	return nil
}

func (w *World) limitPerKey(ctx context.Context, queue string, n int) error {
	return w.control(ctx, trellis.ControlRequest{Queue: queue, Action: "per_key", PerKey: n, Actor: "operator"})
}

func (w *World) limitRate(ctx context.Context, queue, rate string) error {
	return w.control(ctx, trellis.ControlRequest{Queue: queue, Action: "rate", Rate: rate, Actor: "operator"})
}

func (w *World) showsPrerequisite(ctx context.Context, name, prereq string) error {
	t, ok := w.named[name]
	p, ok2 := w.named[prereq]
	if !ok || !ok2 {
		return fmt.Errorf("name both tasks when adding them (no task %q or %q in this scenario)", name, prereq)
	}
	got, err := w.show(ctx, t)
	if err != nil {
		return err
	}
	done, err := w.show(ctx, p)
	if err != nil {
		return err
	}
	for _, s := range got.Prerequisites {
		if s.TaskID == p.TaskID {
			if done.Checkpoint == nil || s.WhatWasDone != done.Checkpoint.WhatWasDone {
				return fmt.Errorf("task %q shows %q for %q, whose checkpoint says %+v", name, s.WhatWasDone, prereq, done.Checkpoint)
			}
			return nil
		}
	}
	return fmt.Errorf("task %q (%s) lists no summary of %q (after %v, waiting for %v)", name, got.Status, prereq, got.After, got.WaitingFor)
}

func (w *World) oneRunningPerKey(ctx context.Context, queue string) error {
	running := map[string]map[string]bool{} // key -> tasks claimed now
	_, err := w.foldLog(ctx, func(before *trellis.Task, rec events.Recorded) error {
		if before == nil || before.Queue != queue || before.ConcurrencyKey == "" {
			return nil
		}
		key := before.ConcurrencyKey
		if running[key] == nil {
			running[key] = map[string]bool{}
		}
		switch {
		case rec.Type == taskqueue.Claimed:
			for other := range running[key] {
				return fmt.Errorf("task %s (key %q) was claimed (event #%d) while task %s with the same key ran", rec.AggregateID, key, rec.Seq, other)
			}
			running[key][rec.AggregateID] = true
		case before.Status == trellis.StatusClaimed && rec.Type != taskqueue.CancelRequested && rec.Type != taskqueue.Linked:
			delete(running[key], rec.AggregateID)
		}
		return nil
	})
	return err
}

func (w *World) schedules() (trellis.ScheduleService, error) {
	if w.srv == nil {
		return nil, errNoServer
	}
	return w.srv.Service(), nil
}

func (w *World) addSchedule(ctx context.Context, name, queue, kind, period, objective string) error {
	sc, err := w.schedules()
	if err != nil {
		return err
	}
	ctx, cancel, err := w.call(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	req := trellis.ScheduleRequest{Name: name, AddTaskRequest: trellis.AddTaskRequest{Queue: queue, Objective: objective}, Actor: "operator"}
	if kind == "every" {
		req.Every = period
	} else {
		req.Cron = period
	}
	_, err = sc.AddSchedule(ctx, req)
	return err
}

func (w *World) removeSchedule(ctx context.Context, name string) error {
	sc, err := w.schedules()
	if err != nil {
		return err
	}
	ctx, cancel, err := w.call(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	_, err = sc.RemoveSchedule(ctx, trellis.RemoveScheduleRequest{Name: name, Actor: "operator"})
	return err
}

// schedule returns a schedule by name.
func (w *World) schedule(ctx context.Context, name string) (*trellis.Schedule, error) {
	if w.srv == nil {
		return nil, errNoServer
	}
	ctx, cancel, err := w.call(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	return w.srv.Service().QueueHandler().Schedule(ctx, name)
}

func (w *World) nextTickAt(ctx context.Context, name, hhmm string) error {
	s, err := w.schedule(ctx, name)
	if err != nil {
		return err
	}
	if s.NextTick == nil {
		return fmt.Errorf("schedule %q has no next tick (removed?)", name)
	}
	if got := s.NextTick.UTC().Format("15:04"); got != hhmm {
		return fmt.Errorf("schedule %q next ticks at %s (UTC); expected %s", name, s.NextTick.UTC().Format("2006-01-02 15:04"), hhmm)
	}
	return nil
}

func (w *World) schedulePerTick(ctx context.Context, name string, n int) error {
	s, err := w.schedule(ctx, name)
	if err != nil {
		return err
	}
	if s.Fired < n {
		return fmt.Errorf("schedule %q fired %d ticks; expected at least %d", name, s.Fired, n)
	}
	perKey := map[string]int{}
	tasks, err := w.foldLog(ctx, func(*trellis.Task, events.Recorded) error { return nil })
	if err != nil {
		return err
	}
	for _, t := range tasks {
		if t.Schedule != name {
			continue
		}
		if !strings.HasPrefix(t.IdempotencyKey, name+"@") {
			return fmt.Errorf("task %s of schedule %q has idempotency key %q", t.TaskID, name, t.IdempotencyKey)
		}
		perKey[t.IdempotencyKey]++
	}
	for key, c := range perKey {
		if c != 1 {
			return fmt.Errorf("tick %s added %d tasks", key, c)
		}
	}
	// Read again: ticks may have fired while the log was read.
	if s2, err := w.schedule(ctx, name); err == nil && len(perKey) != s.Fired && len(perKey) != s2.Fired {
		return fmt.Errorf("schedule %q fired %d ticks but %d tasks name it", name, s2.Fired, len(perKey))
	}
	return nil
}
