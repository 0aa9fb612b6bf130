package taskqueue_test

import (
	"fmt"
	"testing"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
)

// Many tasks added in one call are stored together (one atomic batch here)
// and each is its own task; idempotency keys hold inside the call and
// across calls.
func TestAddMany(t *testing.T) {
	t.Parallel()
	q, b := setupQueue(t)
	ctx := ctxT(t)
	var reqs []trellis.AddTaskRequest
	for i := 0; i < 50; i++ {
		reqs = append(reqs, trellis.AddTaskRequest{Queue: "bulk", Objective: fmt.Sprintf("unit %d", i), Inputs: []string{fmt.Sprintf("f%d.go", i)}})
	}
	reqs[7].IdempotencyKey, reqs[8].IdempotencyKey = "same", "same"
	before := b.Store.GroupCommitStats()
	res, err := q.AddMany(ctx, trellis.AddManyRequest{Tasks: reqs})
	if err != nil || len(res.Errors) != 0 || len(res.Tasks) != 50 {
		t.Fatalf("add many = %+v, %v", res, err)
	}
	ids := map[string]bool{}
	for i, task := range res.Tasks {
		if task == nil || task.Objective != reqs[i].Objective && i != 8 || task.Status != trellis.StatusQueued {
			t.Fatalf("task %d = %+v", i, task)
		}
		ids[task.TaskID] = true
	}
	if res.Tasks[7].TaskID != res.Tasks[8].TaskID || len(ids) != 49 {
		t.Fatalf("the repeated key added %d distinct tasks; want 49 (tasks 7 and 8 the same)", len(ids))
	}
	if after := b.Store.GroupCommitStats(); after.Batches == before.Batches {
		t.Fatalf("stats %+v -> %+v; want the adds committed in batches", before, after)
	}
	list, err := q.AddMany(ctx, trellis.AddManyRequest{Tasks: []trellis.AddTaskRequest{{Queue: "bulk", Objective: "again", IdempotencyKey: "same"}}})
	if err != nil || list.Tasks[0].TaskID != res.Tasks[7].TaskID {
		t.Fatalf("key repeated in a later call = %+v, %v; want task %s", list, err, res.Tasks[7].TaskID)
	}
	recs, _, err := b.Store.Load(ctx, events.StreamQueue, "trellis.queue.bulk.>")
	if err != nil || len(recs) != 49 {
		t.Fatalf("the stream holds %d added events (%v); want 49", len(recs), err)
	}
}

// A bad request refuses the whole call, naming it; nothing is added.
func TestAddManyBadInput(t *testing.T) {
	t.Parallel()
	q, b := setupQueue(t)
	ctx := ctxT(t)
	many := make([]trellis.AddTaskRequest, trellis.MaxAddMany+1)
	for i := range many {
		many[i] = trellis.AddTaskRequest{Objective: "x"}
	}
	for _, c := range []struct {
		name  string
		tasks []trellis.AddTaskRequest
		field string
	}{
		{"none", nil, "tasks"},
		{"too many", many, "tasks"},
		{"empty objective", []trellis.AddTaskRequest{{Objective: "ok"}, {Objective: ""}}, "tasks[1].objective"},
		{"bad queue", []trellis.AddTaskRequest{{Objective: "ok", Queue: "no spaces"}}, "tasks[0].queue"},
		{"negative budget", []trellis.AddTaskRequest{{Objective: "ok"}, {Objective: "ok"}, {Objective: "ok", MaxSteps: -1}}, "tasks[2].max_steps"},
		{"unknown parent", []trellis.AddTaskRequest{{Objective: "ok", ParentID: "01J00000000000000000000000"}}, "tasks[0].parent_id"},
	} {
		_, err := q.AddMany(ctx, trellis.AddManyRequest{Tasks: c.tasks})
		if trellis.ErrorCode(err) != trellis.CodeInvalid || trellis.AsError(err).Field != c.field {
			t.Fatalf("%s: %v (field %q); want invalid naming %s", c.name, err, trellis.AsError(err).Field, c.field)
		}
	}
	recs, _, err := b.Store.Load(ctx, events.StreamQueue, "trellis.queue.>")
	if err != nil || len(recs) != 0 {
		t.Fatalf("refused calls appended %d events (%v)", len(recs), err)
	}
}
