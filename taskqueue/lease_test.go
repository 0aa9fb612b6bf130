package taskqueue_test

import (
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/taskqueue"
)

// The queue's lease is an event. While no claim is held a new lease
// reaches the claim consumer at once; while claims are held a shorter one
// is recorded first (pools heartbeat for it) and reaches the consumer only
// from its switch time on.
func TestSetLease(t *testing.T) {
	t.Parallel()
	q, _ := setupQueue(t)
	ctx := ctxT(t)
	for _, bad := range []time.Duration{0, 500 * time.Millisecond, 25 * time.Hour} {
		if _, err := q.SetLease(ctx, "lq", "op", bad); trellis.ErrorCode(err) != trellis.CodeInvalid {
			t.Fatalf("lease %s: %v; want invalid", bad, err)
		}
	}
	if _, err := q.SetLease(ctx, "bad queue", "op", time.Minute); trellis.ErrorCode(err) != trellis.CodeInvalid {
		t.Fatalf("bad queue name: %v; want invalid", err)
	}
	ackWait := func() time.Duration {
		t.Helper()
		c, err := q.Consumer(ctx, "lq")
		if err != nil {
			t.Fatal(err)
		}
		info, err := c.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return info.Config.AckWait
	}
	c, err := q.SetLease(ctx, "lq", "op", time.Minute)
	if err != nil || c.LeaseSeconds != 60 || c.LeaseFrom != nil || ackWait() != time.Minute {
		t.Fatalf("lengthen: %+v, %v, ack wait %s", c, err, ackWait())
	}
	if c, err = q.SetLease(ctx, "lq", "op", 10*time.Second); err != nil || c.LeaseFrom != nil || ackWait() != 10*time.Second {
		t.Fatalf("shorten with no claim held: %+v, %v, ack wait %s", c, err, ackWait())
	}
	// Hold a leased claim, then shorten: the consumer keeps 10 s until the
	// switch time.
	if _, err := q.Add(ctx, trellis.AddTaskRequest{Queue: "lq", Objective: "held"}); err != nil {
		t.Fatal(err)
	}
	cons, err := q.Consumer(ctx, "lq")
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(1)
	if err != nil {
		t.Fatal(err)
	}
	for msg := range batch.Messages() {
		if task, err := q.ClaimDispatched(ctx, msg, "w", true); err != nil || task == nil {
			t.Fatalf("claim: %+v, %v", task, err)
		}
	}
	done := make(chan error, 1)
	start := time.Now()
	go func() { _, err := q.SetLease(ctx, "lq", "op", 2*time.Second); done <- err }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctl, _, err := q.Controls(ctx, "lq")
		if err != nil {
			t.Fatal(err)
		}
		if ctl.LeaseFrom != nil {
			if ctl.HeartbeatLease() != 2*time.Second || ctl.Lease(time.Now()) != 10*time.Second || ackWait() != 10*time.Second {
				t.Fatalf("during the switch: %+v, ack wait %s; want pools told 2s while the consumer keeps 10s", ctl, ackWait())
			}
			if !ctl.LeaseFrom.After(start.Add(2 * taskqueue.LeaseWatchEvery)) {
				t.Fatalf("switch at %s, only %s after the call; want at least two lease readings", ctl.LeaseFrom, ctl.LeaseFrom.Sub(start))
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the shorter lease was never recorded")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if ackWait() != 2*time.Second {
		t.Fatalf("after the switch the consumer holds %s; want 2s", ackWait())
	}
}
