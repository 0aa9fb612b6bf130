package agentmemory_test

import (
	"context"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/internal/servicetest"
)

// TestForgedTombstoneRemovesNoOpenAgentTask: a tombstone
// (events.AgentTaskPruned) appended after an open agent task was not a
// prune's (a prune tombstones a name whose task is completed, checked
// against its last event): the task still shows and lists, and takes its
// next command.
func TestForgedTombstoneRemovesNoOpenAgentTask(t *testing.T) {
	t.Parallel()
	svc, b := servicetest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := svc.TaskCreate(ctx, trellis.AgentTaskCreateRequest{Name: "open-task", Description: "d", Objectives: []string{"Do"}}); err != nil {
		t.Fatal(err)
	}
	recs, last, err := b.Store.Load(ctx, events.StreamTasks, events.TaskNameFilter("open-task"))
	if err != nil {
		t.Fatal(err)
	}
	env, err := events.NewEnvelope(time.Now(), events.AgentTaskPruned, "open-task", "mallory", events.TasksSchema, map[string]string{"archive": "prune-forged.jsonl"})
	if err != nil {
		t.Fatal(err)
	}
	env.Prev = events.Hash(recs[len(recs)-1].Envelope)
	if _, err := b.Store.Append(ctx, events.TasksSubject("open-task", events.AgentTaskPruned), env, events.Expect{Filter: events.TaskNameFilter("open-task"), LastSeq: last}, env.ID); err != nil {
		t.Fatal(err)
	}
	if err := svc.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := svc.TaskShow(ctx, "open-task"); err != nil || got.Status != events.AgentTaskStatusOpen {
		t.Fatalf("show the open agent task after a forged tombstone: %+v %v; want it open", got, err)
	}
	list, err := svc.TaskList(ctx, trellis.AgentTaskListRequest{})
	if err != nil || len(list) != 1 {
		t.Fatalf("list after a forged tombstone: %+v %v; want the open task", list, err)
	}
	if _, err := svc.TaskJoin(ctx, trellis.AgentTaskJoinRequest{Task: "open-task", Agent: "agent_1", Role: "implementer"}); err != nil {
		t.Fatalf("join the open agent task after a forged tombstone: %v", err)
	}
}
