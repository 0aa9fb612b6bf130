package workers_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/taskqueue"
	"github.com/trellis/trellis/workers"
)

// historyTypes returns a task's event types as the log holds them.
func historyTypes(recs []events.Recorded) string {
	var types []string
	for _, r := range recs {
		types = append(types, r.Type)
	}
	return strings.Join(types, ",")
}

// ackPending waits until the queue's lanes hold no unacknowledged
// dispatch, and fails when one stays pending.
func (b *bundle) waitNoAckPending(t *testing.T, queue string) {
	t.Helper()
	ctx := context.Background()
	lanes, err := b.q.Lanes(ctx, queue)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		pending := 0
		for _, lane := range lanes {
			info, err := lane.Info(ctx)
			if err != nil {
				t.Fatal(err)
			}
			pending += info.NumAckPending
		}
		if pending == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d dispatches of queue %s still unacknowledged", pending, queue)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestPoolRecordsAQuickTaskWithOneEvent: a task whose handler ends within
// the claim window is recorded with one event, its completion carrying the
// claim (worker, attempt, when); the folded task is what an eager claim
// would have made, its history reads added, claimed, completed, and every
// dispatch is acknowledged.
func TestPoolRecordsAQuickTaskWithOneEvent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ids := b.add(t, "quick", 20, 3)
	stop := runPool(t, b, workers.HandlerFunc(func(context.Context, *trellis.Task, *workers.Progress) (*trellis.Checkpoint, error) {
		return &trellis.Checkpoint{WhatWasDone: "ok"}, nil
	}), workers.Config{Queue: "quick", Worker: "pool", Concurrency: 4, ClaimWindow: 5 * time.Second})
	done := b.waitStatus(t, ids, 20*time.Second, trellis.StatusDone)
	stop()
	ctx := context.Background()
	for _, id := range ids {
		recs, err := b.q.History(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if h := historyTypes(recs); h != "added,completed" {
			t.Fatalf("task %s: history %s; want added,completed (one event for claim and outcome)", id, h)
		}
		c, ok := taskqueue.ClaimOf(recs[1])
		if !ok || !strings.HasPrefix(c.Worker, "pool/") || c.Attempt != 1 || !c.Leased || c.At == nil || c.At.After(recs[1].Time) || c.Delivery != 1 {
			t.Fatalf("task %s: carried claim %+v (completion at %s)", id, c, recs[1].Time)
		}
		task := done[id]
		if task.Attempts != 1 || task.ClaimedBy != c.Worker || task.ClaimedAt == nil || !task.ClaimedAt.Equal(*c.At) {
			t.Fatalf("task %s folded as %+v; want attempt 1 claimed by %s at %s", id, task, c.Worker, c.At)
		}
		if h := historyTypes(taskqueue.ExpandClaims(recs)); h != "added,claimed,completed" {
			t.Fatalf("task %s: steps %s", id, h)
		}
	}
	b.waitNoAckPending(t, "quick")
}

// TestPoolRecordsTheClaimOfASlowTaskAfterItsWindow: a handler still
// running when the claim window passes has its claim recorded on its own
// (dated when it was made), while it runs; the completion then carries
// none.
func TestPoolRecordsTheClaimOfASlowTaskAfterItsWindow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ids := b.add(t, "slow", 1, 3)
	const window = 150 * time.Millisecond
	var sawClaim atomic.Bool
	stop := runPool(t, b, workers.HandlerFunc(func(ctx context.Context, task *trellis.Task, _ *workers.Progress) (*trellis.Checkpoint, error) {
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			recs, err := b.q.History(ctx, task.TaskID)
			if err == nil && historyTypes(recs) == "added,claimed" {
				sawClaim.Store(true)
				break
			}
		}
		return &trellis.Checkpoint{WhatWasDone: "ok"}, nil
	}), workers.Config{Queue: "slow", Worker: "pool", ClaimWindow: window})
	b.waitStatus(t, ids, 20*time.Second, trellis.StatusDone)
	stop()
	if !sawClaim.Load() {
		t.Fatal("the claim was not on the log while the handler ran past the window")
	}
	recs, err := b.q.History(context.Background(), ids[0])
	if err != nil {
		t.Fatal(err)
	}
	if h := historyTypes(recs); h != "added,claimed,completed" {
		t.Fatalf("history %s", h)
	}
	var c taskqueue.ClaimedPayload
	if err := recs[1].DecodePayload(&c); err != nil || c.At == nil || recs[1].Time.Sub(*c.At) < window*2/3 {
		t.Fatalf("claim %+v recorded at %s; want it dated when it was made, a window earlier", c, recs[1].Time)
	}
	if _, ok := taskqueue.ClaimOf(recs[2]); ok {
		t.Fatal("the completion carries the claim recorded before it")
	}
}

