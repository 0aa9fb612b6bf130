package taskqueue_test

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/taskqueue"
)

// scheduleLog returns the types of a schedule's events, in order.
func scheduleLog(t *testing.T, b *eventstest.Bundle, name string) []string {
	t.Helper()
	recs, _, err := b.Store.Load(context.Background(), events.StreamQueue, taskqueue.ScheduleFilter(name))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range recs {
		out = append(out, r.Type)
	}
	return out
}

// tasksOf returns the tasks a schedule's ticks added, from the log.
func tasksOf(t *testing.T, b *eventstest.Bundle, queue, name string) []*trellis.Task {
	t.Helper()
	recs, _, err := b.Store.Load(context.Background(), events.StreamQueue, "trellis.queue."+queue+".>")
	if err != nil {
		t.Fatal(err)
	}
	var out []*trellis.Task
	for _, r := range recs {
		if r.Type != taskqueue.Added || !taskqueue.IsTaskSubject(r.Subject) {
			continue
		}
		task, err := taskqueue.Apply(nil, r)
		if err != nil {
			t.Fatal(err)
		}
		if task.Schedule == name {
			out = append(out, task)
		}
	}
	return out
}

// Each tick adds exactly one task, even with two servers taking ticks up;
// the task's idempotency key is the schedule's name and the tick time; a
// removed schedule's pending tick is ignored and arms nothing.
func TestScheduleEveryTwoServers(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	ctx := ctxT(t)
	q1 := taskqueue.New(b.Store, taskqueue.Config{})
	q2 := taskqueue.New(b.Store, taskqueue.Config{})
	withReactor(t, q1)
	withReactor(t, q2)
	s, err := q1.AddSchedule(ctx, trellis.ScheduleRequest{Name: "pulse", Every: "1s", AddTaskRequest: trellis.AddTaskRequest{Queue: "cron", Objective: "check the pulse", Priority: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if s.NextTick == nil || s.Queue != "cron" {
		t.Fatalf("schedule = %+v", s)
	}
	if _, err := q2.AddSchedule(ctx, trellis.ScheduleRequest{Name: "pulse", Every: "5s", AddTaskRequest: trellis.AddTaskRequest{Objective: "x"}}); trellis.ErrorCode(err) != trellis.CodeConflict {
		t.Fatalf("second schedule of the same name: %v; want conflict", err)
	}
	waitFor(t, 20*time.Second, "three ticks fired", func() bool {
		got, err := q2.Schedule(ctx, "pulse")
		return err == nil && got.Fired >= 3
	})
	removed, err := q1.RemoveSchedule(ctx, trellis.RemoveScheduleRequest{Name: "pulse"})
	if err != nil || !removed.Removed {
		t.Fatalf("remove = %+v, %v", removed, err)
	}
	// The timer armed before the removal still fires; nothing follows it.
	waitFor(t, 10*time.Second, "the pending tick after the removal", func() bool {
		l := scheduleLog(t, b, "pulse")
		return len(l) > 1 && l[len(l)-1] == taskqueue.Tick && strings.Contains(strings.Join(l, " "), taskqueue.ScheduleRemoved)
	})
	log := strings.Join(scheduleLog(t, b, "pulse"), " ")
	after := log[strings.Index(log, taskqueue.ScheduleRemoved):]
	if strings.Contains(after, taskqueue.Fired) {
		t.Fatalf("a tick fired after the removal: %s", log)
	}
	final, _ := q1.Schedule(ctx, "pulse")
	tasks := tasksOf(t, b, "cron", "pulse")
	if len(tasks) != final.Fired || final.Fired < 3 {
		t.Fatalf("%d tasks for %d fired ticks", len(tasks), final.Fired)
	}
	keys := map[string]bool{}
	for _, task := range tasks {
		if keys[task.IdempotencyKey] || !strings.HasPrefix(task.IdempotencyKey, "pulse@") || task.Priority != 1 {
			t.Fatalf("tick task %+v: key repeated or wrong", task)
		}
		keys[task.IdempotencyKey] = true
	}
	list, err := q2.Schedules(ctx)
	if err != nil || len(list) != 0 {
		t.Fatalf("schedules after removal = %+v, %v", list, err)
	}
	if _, err := q1.RemoveSchedule(ctx, trellis.RemoveScheduleRequest{Name: "pulse"}); trellis.ErrorCode(err) != trellis.CodeNotFound {
		t.Fatalf("remove twice: %v; want not_found", err)
	}
}

// Ticks that pass while no server takes them up are reported, not run in
// a burst: the one pending tick, found later than the grace, adds no task;
// the ticks since are counted as missed and the chain goes on from now.
func TestScheduleMissedTicksAreReported(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	ctx := ctxT(t)
	q := taskqueue.New(b.Store, taskqueue.Config{TickGrace: 500 * time.Millisecond})
	if _, err := q.AddSchedule(ctx, trellis.ScheduleRequest{Name: "nightly", Every: "1s", AddTaskRequest: trellis.AddTaskRequest{Queue: "n", Objective: "x"}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3500 * time.Millisecond) // no reactor: every server is "down"
	withReactor(t, q)
	waitFor(t, 10*time.Second, "missed ticks reported", func() bool {
		s, err := q.Schedule(ctx, "nightly")
		return err == nil && s.Missed > 0
	})
	s, _ := q.Schedule(ctx, "nightly")
	if s.Missed < 2 || s.LastMissed == nil || s.LastMissed.Count != s.Missed || s.Fired != 0 && s.LastTick.Before(s.LastMissed.Last) {
		t.Fatalf("schedule after the outage = %+v", s)
	}
	if n := len(tasksOf(t, b, "n", "nightly")); n != s.Fired {
		t.Fatalf("%d tasks added for %d fired ticks: missed ticks ran", n, s.Fired)
	}
	waitFor(t, 10*time.Second, "the chain goes on after the report", func() bool {
		s, err := q.Schedule(ctx, "nightly")
		return err == nil && s.Fired >= 1
	})
}

func TestScheduleBadInput(t *testing.T) {
	t.Parallel()
	q, _ := setupQueue(t)
	ctx := ctxT(t)
	task := trellis.AddTaskRequest{Objective: "x"}
	for _, c := range []struct {
		req   trellis.ScheduleRequest
		field string
	}{
		{trellis.ScheduleRequest{Name: "a b", Every: "1m", AddTaskRequest: task}, "name"},
		{trellis.ScheduleRequest{Name: "a", AddTaskRequest: task}, "every"},
		{trellis.ScheduleRequest{Name: "a", Every: "1m", Cron: "* * * * *", AddTaskRequest: task}, "cron"},
		{trellis.ScheduleRequest{Name: "a", Every: "10ms", AddTaskRequest: task}, "every"},
		{trellis.ScheduleRequest{Name: "a", Every: "often", AddTaskRequest: task}, "every"},
		{trellis.ScheduleRequest{Name: "a", Cron: "0 25 * * *", AddTaskRequest: task}, "cron"},
		{trellis.ScheduleRequest{Name: "a", Cron: "0 9 * *", AddTaskRequest: task}, "cron"},
		{trellis.ScheduleRequest{Name: "a", Every: "1m"}, "objective"},
		{trellis.ScheduleRequest{Name: "a", Every: "1m", AddTaskRequest: trellis.AddTaskRequest{Objective: "x", Delay: "1s"}}, "delay"},
		{trellis.ScheduleRequest{Name: "a", Every: "1m", AddTaskRequest: trellis.AddTaskRequest{Objective: "x", Priority: 7}}, "priority"},
	} {
		_, err := q.AddSchedule(ctx, c.req)
		if trellis.ErrorCode(err) != trellis.CodeInvalid || trellis.AsError(err).Field != c.field {
			t.Errorf("%+v: %v; want invalid naming %s", c.req, err, c.field)
		}
	}
	if _, err := q.RemoveSchedule(ctx, trellis.RemoveScheduleRequest{Name: "nope"}); trellis.ErrorCode(err) != trellis.CodeNotFound {
		t.Fatalf("remove unknown: %v", err)
	}
	if _, err := q.AddSchedule(ctx, trellis.ScheduleRequest{Name: "weekday", Cron: "0 9 * * 1-5", AddTaskRequest: task}); err != nil {
		t.Fatal(err)
	}
	list, err := q.Schedules(ctx)
	if err != nil || len(list) != 1 || list[0].Cron != "0 9 * * 1-5" || list[0].NextTick.Hour() != 9 || list[0].NextTick.Weekday() == time.Saturday {
		t.Fatalf("list = %+v, %v", list, err)
	}
	names := []string{}
	for _, s := range list {
		names = append(names, s.Name)
	}
	if !sort.StringsAreSorted(names) {
		t.Fatalf("not sorted: %v", names)
	}
}
