package projections_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/taskqueue"
)

// TestBadEventsDoNotStopReads: events published from outside Trellis that
// mean nothing (not an envelope; a claim of a task that does not exist)
// are skipped by every projection, reads go on, and replay skips them the
// same way.
func TestBadEventsDoNotStopReads(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ghost := events.NewID(time.Now())
	if _, err := b.Store.JetStream().Publish(ctx, "trellis.queue.default."+ghost+".added", []byte("not json at all")); err != nil {
		t.Fatal(err)
	}
	other := events.NewID(time.Now().Add(time.Millisecond))
	env, _ := events.NewEnvelope(time.Now(), taskqueue.Claimed, other, "intruder", 1, map[string]any{"worker": "x", "attempt": 1})
	if _, err := b.Store.Append(ctx, taskqueue.Subject("default", other, taskqueue.Claimed), env, events.Expect{Filter: taskqueue.Filter(other)}, ""); err != nil {
		t.Fatal(err)
	}
	for _, subj := range []string{"trellis.vine.gbad.batch_applied", "trellis.memory.task-x.consolidated", "trellis.tasks.x.agent_joined", "trellis.chunks.r.fbad.file_indexed"} {
		if err := b.Conn.Publish(subj, []byte("{garbage")); err != nil {
			t.Fatal(err)
		}
	}
	_ = b.Conn.FlushTimeout(5 * time.Second)
	task, err := b.svc.Add(ctx, trellis.AddTaskRequest{Objective: "after the garbage"})
	if err != nil {
		t.Fatal(err)
	}
	l, err := b.svc.List(ctx, trellis.ListRequest{})
	if err != nil {
		t.Fatalf("list after bad events: %v", err)
	}
	if len(l.Tasks) != 1 || l.Tasks[0].TaskID != task.TaskID {
		t.Fatalf("board = %+v", l.Tasks)
	}
	if err := b.svc.CatchUp(ctx); err != nil {
		t.Fatalf("projections stopped on bad events: %v", err)
	}
	if _, err := b.svc.Replay(ctx); err != nil {
		t.Fatalf("replay over bad events: %v", err)
	}
	if l, err = b.svc.List(ctx, trellis.ListRequest{}); err != nil || len(l.Tasks) != 1 {
		t.Fatalf("board after replay = %+v, %v", l, err)
	}
	var out strings.Builder
	if n, err := taskqueue.ExportTasks(ctx, b.Store, &out); err != nil || n != 1 {
		t.Fatalf("export over bad events: %d packets, %v", n, err)
	}
}