// TestPoolClaimsAtOnceWhatItMayNotHold: a task that may be attempted only
// once is claimed on the log before its handler starts (a pool dying
// inside a window must not let it run twice), as are tasks of a queue
// with a rate limit (its gate counts claims).
func TestPoolClaimsAtOnceWhatItMayNotHold(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	once := b.add(t, "once", 2, 1)
	if _, err := b.q.SetRate(ctx, "gated", "ops", "100/s", 0); err != nil {
		t.Fatal(err)
	}
	gated := b.add(t, "gated", 2, 3)
	for _, c := range []struct {
		queue string
		ids   []string
	}{{"once", once}, {"gated", gated}} {
		var unclaimed atomic.Int32
		stop := runPool(t, b, workers.HandlerFunc(func(ctx context.Context, task *trellis.Task, _ *workers.Progress) (*trellis.Checkpoint, error) {
			recs, err := b.q.History(ctx, task.TaskID)
			if err != nil || historyTypes(recs) != "added,claimed" {
				unclaimed.Add(1)
			}
			return &trellis.Checkpoint{WhatWasDone: "ok"}, nil
		}), workers.Config{Queue: c.queue, Worker: "pool", ClaimWindow: 5 * time.Second})
		b.waitStatus(t, c.ids, 20*time.Second, trellis.StatusDone)
		stop()
		if n := unclaimed.Load(); n > 0 {
			t.Fatalf("queue %s: %d handlers started before their claim was on the log", c.queue, n)
		}
	}
}

// TestPoolDropsAHeldTaskCancelledBeforeItsClaim: a task cancelled while a
// pool holds it unrecorded is cancelled at once (it is queued on the
// log); the handler's outcome is dropped, not recorded over the
// cancellation, and the dispatch is acknowledged rather than left to come
// back.
func TestPoolDropsAHeldTaskCancelledBeforeItsClaim(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	ids := b.add(t, "dropped", 1, 3)
	started, finish := make(chan struct{}), make(chan struct{})
	var runs atomic.Int32
	stop := runPool(t, b, workers.HandlerFunc(func(context.Context, *trellis.Task, *workers.Progress) (*trellis.Checkpoint, error) {
		if runs.Add(1) == 1 {
			close(started)
		}
		<-finish
		return &trellis.Checkpoint{WhatWasDone: "ok"}, nil
	}), workers.Config{Queue: "dropped", Worker: "pool", Lease: 60 * time.Second, ClaimWindow: 10 * time.Second})
	defer stop()
	<-started
	cancelled, err := b.q.Cancel(ctx, trellis.CancelRequest{TaskID: ids[0], Reason: "not needed", Actor: "ops"})
	if err != nil || cancelled.Status != trellis.StatusCancelled {
		t.Fatalf("cancel = %+v, %v; want cancelled at once (the claim is not on the log)", cancelled, err)
	}
	close(finish)
	b.waitNoAckPending(t, "dropped")
	recs, err := b.q.History(ctx, ids[0])
	if err != nil {
		t.Fatal(err)
	}
	if h := historyTypes(recs); h != "added,cancelled" {
		t.Fatalf("history %s; want added,cancelled", h)
	}
	if n := runs.Load(); n != 1 {
		t.Fatalf("the handler ran %d times", n)
	}
}

