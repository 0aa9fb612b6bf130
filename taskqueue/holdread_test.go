package taskqueue_test

import (
	"encoding/json"
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

// TestHoldsReadTogetherWhatTheirDispatchesCannotTell: a worker process
// (a handler that never saw the tasks) holds many dispatches at once,
// which read the tasks' last events together. Of tasks whose dispatches
// it fetched before they changed, none is held: a task cancelled while
// its dispatch sat in the pool's buffer, a task cancelled and then pruned
// (its events removed from the log: its dispatch reads as nothing after
// the add, and only folding from the first event finds it gone), a task
// claimed by another worker meanwhile. The tasks nothing happened to are
// held unrecorded, and their outcomes carry their claims.
func TestHoldsReadTogetherWhatTheirDispatchesCannotTell(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	ctx := ctxT(t)
	adder := taskqueue.New(b.Store, taskqueue.Config{})
	worker := workerProcess(t, b)

	const queue, n = "heldread", 40
	var ids []string
	for i := 0; i < n; i++ {
		task, err := adder.Add(ctx, trellis.AddTaskRequest{Queue: queue, Objective: fmt.Sprintf("task %d", i), MaxAttempts: 3})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, task.TaskID)
	}
	// The pool fetches every dispatch ahead of its slots.
	lanes, err := worker.Lanes(ctx, queue)
	if err != nil {
		t.Fatal(err)
	}
	msgs := map[string]jetstream.Msg{}
	for deadline := time.Now().Add(60 * time.Second); len(msgs) < n; {
		if time.Now().After(deadline) {
			t.Fatalf("fetched %d dispatches of %d", len(msgs), n)
		}
		for _, lane := range lanes {
			batch, err := lane.Fetch(n, jetstream.FetchMaxWait(200*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			for m := range batch.Messages() {
				msgs[strings.Split(m.Subject(), ".")[3]] = m
			}
		}
	}
	// Meanwhile, elsewhere: cancels, a prune, a claim by another worker.
	cancelled, pruned, claimed, untouched := map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}
	stream, err := b.Store.JetStream().Stream(ctx, events.StreamQueue)
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		switch i % 4 {
		case 0:
			cancelled[id] = true
		case 1:
			pruned[id] = true
		case 2:
			claimed[id] = true
			continue
		default:
			untouched[id] = true
			continue
		}
		if _, err := adder.Cancel(ctx, trellis.CancelRequest{TaskID: id, Reason: "not needed"}); err != nil {
			t.Fatal(err)
		}
		if !pruned[id] {
			continue
		}
		recs, _, err := b.Store.Load(ctx, events.StreamQueue, taskqueue.Filter(id))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if err := stream.DeleteMsg(ctx, r.Seq); err != nil {
				t.Fatal(err)
			}
		}
	}
	for id := range claimed {
		// Another process's claim of the same dispatch, recorded (one
		// that stalled and whose write was stored late, say): the
		// dispatch's delivery cannot tell.
		recs, last, err := b.Store.Load(ctx, events.StreamQueue, taskqueue.Filter(id))
		if err != nil || len(recs) != 1 {
			t.Fatalf("load %s: %d events, %v", id, len(recs), err)
		}
		at := time.Now().UTC()
		payload, err := json.Marshal(taskqueue.ClaimedPayload{Worker: "other/0", Attempt: 1, Leased: true, DispatchSeq: last, Delivery: 1, At: &at})
		if err != nil {
			t.Fatal(err)
		}
		env := events.Envelope{ID: events.NewID(at), Type: taskqueue.Claimed, AggregateID: id, Actor: "other/0", Time: at,
			Schema: taskqueue.Schema, Payload: payload, Prev: events.Hash(recs[0].Envelope)}
		if _, err := b.Store.Append(ctx, taskqueue.Subject(queue, id, taskqueue.Claimed), env, events.Expect{Filter: taskqueue.FilterIn(queue, id), LastSeq: last}, ""); err != nil {
			t.Fatal(err)
		}
	}
	// The stream's last message is another task's (a prune keeps the
	// stream's last message).
	if _, err := adder.Add(ctx, trellis.AddTaskRequest{Queue: "elsewhere", Objective: "last"}); err != nil {
		t.Fatal(err)
	}

	holds := map[string]*taskqueue.Hold{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for id, m := range msgs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h, err := worker.HoldDispatched(ctx, m, "pool/"+id)
			if err != nil && trellis.ErrorCode(err) != trellis.CodeNotFound {
				t.Errorf("hold %s: %v", id, err)
			}
			if h != nil {
				mu.Lock()
				holds[id] = h
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for _, id := range ids {
		h := holds[id]
		switch {
		case untouched[id] && (h == nil || h.Recorded()):
			t.Errorf("untouched task %s: hold %+v; want an unrecorded hold", id, h)
		case cancelled[id] && h != nil:
			t.Errorf("task %s cancelled while its dispatch waited would run", id)
		case pruned[id] && h != nil:
			t.Errorf("task %s pruned while its dispatch waited would run", id)
		case claimed[id] && h != nil:
			t.Errorf("task %s claimed by another worker would run again", id)
		}
	}
	for id, h := range holds {
		if _, err := worker.DoneHeld(ctx, h, trellis.DoneRequest{TaskID: id, Worker: "pool/" + id, WhatWasDone: "ran"}); err != nil {
			t.Fatalf("done %s: %v", id, err)
		}
		recs, err := adder.History(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		var types []string
		for _, r := range recs {
			types = append(types, r.Type)
		}
		if h := strings.Join(types, ","); h != "added,completed" {
			t.Errorf("task %s: history %s; want added,completed (its claim carried)", id, h)
		}
	}
	for id := range cancelled {
		task, err := adder.Show(ctx, id)
		if err != nil || task.Status != trellis.StatusCancelled || task.Attempts != 0 {
			t.Errorf("cancelled task %s: %+v, %v", id, task, err)
		}
	}
}

// TestHoldReadAgainWhenItsReadIsStale: a worker process reads a dispatch
// ahead of its hold (a pool reads what it fetched before a slot is free),
// then the task is cancelled. A hold that takes that read as fresh would
// run the cancelled task; HoldRead reads the log again when its read is
// older than fresh, finds the cancel, and holds nothing. A task nothing
// happened to is held on its read, with the read's time (the claim
// window counts from it).
func TestHoldReadAgainWhenItsReadIsStale(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	ctx := ctxT(t)
	adder := taskqueue.New(b.Store, taskqueue.Config{})
	worker := workerProcess(t, b)

	const queue = "readahead"
	doomed, err := adder.Add(ctx, trellis.AddTaskRequest{Queue: queue, Objective: "cancelled after its read", MaxAttempts: 3})
	if err != nil {
		t.Fatal(err)
	}
	kept, err := adder.Add(ctx, trellis.AddTaskRequest{Queue: queue, Objective: "untouched", MaxAttempts: 3})
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	reads := readAhead(t, worker, queue, 2)
	if _, err := adder.Cancel(ctx, trellis.CancelRequest{TaskID: doomed.TaskID, Reason: "not needed"}); err != nil {
		t.Fatal(err)
	}
	// Taken as fresh, the read would hold the cancelled task: what the
	// re-read prevents. (Not run: the hold is only checked.)
	time.Sleep(5 * time.Millisecond)
	h, err := worker.HoldRead(ctx, reads[doomed.TaskID], "pool/0", time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if h != nil {
		t.Fatalf("task %s cancelled after its read is held: %+v", doomed.TaskID, h.Task)
	}
	if task, err := adder.Show(ctx, doomed.TaskID); err != nil || task.Status != trellis.StatusCancelled || task.Attempts != 0 {
		t.Fatalf("cancelled task: %+v, %v", task, err)
	}

	h, err = worker.HoldRead(ctx, reads[kept.TaskID], "pool/1", time.Hour)
	if err != nil || h == nil || h.Recorded() {
		t.Fatalf("untouched task: hold %+v, %v; want an unrecorded hold", h, err)
	}
	if h.ReadAt.Before(before) || h.ReadAt.After(time.Now()) {
		t.Errorf("hold read at %v; want the time of its read, after %v", h.ReadAt, before)
	}
	if _, err := worker.DoneHeld(ctx, h, trellis.DoneRequest{TaskID: kept.TaskID, Worker: "pool/1", WhatWasDone: "ran"}); err != nil {
		t.Fatal(err)
	}
	if task, err := adder.Show(ctx, kept.TaskID); err != nil || task.Status != trellis.StatusDone || task.Attempts != 1 {
		t.Fatalf("held task: %+v, %v", task, err)
	}
}

// TestHoldReadAfterALimitIsLiftedReadsTheLog: a worker process reads a
// dispatch while its queue has a limit (the task may not be held, so the
// log is not read then); the task is cancelled and the limit lifted
// before a slot takes it. Now the task may be held, so HoldRead must read
// it from the log first and find the cancel: deciding whether to read on
// the controls of the read ahead, and whether to hold on the new ones, it
// held the cancelled task straight from its dispatch (found in review).
func TestHoldReadAfterALimitIsLiftedReadsTheLog(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	ctx := ctxT(t)
	adder := taskqueue.New(b.Store, taskqueue.Config{})
	worker := workerProcess(t, b)
	const queue = "liftlimit"
	if _, err := adder.SetLimit(ctx, queue, "ops", 5); err != nil {
		t.Fatal(err)
	}
	doomed, err := adder.Add(ctx, trellis.AddTaskRequest{Queue: queue, Objective: "cancelled while read ahead", MaxAttempts: 3})
	if err != nil {
		t.Fatal(err)
	}
	r := readAhead(t, worker, queue, 1)[doomed.TaskID]
	if _, err := adder.Cancel(ctx, trellis.CancelRequest{TaskID: doomed.TaskID, Reason: "not needed"}); err != nil {
		t.Fatal(err)
	}
	if _, err := adder.SetLimit(ctx, queue, "ops", 0); err != nil { // returns once every claim honours it
		t.Fatal(err)
	}
	h, err := worker.HoldRead(ctx, r, "pool/0", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if h != nil {
		t.Fatalf("task cancelled while read ahead is held (recorded %v, status %s)", h.Recorded(), h.Task.Status)
	}
}

// readAhead fetches n dispatches of queue's default lane through worker
// and reads each ahead of its hold (ReadDispatch, as a pool does), by
// task id; none may be settled by its read.
func readAhead(t *testing.T, worker *taskqueue.Handler, queue string, n int) map[string]*taskqueue.DispatchRead {
	t.Helper()
	ctx := ctxT(t)
	lanes, err := worker.Lanes(ctx, queue)
	if err != nil {
		t.Fatal(err)
	}
	reads := map[string]*taskqueue.DispatchRead{}
	for deadline := time.Now().Add(60 * time.Second); len(reads) < n; {
		if time.Now().After(deadline) {
			t.Fatalf("fetched %d dispatches of %d", len(reads), n)
		}
		batch, err := lanes[trellis.DefaultPriority-1].Fetch(n-len(reads), jetstream.FetchMaxWait(200*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		for m := range batch.Messages() {
			r := worker.ReadDispatch(ctx, m)
			if r.Settled() {
				t.Fatalf("dispatch %s settled by its read", m.Subject())
			}
			reads[strings.Split(m.Subject(), ".")[3]] = r
		}
	}
	return reads
}
