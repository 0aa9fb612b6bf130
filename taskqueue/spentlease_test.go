package taskqueue_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/command"
	"github.com/trellis/trellis/taskqueue"
)

// A worker pool's claim recorded when its dispatch's lease is nearly
// spent (the store stalled between the fetch and the claim) would start a
// handler whose lease ends before its first heartbeat: the dispatch comes
// back, another worker takes the task over, and it runs twice. Such a
// claim is refused and the dispatch offered again at once: the next
// claimant runs the task, once, and nothing of the spent claim is on the
// log.
func TestClaimWithSpentLeaseDoesNotStart(t *testing.T) {
	t.Parallel()
	q, b := setupQueue(t)
	ctx := ctxT(t)
	const lease = 2 * time.Second
	if _, err := q.SetLease(ctx, "spent", "op", lease); err != nil {
		t.Fatal(err)
	}
	cons, err := q.Consumer(ctx, "spent")
	if err != nil {
		t.Fatal(err)
	}
	// The stall: the claiming process (its own cache: the dispatch is all
	// it knows of the task) loses its first append to an event of the
	// task it had not seen, and decides again only after three quarters
	// of the lease (a store that stalls).
	slow := taskqueue.New(b.Store, taskqueue.Config{Command: command.Config{
		Backoff: func(int) time.Duration { return lease * 3 / 4 },
	}})
	other := taskqueue.New(b.Store, taskqueue.Config{})
	for _, name := range []string{"first", "second"} {
		added, err := q.Add(ctx, trellis.AddTaskRequest{Queue: "spent", Objective: name})
		if err != nil {
			t.Fatal(err)
		}
		// A dependant: the task gets a linked event after its add.
		if _, err := q.Add(ctx, trellis.AddTaskRequest{Queue: "later", Objective: "after " + name, After: []string{added.TaskID}}); err != nil {
			t.Fatal(err)
		}
		batch, err := cons.Fetch(1, jetstream.FetchMaxWait(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		var msg jetstream.Msg
		for m := range batch.Messages() {
			msg = m
		}
		if msg == nil {
			t.Fatalf("%s: no dispatch", name)
		}
		task, err := slow.ClaimDispatched(ctx, msg, "slow", true)
		if err != nil || task != nil {
			t.Fatalf("%s: a claim with a quarter of its lease left started: %+v, %v", name, task, err)
		}
		// Offered again at once (not after the rest of the lease): the
		// next claimant runs it as its first attempt.
		var taken *trellis.Task
		deadline := time.Now().Add(30 * time.Second)
		for taken == nil && time.Now().Before(deadline) {
			batch, err := cons.Fetch(1, jetstream.FetchMaxWait(time.Second))
			if err != nil {
				t.Fatal(err)
			}
			for m := range batch.Messages() {
				if taken, err = other.ClaimDispatched(ctx, m, "next", true); err != nil {
					t.Fatal(err)
				}
			}
		}
		if taken == nil || taken.TaskID != added.TaskID || taken.ClaimedBy != "next" || taken.Attempts != 1 {
			t.Fatalf("%s: after the refusal: %+v; want the task claimed by next as attempt 1", name, taken)
		}
		if h := historyTypes(t, q, added.TaskID); h != "added linked claimed" {
			t.Fatalf("%s: history %q; want one claim", name, h)
		}
	}
}

// A claimant whose store stalled past the whole lease of its dispatch
// (its claim refused as spent) must not give the dispatch back: JetStream
// has delivered it again meanwhile, and another claimant holds that
// delivery; a nak, applied by stream sequence, would hand it to a third
// at once and cut the holder's lease short. Left alone, the dispatch stays
// the holder's (before the fix the nak made it available at once).
func TestClaimPastItsLeaseLeavesTheRedelivery(t *testing.T) {
	t.Parallel()
	q, b := setupQueue(t)
	ctx := ctxT(t)
	const lease = 2 * time.Second
	if _, err := q.SetLease(ctx, "passed", "op", lease); err != nil {
		t.Fatal(err)
	}
	cons, err := q.Consumer(ctx, "passed")
	if err != nil {
		t.Fatal(err)
	}
	// The stall: the first append loses to an event of the task the
	// claimant had not seen, and it decides again after 1.5 leases.
	slow := taskqueue.New(b.Store, taskqueue.Config{Command: command.Config{
		Backoff: func(int) time.Duration { return lease * 3 / 2 },
	}})
	added, err := q.Add(ctx, trellis.AddTaskRequest{Queue: "passed", Objective: "stalled"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Add(ctx, trellis.AddTaskRequest{Queue: "later", Objective: "after it", After: []string{added.TaskID}}); err != nil {
		t.Fatal(err)
	}
	fetch := func(wait time.Duration) jetstream.Msg {
		batch, err := cons.Fetch(1, jetstream.FetchMaxWait(wait))
		if err != nil {
			t.Fatal(err)
		}
		for m := range batch.Messages() {
			return m
		}
		return nil
	}
	first := fetch(10 * time.Second)
	if first == nil {
		t.Fatal("no dispatch")
	}
	// The redelivery after the lease: another claimant takes it and holds
	// it (heartbeating) while the stalled one decides.
	held := make(chan jetstream.Msg, 1)
	go func() { held <- fetch(30 * time.Second) }()
	task, err := slow.ClaimDispatched(ctx, first, "slow", true)
	if err != nil || task != nil {
		t.Fatalf("a claim decided past its lease started: %+v, %v", task, err)
	}
	second := <-held
	if second == nil {
		t.Fatal("the dispatch was not delivered again after its lease")
	}
	if meta, err := second.Metadata(); err != nil || meta.NumDelivered != 2 {
		t.Fatalf("the holder's delivery: %+v, %v; want the second", meta, err)
	}
	hbCtx, stopHB := context.WithCancel(ctx)
	defer stopHB()
	go func() {
		for hbCtx.Err() == nil {
			_ = second.InProgress()
			time.Sleep(lease / 4)
		}
	}()
	if m := fetch(lease); m != nil {
		meta, _ := m.Metadata()
		t.Fatalf("the dispatch another claimant holds was handed out again (delivery %d): the stalled claimant gave it back", meta.NumDelivered)
	}
}