// TestPoolDrainReleasesAHeldTask: a draining pool that stops a handler
// inside the claim window records the claim and then the release, so the
// task is queued again with its attempt given back.
func TestPoolDrainReleasesAHeldTask(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ids := b.add(t, "drainheld", 1, 3)
	started := make(chan struct{})
	stop := runPool(t, b, workers.HandlerFunc(func(ctx context.Context, _ *trellis.Task, _ *workers.Progress) (*trellis.Checkpoint, error) {
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	}), workers.Config{Queue: "drainheld", Worker: "pool", Grace: 50 * time.Millisecond, Lease: 60 * time.Second, ClaimWindow: 10 * time.Second})
	<-started
	stop()
	got := b.waitStatus(t, ids, 10*time.Second, trellis.StatusQueued)[ids[0]]
	recs, err := b.q.History(context.Background(), ids[0])
	if err != nil {
		t.Fatal(err)
	}
	if h := historyTypes(recs); h != "added,claimed,released" || got.Attempts != 0 {
		t.Fatalf("history %s, attempts %d; want added,claimed,released and 0", h, got.Attempts)
	}
}

// TestHoldIsRefusedForAnotherTaskOrWorker: an outcome recorded through a
// hold must name the hold's task and worker.
func TestHoldIsRefusedForAnotherTaskOrWorker(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	ids := b.add(t, "holds", 2, 3)
	lanes, err := b.q.Lanes(ctx, "holds")
	if err != nil {
		t.Fatal(err)
	}
	var msg jetstream.Msg
	for deadline := time.Now().Add(10 * time.Second); msg == nil && time.Now().Before(deadline); {
		for _, lane := range lanes {
			batch, err := lane.FetchNoWait(1)
			if err != nil {
				t.Fatal(err)
			}
			for m := range batch.Messages() {
				msg = m
			}
			if msg != nil {
				break
			}
		}
	}
	if msg == nil {
		t.Fatal("no dispatch")
	}
	h, err := b.q.HoldDispatched(ctx, msg, "w/0")
	if err != nil || h == nil || h.Recorded() {
		t.Fatalf("hold = %+v, %v; want an unrecorded hold", h, err)
	}
	other := ids[0]
	if other == h.Task.TaskID {
		other = ids[1]
	}
	for _, req := range []trellis.DoneRequest{{TaskID: other, Worker: "w/0", WhatWasDone: "x"}, {TaskID: h.Task.TaskID, Worker: "w/1", WhatWasDone: "x"}} {
		if _, err := b.q.DoneHeld(ctx, h, req); trellis.ErrorCode(err) != trellis.CodeConflict {
			t.Fatalf("DoneHeld(%s by %s) = %v; want a conflict", req.TaskID, req.Worker, err)
		}
	}
	task, err := b.q.DoneHeld(ctx, h, trellis.DoneRequest{TaskID: h.Task.TaskID, Worker: "w/0", WhatWasDone: "x"})
	if err != nil || task.Status != trellis.StatusDone || !h.Recorded() {
		t.Fatalf("DoneHeld = %+v, %v", task, err)
	}
	// Recorded once: a second finish through the hold is the usual
	// repeated finish, not a second claim.
	if _, err := b.q.DoneHeld(ctx, h, trellis.DoneRequest{TaskID: h.Task.TaskID, Worker: "w/0", WhatWasDone: "x"}); err != nil {
		t.Fatalf("repeated DoneHeld = %v", err)
	}
	recs, err := b.q.History(ctx, h.Task.TaskID)
	if err != nil || historyTypes(recs) != "added,completed" {
		t.Fatalf("history %s, %v", historyTypes(recs), err)
	}
	_ = msg.Ack()
}

