package features

import (
	"errors"
	"fmt"
	"time"

	"github.com/cucumber/godog"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trellis/trellis/taskqueue"
)

// workerSteps are the worker steps that reach below the public surface:
// the pools themselves are the steps package's.
func workerSteps(sc *godog.ScenarioContext, w *world) {
	sc.Step(`^worker "([^"]*)" claims it under a (\d+) seconds? lease and crashes without finishing$`, w.claimAndCrash)
}

// claimAndCrash claims the next dispatch with a lease, as a pool worker
// would, and then never heartbeats, finishes or acknowledges it: what the
// server sees of a worker killed mid-task (examples/crash_takeover.feature
// kills a real worker process).
func (w *world) claimAndCrash(worker string, secs int) error {
	task := w.sw.Task()
	if task == nil {
		return errors.New("no task")
	}
	q := taskqueue.New(w.srv().Store(), taskqueue.Config{})
	ctx, cancel := ctxT()
	defer cancel()
	cons, err := q.EnsureConsumer(ctx, task.Queue, time.Duration(secs)*time.Second)
	if err != nil {
		return err
	}
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		return err
	}
	for msg := range batch.Messages() {
		t, err := q.ClaimDispatched(ctx, msg, worker, true)
		if err != nil {
			return err
		}
		if t == nil || t.TaskID != task.TaskID {
			return fmt.Errorf("crashing worker claimed %v", t)
		}
		return nil
	}
	return errors.New("nothing to claim")
}
