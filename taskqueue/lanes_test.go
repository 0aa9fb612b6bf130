package taskqueue_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/taskqueue"
)

// Two claimants (handlers of their own, as two processes have) race with
// `queue next` on one task in one lane while the other lanes are empty:
// exactly one of them gets the task, in every lane, and nothing is left
// behind for a later claim.
func TestNextRaceOnOneTaskOneLane(t *testing.T) {
	t.Parallel()
	q, b := setupQueue(t)
	other := taskqueue.New(b.Store, taskqueue.Config{})
	ctx := ctxT(t)
	for p := 1; p <= trellis.MaxPriority; p++ {
		for round := 0; round < 3; round++ {
			added, err := q.Add(ctx, trellis.AddTaskRequest{Queue: "race", Objective: fmt.Sprint("p", p, "-", round), Priority: p})
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			got := make([]*trellis.Task, 2)
			errs := make([]error, 2)
			for i, h := range []*taskqueue.Handler{q, other} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					got[i], errs[i] = h.Next(ctx, trellis.NextRequest{Queue: "race", Worker: fmt.Sprint("agent-", i)})
				}()
			}
			wg.Wait()
			for _, err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			claimed := 0
			for _, task := range got {
				if task != nil {
					claimed++
					if task.TaskID != added.TaskID {
						t.Fatalf("priority %d: claimed %s; want %s", p, task.TaskID, added.TaskID)
					}
				}
			}
			if claimed != 1 {
				t.Fatalf("priority %d round %d: %d claimants got the task; want exactly 1", p, round, claimed)
			}
			if left, err := q.Next(ctx, trellis.NextRequest{Queue: "race", Worker: "late"}); err != nil || left != nil {
				t.Fatalf("priority %d: a later claim got %v, %v; want nothing left", p, left, err)
			}
		}
	}
}

// A task in every lane, added worst first: the claims come best lane
// first, and none is lost.
func TestNextTakesLanesBestFirst(t *testing.T) {
	t.Parallel()
	q, _ := setupQueue(t)
	ctx := ctxT(t)
	for p := trellis.MaxPriority; p >= 1; p-- {
		if _, err := q.Add(ctx, trellis.AddTaskRequest{Queue: "back", Objective: fmt.Sprint("p", p), Priority: p}); err != nil {
			t.Fatal(err)
		}
	}
	for p := 1; p <= trellis.MaxPriority; p++ {
		task, err := q.Next(ctx, trellis.NextRequest{Queue: "back", Worker: "w"})
		if err != nil {
			t.Fatal(err)
		}
		if task == nil || task.Priority != p {
			t.Fatalf("claim %d: got %+v; want the priority-%d task", p, task, p)
		}
	}
	if task, err := q.Next(ctx, trellis.NextRequest{Queue: "back", Worker: "w"}); err != nil || task != nil {
		t.Fatalf("after every lane: got %v, %v; want nothing", task, err)
	}
}