// TestPoolsShareDispatchesFetchedAhead: a pool fetches dispatches ahead of
// its free slots, but gives back what its slow handlers could not start
// within a quarter of the lease, so a second pool runs them: every task
// runs exactly once, none waits out its lease in a buffer (no
// lease_expired), and both pools work.
func TestPoolsShareDispatchesFetchedAhead(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ids := b.add(t, "shared", 12, 3)
	var mu sync.Mutex
	runs := map[string]int{}
	byPool := map[string]int{}
	h := workers.HandlerFunc(func(_ context.Context, task *trellis.Task, _ *workers.Progress) (*trellis.Checkpoint, error) {
		mu.Lock()
		runs[task.TaskID]++
		byPool[strings.SplitN(task.ClaimedBy, "/", 2)[0]]++
		mu.Unlock()
		time.Sleep(400 * time.Millisecond)
		return &trellis.Checkpoint{WhatWasDone: "ok"}, nil
	})
	stopA := runPool(t, b, h, workers.Config{Queue: "shared", Worker: "a", Lease: time.Second})
	time.Sleep(100 * time.Millisecond) // a fetches first, and ahead
	stopB := runPool(t, b, h, workers.Config{Queue: "shared", Worker: "b", Lease: time.Second})
	b.waitStatus(t, ids, 60*time.Second, trellis.StatusDone)
	stopA()
	stopB()
	mu.Lock()
	defer mu.Unlock()
	for _, id := range ids {
		if runs[id] != 1 {
			t.Errorf("task %s ran %d times", id, runs[id])
		}
	}
	if byPool["a"] == 0 || byPool["b"] == 0 {
		t.Errorf("runs by pool %v; want both pools to work", byPool)
	}
	if n := len(b.countEvents(t, taskqueue.LeaseExpired)); n != 0 {
		t.Errorf("%d tasks had their lease expire", n)
	}
}

// TestHeldClaimFoundOnTheLogIsItsOwn: a held claim whose write the pool
// gave up on but that was stored later (here: the same claim, recorded
// through a second hold of the same delivery) is the pool's own: its
// outcome is recorded after it (not refused as "task changed"), and
// RecordHold takes it as recorded. An outcome carrying the claim that was
// stored by an attempt given up on is found again by the next attempt.
func TestHeldClaimFoundOnTheLogIsItsOwn(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.add(t, "own", 3, 3)
	lanes, err := b.q.Lanes(ctx, "own")
	if err != nil {
		t.Fatal(err)
	}
	fetch := func() jetstream.Msg {
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
			for _, lane := range lanes {
				batch, err := lane.FetchNoWait(1)
				if err != nil {
					t.Fatal(err)
				}
				for m := range batch.Messages() {
					return m
				}
			}
		}
		t.Fatal("no dispatch")
		return nil
	}
	hold := func(msg jetstream.Msg) *taskqueue.Hold {
		h, err := b.q.HoldDispatched(ctx, msg, "w/0")
		if err != nil || h == nil || h.Recorded() {
			t.Fatalf("hold = %+v, %v; want an unrecorded hold", h, err)
		}
		return h
	}

	// The claim is stored late.
	msg := fetch()
	h, late := hold(msg), hold(msg)
	if err := b.q.RecordHold(ctx, late); err != nil {
		t.Fatal(err)
	}
	task, err := b.q.DoneHeld(ctx, h, trellis.DoneRequest{TaskID: h.Task.TaskID, Worker: "w/0", WhatWasDone: "x"})
	if err != nil || task.Status != trellis.StatusDone || !h.Recorded() {
		t.Fatalf("DoneHeld after the claim was stored late = %+v, %v; want done", task, err)
	}
	recs, err := b.q.History(ctx, h.Task.TaskID)
	if err != nil || historyTypes(recs) != "added,claimed,completed" {
		t.Fatalf("history %s, %v; want added,claimed,completed", historyTypes(recs), err)
	}
	_ = msg.Ack()

	// RecordHold finds its own claim too.
	msg = fetch()
	h, late = hold(msg), hold(msg)
	if err := b.q.RecordHold(ctx, late); err != nil {
		t.Fatal(err)
	}
	if err := b.q.RecordHold(ctx, h); err != nil || !h.Recorded() {
		t.Fatalf("RecordHold of a claim already on the log = %v (recorded %v); want it taken as recorded", err, h.Recorded())
	}
	_ = msg.Ack()

	// The outcome carrying the claim is stored late: the next attempt
	// finds it.
	msg = fetch()
	h, late = hold(msg), hold(msg)
	req := trellis.FailRequest{TaskID: h.Task.TaskID, Worker: "w/0", Error: "boom", Retry: true}
	if _, err := b.q.FailHeld(ctx, late, req); err != nil {
		t.Fatal(err)
	}
	if task, err := b.q.FailHeld(ctx, h, req); err != nil || task.Status != trellis.StatusQueued {
		t.Fatalf("FailHeld after its outcome was stored = %+v, %v; want the recorded outcome", task, err)
	}
	recs, err = b.q.History(ctx, h.Task.TaskID)
	if err != nil || historyTypes(recs) != "added,attempt_failed" {
		t.Fatalf("history %s, %v; want added,attempt_failed (one event, carrying the claim)", historyTypes(recs), err)
	}
	_ = msg.Ack()
}

