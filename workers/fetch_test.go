package workers_test

import (
	"context"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/taskqueue"
	"github.com/trellis/trellis/workers"
)

// TestFetchBacksOffWhileItsConsumersDoNotAnswer: while the claim
// consumers of a pool's lanes do not answer (as during their elections:
// no leader, so no responder), the pool's pulls fail at once. It must
// back off (at most maxFetchBackoff between two pulls of a lane) instead
// of sending them again in a loop — the pool took a failed pull for an
// empty lane and pulled again at once, hundreds of requests a second
// per lane — and take tasks again once the consumers answer.
func TestFetchBacksOffWhileItsConsumersDoNotAnswer(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const queue = "backoff"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ok := workers.HandlerFunc(func(context.Context, *trellis.Task, *workers.Progress) (*trellis.Checkpoint, error) {
		return &trellis.Checkpoint{WhatWasDone: "ok"}, nil
	})
	pool, err := workers.New(b.q, ok, workers.Config{Queue: queue, Concurrency: 2, FetchWait: 500 * time.Millisecond, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = pool.Run(ctx) }()
	defer func() { cancel(); <-done }()
	b.waitStatus(t, b.add(t, queue, 1, 0), 60*time.Second, trellis.StatusDone)

	js := b.Store.JetStream()
	for p := 1; p <= trellis.MaxPriority; p++ {
		if err := js.DeleteConsumer(ctx, events.StreamQueue, taskqueue.LaneName(queue, p)); err != nil {
			t.Fatal(err)
		}
	}
	inMsgs := func() int64 {
		v, err := b.Server.Varz(&natsserver.VarzOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return v.InMsgs
	}
	before := inMsgs()
	time.Sleep(3 * time.Second)
	// Backing off, four lanes send about 4 × 6 pulls in 3 s (100 ms
	// doubling to 1 s); the loop sent thousands.
	sent := inMsgs() - before
	t.Logf("%d messages sent in 3 s while no lane's consumer answered", sent)
	if sent > 300 {
		t.Fatalf("%d messages sent to the server in 3 s while no lane's consumer answered: the pool does not back off", sent)
	}

	// The consumers back (made by another process's claim path): the
	// pool takes tasks again.
	if _, err := taskqueue.New(b.Store, taskqueue.Config{}).Lanes(ctx, queue); err != nil {
		t.Fatal(err)
	}
	b.waitStatus(t, b.add(t, queue, 3, 0), 60*time.Second, trellis.StatusDone)
}
