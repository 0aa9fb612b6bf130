package taskqueue_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/taskqueue"
)

// withReactor starts the reactor (dependants, ticks) for the test.
func withReactor(t *testing.T, q *taskqueue.Handler) {
	t.Helper()
	r, err := q.StartReactor(context.Background(), taskqueue.ReactorConfig{AckWait: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
}

// waitFor repeats check until it holds (a state in the log), failing after
// within.
func waitFor(t *testing.T, within time.Duration, what string, check func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !check() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", within, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func show(t *testing.T, q *taskqueue.Handler, id string) *trellis.Task {
	t.Helper()
	task, err := q.Show(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return task
}

// streamTime is when the server stored the event at seq.
func streamTime(t *testing.T, b *eventstest.Bundle, seq uint64) time.Time {
	t.Helper()
	st, err := b.Store.JetStream().Stream(context.Background(), events.StreamQueue)
	if err != nil {
		t.Fatal(err)
	}
	m, err := st.GetMsg(context.Background(), seq)
	if err != nil {
		t.Fatal(err)
	}
	return m.Time
}

// A delayed task is scheduled until its time: claims before then get
// nothing and the log holds only its add; the server publishes its due
// event from the task's timer within a second of run_at, and then it is
// claimed.
func TestDelayedTask(t *testing.T) {
	t.Parallel()
	q, b := setupQueue(t)
	ctx := ctxT(t)
	added, err := q.Add(ctx, trellis.AddTaskRequest{Queue: "later", Objective: "send the digest", Delay: "2s"})
	if err != nil {
		t.Fatal(err)
	}
	if added.Status != trellis.StatusScheduled || added.RunAt == nil {
		t.Fatalf("added = %s, run_at %v; want scheduled with run_at", added.Status, added.RunAt)
	}
	if got, err := q.Next(ctx, trellis.NextRequest{Queue: "later", Worker: "w"}); err != nil || got != nil {
		t.Fatalf("next before run_at = %v, %v; want nothing", got, err)
	}
	if h := historyTypes(t, q, added.TaskID); h != "added" {
		t.Fatalf("history before run_at = %q", h)
	}
	claimed := nextUntil(t, q, "later", "w", 15*time.Second)
	if claimed == nil || claimed.TaskID != added.TaskID {
		t.Fatalf("claimed %+v; want the delayed task", claimed)
	}
	if !claimed.ClaimedAt.After(*added.RunAt) && !claimed.ClaimedAt.Equal(*added.RunAt) {
		t.Fatalf("claimed at %s, before run_at %s", claimed.ClaimedAt, added.RunAt)
	}
	recs, err := q.History(ctx, added.TaskID)
	if err != nil {
		t.Fatal(err)
	}
	if h := historyTypes(t, q, added.TaskID); h != "added due claimed" {
		t.Fatalf("history = %q; want added due claimed", h)
	}
	if late := streamTime(t, b, recs[1].Seq).Sub(*added.RunAt); late > time.Second || late < 0 {
		t.Fatalf("due stored %s after run_at; want within a second", late)
	}
}

// A delayed task survives a restart of the server: its timer is a message
// in the stream, and the server publishes the due event when it comes back
// after run_at.
func TestDelayedTaskSurvivesRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := ctxT(t)
	b := eventstest.Start(t, eventstest.Options{StoreDir: dir})
	q := taskqueue.New(b.Store, taskqueue.Config{})
	runAt := time.Now().Add(time.Second).UTC().Format(time.RFC3339Nano)
	added, err := q.Add(ctx, trellis.AddTaskRequest{Queue: "later", Objective: "x", RunAt: runAt})
	if err != nil {
		t.Fatal(err)
	}
	b.Conn.Close()
	b.Server.Shutdown()
	b.Server.WaitForShutdown()
	time.Sleep(1500 * time.Millisecond) // down while the task comes due
	b2 := eventstest.Start(t, eventstest.Options{StoreDir: dir})
	q2 := taskqueue.New(b2.Store, taskqueue.Config{})
	claimed := nextUntil(t, q2, "later", "w", 15*time.Second)
	if claimed == nil || claimed.TaskID != added.TaskID {
		t.Fatalf("after restart claimed %+v; want the delayed task", claimed)
	}
	if h := historyTypes(t, q2, added.TaskID); h != "added due claimed" {
		t.Fatalf("history = %q", h)
	}
}

// Claims take the oldest task of the best priority present, whatever the
// order of the adds.
func TestPriorityOrder(t *testing.T) {
	t.Parallel()
	q, _ := setupQueue(t)
	ctx := ctxT(t)
	var want []string
	add := func(p int, name string) string {
		task, err := q.Add(ctx, trellis.AddTaskRequest{Queue: "prio", Objective: name, Priority: p})
		if err != nil {
			t.Fatal(err)
		}
		if task.Priority != p {
			t.Fatalf("%s: priority %d; want %d", name, task.Priority, p)
		}
		return name
	}
	var flood []string
	for i := 0; i < 8; i++ {
		flood = append(flood, add(4, fmt.Sprint("p4-", i)))
	}
	p3 := add(3, "p3")
	p1a := add(1, "p1-a")
	p2 := add(2, "p2")
	p1b := add(1, "p1-b")
	want = append([]string{p1a, p1b, p2, p3}, flood...)
	var got []string
	for range want {
		task := nextUntil(t, q, "prio", "w", 5*time.Second)
		if task == nil {
			t.Fatalf("claimed %v, then nothing", got)
		}
		got = append(got, task.Objective)
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("claim order %v; want %v", got, want)
	}
}

// A unique key holds while its task is not finished: a second add returns
// the first task marked duplicate and adds nothing, from another process
// too; once the task is done the key is free. With unique_for the key
// holds for that long whatever the task's status.
func TestUniqueKey(t *testing.T) {
	t.Parallel()
	q, b := setupQueue(t)
	ctx := ctxT(t)
	first, err := q.Add(ctx, trellis.AddTaskRequest{Queue: "u", Objective: "index repo", UniqueKey: "repo-a"})
	if err != nil || first.Duplicate {
		t.Fatalf("first add = %+v, %v", first, err)
	}
	other := taskqueue.New(b.Store, taskqueue.Config{}) // another process, after the dedup window would not matter
	dup, err := other.Add(ctx, trellis.AddTaskRequest{Queue: "u", Objective: "index repo again", UniqueKey: "repo-a"})
	if err != nil || !dup.Duplicate || dup.TaskID != first.TaskID || dup.Objective != "index repo" {
		t.Fatalf("second add = %+v, %v; want the first task as a duplicate", dup, err)
	}
	// Another queue has its own keys.
	if elsewhere, err := q.Add(ctx, trellis.AddTaskRequest{Queue: "u2", Objective: "x", UniqueKey: "repo-a"}); err != nil || elsewhere.Duplicate {
		t.Fatalf("same key in another queue = %+v, %v", elsewhere, err)
	}
	claimed := nextUntil(t, q, "u", "w", 5*time.Second)
	if _, err := q.Done(ctx, trellis.DoneRequest{TaskID: claimed.TaskID, Worker: "w", WhatWasDone: "indexed"}); err != nil {
		t.Fatal(err)
	}
	again, err := other.Add(ctx, trellis.AddTaskRequest{Queue: "u", Objective: "index repo", UniqueKey: "repo-a"})
	if err != nil || again.Duplicate || again.TaskID == first.TaskID {
		t.Fatalf("add after the holder finished = %+v, %v; want a new task", again, err)
	}

	held, err := q.Add(ctx, trellis.AddTaskRequest{Queue: "u", Objective: "digest", UniqueKey: "digest", UniqueFor: "1h"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Cancel(ctx, trellis.CancelRequest{TaskID: held.TaskID}); err != nil {
		t.Fatal(err)
	}
	dup2, err := q.Add(ctx, trellis.AddTaskRequest{Queue: "u", Objective: "digest", UniqueKey: "digest", UniqueFor: "1h"})
	if err != nil || !dup2.Duplicate || dup2.TaskID != held.TaskID || dup2.Status != trellis.StatusCancelled {
		t.Fatalf("add within unique_for = %+v, %v; want the cancelled holder as a duplicate", dup2, err)
	}
}

// Adds racing for one unique key from several processes add one task.
func TestUniqueKeyRace(t *testing.T) {
	t.Parallel()
	_, b := setupQueue(t)
	ctx := ctxT(t)
	var wg sync.WaitGroup
	ids := make([]string, 8)
	dups := make([]bool, 8)
	for i := range ids {
		q := taskqueue.New(b.Store, taskqueue.Config{})
		wg.Add(1)
		go func() {
			defer wg.Done()
			task, err := q.Add(ctx, trellis.AddTaskRequest{Queue: "race", Objective: fmt.Sprint("add ", i), UniqueKey: "only-one"})
			if err != nil {
				t.Error(err)
				return
			}
			ids[i], dups[i] = task.TaskID, task.Duplicate
		}()
	}
	wg.Wait()
	fresh := 0
	for i := range ids {
		if ids[i] != ids[0] {
			t.Fatalf("adds returned different tasks: %v", ids)
		}
		if !dups[i] {
			fresh++
		}
	}
	recs, _, err := b.Store.Load(ctx, events.StreamQueue, "trellis.queue.race.*.added")
	if err != nil || len(recs) != 1 || fresh != 1 {
		t.Fatalf("log holds %d adds (%v), %d answers not duplicate; want 1 and 1", len(recs), err, fresh)
	}
}

// A task added after others waits until each is done, learns each one's
// checkpoint summary, and is queued after the last; a prerequisite that
// fails cancels its dependants (and theirs) with the reason.
func TestDependencies(t *testing.T) {
	t.Parallel()
	q, _ := setupQueue(t)
	withReactor(t, q)
	ctx := ctxT(t)
	impl, _ := q.Add(ctx, trellis.AddTaskRequest{Queue: "deps", Objective: "implement"})
	docs, _ := q.Add(ctx, trellis.AddTaskRequest{Queue: "deps", Objective: "document"})
	review, err := q.Add(ctx, trellis.AddTaskRequest{Queue: "deps", Objective: "review", After: []string{impl.TaskID, docs.TaskID}})
	if err != nil {
		t.Fatal(err)
	}
	if review.Status != trellis.StatusWaiting || len(review.WaitingFor) != 2 {
		t.Fatalf("review = %s waiting for %v", review.Status, review.WaitingFor)
	}
	finish := func(objective, what string) {
		task := nextUntil(t, q, "deps", "w", 5*time.Second)
		if task == nil || task.Objective != objective {
			t.Fatalf("claimed %+v; want %s", task, objective)
		}
		if _, err := q.Done(ctx, trellis.DoneRequest{TaskID: task.TaskID, Worker: "w", WhatWasDone: what, WhatNext: "review it"}); err != nil {
			t.Fatal(err)
		}
	}
	finish("implement", "implemented the form")
	waitFor(t, 10*time.Second, "review learns the implementation", func() bool { return len(show(t, q, review.TaskID).Prerequisites) == 1 })
	if got := show(t, q, review.TaskID); got.Status != trellis.StatusWaiting {
		t.Fatalf("review after one prerequisite = %s", got.Status)
	}
	finish("document", "documented the form")
	waitFor(t, 10*time.Second, "review queued", func() bool { return show(t, q, review.TaskID).Status == trellis.StatusQueued })
	got := nextUntil(t, q, "deps", "w", 5*time.Second)
	if got == nil || got.TaskID != review.TaskID || len(got.Prerequisites) != 2 || got.Prerequisites[0].WhatWasDone != "implemented the form" ||
		got.Prerequisites[1].TaskID != docs.TaskID || got.Prerequisites[1].WhatNext != "review it" {
		t.Fatalf("review claimed = %+v", got)
	}
	if h := historyTypes(t, q, review.TaskID); h != "added prerequisite_done ready claimed" {
		t.Fatalf("review history = %q", h)
	}

	// A failure cascades.
	build, _ := q.Add(ctx, trellis.AddTaskRequest{Queue: "deps", Objective: "build"})
	test, _ := q.Add(ctx, trellis.AddTaskRequest{Queue: "deps", Objective: "test", After: []string{build.TaskID}})
	ship, _ := q.Add(ctx, trellis.AddTaskRequest{Queue: "deps", Objective: "ship", After: []string{test.TaskID}})
	claimed := nextUntil(t, q, "deps", "w", 5*time.Second)
	if _, err := q.Fail(ctx, trellis.FailRequest{TaskID: claimed.TaskID, Worker: "w", Error: "compiler crashed"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "ship cancelled", func() bool { return show(t, q, ship.TaskID).Status == trellis.StatusCancelled })
	tt := show(t, q, test.TaskID)
	if tt.Status != trellis.StatusCancelled || !strings.Contains(tt.Cancellation.Reason, "prerequisite "+build.TaskID+" ended failed: compiler crashed") {
		t.Fatalf("test = %s, %+v", tt.Status, tt.Cancellation)
	}
	if r := show(t, q, ship.TaskID).Cancellation.Reason; !strings.Contains(r, test.TaskID+" ended cancelled") {
		t.Fatalf("ship's reason = %q", r)
	}
}

// Bad prerequisites are refused before anything is stored: an unknown
// task (a task added later could otherwise close a cycle, so cycles cannot
// form), one that already failed, one listed twice.
func TestDependencyBadInput(t *testing.T) {
	t.Parallel()
	q, _ := setupQueue(t)
	ctx := ctxT(t)
	future := events.NewID(time.Now().Add(time.Hour))
	if _, err := q.Add(ctx, trellis.AddTaskRequest{Objective: "x", After: []string{future}}); trellis.AsError(err).Field != "after" || trellis.ErrorCode(err) != trellis.CodeInvalid {
		t.Fatalf("unknown prerequisite: %v", err)
	}
	failed, _ := q.Add(ctx, trellis.AddTaskRequest{Objective: "y"})
	c := nextUntil(t, q, "default", "w", 5*time.Second)
	if _, err := q.Fail(ctx, trellis.FailRequest{TaskID: c.TaskID, Worker: "w", Error: "no"}); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Add(ctx, trellis.AddTaskRequest{Objective: "x", After: []string{failed.TaskID}}); trellis.ErrorCode(err) != trellis.CodeConflict || trellis.AsError(err).Field != "after" {
		t.Fatalf("failed prerequisite: %v; want conflict on after", err)
	}
	if h := historyTypes(t, q, failed.TaskID); h != "added claimed failed" {
		t.Fatalf("refused adds touched the prerequisite: %q", h)
	}
}

// Cancel: a queued or scheduled task is cancelled at once, repeating is
// harmless, a finished task cannot be cancelled, and a task claimed by
// queue next is cancelled so its claimant's finish is refused.
func TestCancel(t *testing.T) {
	t.Parallel()
	q, _ := setupQueue(t)
	ctx := ctxT(t)
	queued, _ := q.Add(ctx, trellis.AddTaskRequest{Queue: "c", Objective: "a"})
	later, _ := q.Add(ctx, trellis.AddTaskRequest{Queue: "c", Objective: "b", Delay: "1s"})
	for _, id := range []string{queued.TaskID, later.TaskID} {
		got, err := q.Cancel(ctx, trellis.CancelRequest{TaskID: id, Reason: "not needed", Actor: "ops"})
		if err != nil || got.Status != trellis.StatusCancelled || got.Cancellation.Reason != "not needed" || got.Cancellation.By != "ops" {
			t.Fatalf("cancel = %+v, %v", got, err)
		}
		if again, err := q.Cancel(ctx, trellis.CancelRequest{TaskID: id}); err != nil || again.Status != trellis.StatusCancelled {
			t.Fatalf("cancel again = %+v, %v", again, err)
		}
	}
	// The scheduled one's timer still fires; its due event changes nothing.
	waitFor(t, 10*time.Second, "the cancelled task's timer fired", func() bool { return historyTypes(t, q, later.TaskID) == "added cancelled due" })
	if got := show(t, q, later.TaskID); got.Status != trellis.StatusCancelled {
		t.Fatalf("after its timer a cancelled task is %s", got.Status)
	}
	if got, err := q.Next(ctx, trellis.NextRequest{Queue: "c", Worker: "w"}); err != nil || got != nil {
		t.Fatalf("next = %+v, %v; want nothing (all cancelled)", got, err)
	}
	run, _ := q.Add(ctx, trellis.AddTaskRequest{Queue: "c", Objective: "c"})
	claimed := nextUntil(t, q, "c", "agent", 5*time.Second)
	if claimed.TaskID != run.TaskID {
		t.Fatalf("claimed %s", claimed.TaskID)
	}
	if got, err := q.Cancel(ctx, trellis.CancelRequest{TaskID: run.TaskID}); err != nil || got.Status != trellis.StatusCancelled {
		t.Fatalf("cancel a claimed task = %+v, %v", got, err)
	}
	if _, err := q.Done(ctx, trellis.DoneRequest{TaskID: run.TaskID, Worker: "agent", WhatWasDone: "x"}); trellis.ErrorCode(err) != trellis.CodeConflict {
		t.Fatalf("done after cancel: %v; want conflict", err)
	}
	done, _ := q.Add(ctx, trellis.AddTaskRequest{Queue: "c", Objective: "d"})
	c := nextUntil(t, q, "c", "w", 5*time.Second)
	if _, err := q.Done(ctx, trellis.DoneRequest{TaskID: c.TaskID, Worker: "w", WhatWasDone: "x"}); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Cancel(ctx, trellis.CancelRequest{TaskID: done.TaskID}); trellis.ErrorCode(err) != trellis.CodeConflict {
		t.Fatalf("cancel a done task: %v; want conflict", err)
	}
	for _, bad := range []trellis.CancelRequest{{TaskID: "nope"}, {TaskID: done.TaskID, Actor: "bad actor"}} {
		if _, err := q.Cancel(ctx, bad); trellis.ErrorCode(err) != trellis.CodeInvalid {
			t.Fatalf("cancel %+v: %v; want invalid", bad, err)
		}
	}
	if _, err := q.Cancel(ctx, trellis.CancelRequest{TaskID: events.NewID(time.Now())}); trellis.ErrorCode(err) != trellis.CodeNotFound {
		t.Fatalf("cancel unknown: %v; want not_found", err)
	}
}

// claimTimes returns the times of the claimed events of a queue, in order.
func claimTimes(t *testing.T, b *eventstest.Bundle, queue string) []time.Time {
	t.Helper()
	recs, _, err := b.Store.Load(context.Background(), events.StreamQueue, "trellis.queue."+queue+".*.claimed")
	if err != nil {
		t.Fatal(err)
	}
	var out []time.Time
	for _, r := range recs {
		out = append(out, r.Time)
	}
	return out
}

// A rate caps claims for every claimant: from the log, claims of a 5/s rate
// with a burst of 1 are at least 200 ms apart, though two processes claim
// as fast as they can.
func TestRateLimit(t *testing.T) {
	t.Parallel()
	q, b := setupQueue(t)
	ctx := ctxT(t)
	if _, err := q.SetRate(ctx, "r", "ops", "0/s", 0); trellis.AsError(err).Field != "rate" {
		t.Fatalf("rate 0: %v; want invalid naming rate", err)
	}
	c, err := q.SetRate(ctx, "r", "ops", "5/s", 1)
	if err != nil || c.RatePerSecond != 5 || c.Burst != 1 || c.Rate != "5/s" {
		t.Fatalf("controls = %+v, %v", c, err)
	}
	for i := 0; i < 6; i++ {
		if _, err := q.Add(ctx, trellis.AddTaskRequest{Queue: "r", Objective: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
	}
	other := taskqueue.New(b.Store, taskqueue.Config{})
	var wg sync.WaitGroup
	for _, h := range []*taskqueue.Handler{q, other} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for len(claimTimes(t, b, "r")) < 6 {
				if _, err := h.Next(ctx, trellis.NextRequest{Queue: "r", Worker: "w"}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	times := claimTimes(t, b, "r")
	for i := 1; i < len(times); i++ {
		if gap := times[i].Sub(times[i-1]); gap < 200*time.Millisecond {
			t.Fatalf("claims %d and %d are %s apart; a 5/s rate without burst needs 200ms", i-1, i, gap)
		}
	}
	if c, err := q.SetRate(ctx, "r", "ops", "off", 0); err != nil || c.RatePerSecond != 0 || c.Rate != "" {
		t.Fatalf("rate off = %+v, %v", c, err)
	}
}

// A per-key limit of 1 runs one task per key at a time: the second task of
// a busy key waits (other keys go ahead) and is claimed once the first is
// done.
func TestPerKeyLimit(t *testing.T) {
	t.Parallel()
	q, _ := setupQueue(t)
	ctx := ctxT(t)
	if _, err := q.SetPerKey(ctx, "k", "ops", -1); trellis.AsError(err).Field != "per_key" {
		t.Fatalf("per_key -1: %v", err)
	}
	if _, err := q.SetPerKey(ctx, "k", "ops", 1); err != nil {
		t.Fatal(err)
	}
	a1, _ := q.Add(ctx, trellis.AddTaskRequest{Queue: "k", Objective: "a1", ConcurrencyKey: "repo-a"})
	a2, _ := q.Add(ctx, trellis.AddTaskRequest{Queue: "k", Objective: "a2", ConcurrencyKey: "repo-a"})
	b1, _ := q.Add(ctx, trellis.AddTaskRequest{Queue: "k", Objective: "b1", ConcurrencyKey: "repo-b"})
	first := nextUntil(t, q, "k", "w1", 5*time.Second)
	second := nextUntil(t, q, "k", "w2", 5*time.Second)
	if first.TaskID != a1.TaskID || second.TaskID != b1.TaskID {
		t.Fatalf("claimed %s then %s; want a1 then b1 (a2 waits for repo-a)", first.Objective, second.Objective)
	}
	if got := show(t, q, a2.TaskID); got.Status != trellis.StatusQueued {
		t.Fatalf("a2 = %s", got.Status)
	}
	if _, err := q.Done(ctx, trellis.DoneRequest{TaskID: a1.TaskID, Worker: "w1", WhatWasDone: "x"}); err != nil {
		t.Fatal(err)
	}
	third := nextUntil(t, q, "k", "w1", 15*time.Second)
	if third == nil || third.TaskID != a2.TaskID {
		t.Fatalf("after a1 finished claimed %+v; want a2", third)
	}
}

// The global limit holds across priority lanes: with a limit of 1, a
// leased claim from one lane leaves nothing to claim on another.
func TestLimitAcrossLanes(t *testing.T) {
	t.Parallel()
	q, _ := setupQueue(t)
	ctx := ctxT(t)
	if _, err := q.SetLimit(ctx, "l", "ops", 1); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Add(ctx, trellis.AddTaskRequest{Queue: "l", Objective: "urgent", Priority: 1}); err != nil {
		t.Fatal(err)
	}
	low, err := q.Add(ctx, trellis.AddTaskRequest{Queue: "l", Objective: "later", Priority: 4})
	if err != nil {
		t.Fatal(err)
	}
	lanes, err := q.Lanes(ctx, "l")
	if err != nil {
		t.Fatal(err)
	}
	first := claimLeased(t, q, lanes[0], "p1")
	if first.Objective != "urgent" {
		t.Fatalf("claimed %s", first.Objective)
	}
	// The p4 lane hands its dispatch out (its own in-flight count is 0),
	// but the queue's gate refuses the claim.
	batch, err := lanes[3].Fetch(1, jetstream.FetchMaxWait(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for msg := range batch.Messages() {
		got, err := q.ClaimDispatched(ctx, msg, "p4", true)
		if err != nil || got != nil {
			t.Fatalf("claim over the limit = %+v, %v; want refused", got, err)
		}
	}
	if got := show(t, q, low.TaskID); got.Status != trellis.StatusQueued {
		t.Fatalf("low-priority task = %s; want still queued", got.Status)
	}
	if _, err := q.Done(ctx, trellis.DoneRequest{TaskID: first.TaskID, Worker: "p1", WhatWasDone: "x"}); err != nil {
		t.Fatal(err)
	}
	if second := claimLeased(t, q, lanes[3], "p4"); second.TaskID != low.TaskID {
		t.Fatalf("after the first finished claimed %s", second.TaskID)
	}
}