// TestStaleDeliveryLeavesTheCurrentHoldersLease: a delivery of a dispatch
// handled after a later delivery of it was claimed (a pool that stalled
// past the lease with it in hand) is left alone: JetStream acknowledges by
// stream sequence, so acknowledging it would end the lease of the pool
// that holds the later delivery.
func TestStaleDeliveryLeavesTheCurrentHoldersLease(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	if _, err := b.q.EnsureConsumer(ctx, "stale", time.Second); err != nil {
		t.Fatal(err)
	}
	b.add(t, "stale", 1, 3)
	lanes, err := b.q.Lanes(ctx, "stale")
	if err != nil {
		t.Fatal(err)
	}
	fetch := func() jetstream.Msg {
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
			for _, lane := range lanes {
				batch, err := lane.Fetch(1, jetstream.FetchMaxWait(500*time.Millisecond))
				if err != nil {
					t.Fatal(err)
				}
				for m := range batch.Messages() {
					return m
				}
			}
		}
		t.Fatal("no dispatch")
		return nil
	}
	first := fetch()  // held by a pool that stalls past the lease
	second := fetch() // redelivered after the lease to another pool
	if m1, m2 := mustMeta(t, first), mustMeta(t, second); m1.Sequence.Stream != m2.Sequence.Stream || m2.NumDelivered <= m1.NumDelivered {
		t.Fatalf("deliveries %+v then %+v; want the same dispatch delivered again", m1, m2)
	}
	task, err := b.q.ClaimDispatched(ctx, second, "w/1", true)
	if err != nil || task == nil {
		t.Fatalf("claim of the later delivery = %+v, %v", task, err)
	}
	if task, err := b.q.ClaimDispatched(ctx, first, "w/0", true); err != nil || task != nil {
		t.Fatalf("claim of the stale delivery = %+v, %v; want nothing", task, err)
	}
	// The later delivery is still pending (its holder's lease), so it is
	// redelivered if its holder stops heartbeating.
	info, err := lanes[0].Info(ctx)
	for _, lane := range lanes[1:] {
		if i, err2 := lane.Info(ctx); err2 == nil && i.NumAckPending > 0 {
			info, err = i, nil
		}
	}
	if err != nil || info.NumAckPending != 1 {
		t.Fatalf("pending dispatches %d, %v; want 1: the stale delivery's acknowledgement ended the holder's lease", info.NumAckPending, err)
	}
	_ = second.Ack()
}

func mustMeta(t *testing.T, m jetstream.Msg) *jetstream.MsgMetadata {
	t.Helper()
	meta, err := m.Metadata()
	if err != nil {
		t.Fatal(err)
	}
	return meta
}
