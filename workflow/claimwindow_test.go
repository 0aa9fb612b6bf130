package workflow_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/taskqueue"
	"github.com/trellis/trellis/workflow"
)

// An activation that runs longer than a task pool's claim window (here a
// 300 ms step) still costs its dispatch task one event beside its add:
// the completion carries the claim. With every claim recorded first
// (ClaimWindow < 0) the same run's dispatch has a claimed event of its
// own, which shows the check tells them apart.
func TestSlowActivationRecordsItsClaimWithItsOutcome(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		window time.Duration
		want   string
	}{
		{20 * time.Second, "added,completed"},
		{-1, "added,claimed,completed"},
	} {
		b := setup(t)
		ctx := ctxT(t)
		if err := workflow.Register(b.e, "slow", 1, func(c *workflow.Context, _ any) (int, error) {
			return workflow.Step(c, "nap", func(ctx context.Context) (int, error) {
				select {
				case <-time.After(300 * time.Millisecond):
				case <-ctx.Done():
				}
				return 1, nil
			})
		}); err != nil {
			t.Fatal(err)
		}
		b.serve(t, workflow.ServeConfig{Queue: "slow", Lease: 90 * time.Second, ClaimWindow: c.window})
		waitRegistered(t, b.e, "slow")
		run, err := b.e.Start(ctx, workflow.StartRequest{Workflow: "slow"})
		if err != nil {
			t.Fatal(err)
		}
		waitStatus(t, b.e, run.RunID, workflow.StatusCompleted)
		// The dispatch task's completion is recorded after the run's end:
		// wait for it.
		deadline := time.Now().Add(60 * time.Second)
		for {
			recs, _, err := b.Store.Load(ctx, events.StreamQueue, "trellis.queue."+workflow.QueueFor("slow", "slow", 1)+".>")
			if err != nil {
				t.Fatal(err)
			}
			var types []string
			for _, r := range recs {
				if taskqueue.IsTaskSubject(r.Subject) { // not the queue's controls (its lease)
					types = append(types, r.Type)
				}
			}
			got := strings.Join(types, ",")
			if got == c.want {
				break
			}
			if time.Now().After(deadline) || strings.HasSuffix(got, "completed") {
				t.Fatalf("window %v: dispatch events %s, want %s", c.window, got, c.want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}
