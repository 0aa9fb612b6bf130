package agentmemory

import (
	"context"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
)

// TestMemoryCachesEvict: with room for one agent task and one memory
// scope, an evicted task is loaded again from the log (a second create of
// the same name is still refused as a conflict) and observations into
// alternating scopes all land.
func TestMemoryCachesEvict(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m := newHandler(b.Store, func(context.Context, string) (string, error) {
		return "", trellis.Errorf(trellis.CodeNotFound, "no ids here")
	}, 1, 1)
	for _, name := range []string{"first", "second"} {
		if _, err := m.TaskCreate(ctx, trellis.AgentTaskCreateRequest{Name: name}); err != nil {
			t.Fatal(err)
		}
	}
	if n := m.tasks.CacheLen(); n != 1 {
		t.Fatalf("task cache holds %d", n)
	}
	if _, err := m.TaskCreate(ctx, trellis.AgentTaskCreateRequest{Name: "first"}); trellis.ErrorCode(err) != trellis.CodeConflict {
		t.Fatalf("create of an open task after its eviction: %v; want conflict", err)
	}
	got, err := m.Task(ctx, "first")
	if err != nil || got.Name != "first" {
		t.Fatalf("task after eviction = %+v, %v", got, err)
	}
	for i, branch := range []string{"main", "dev", "main", "dev"} {
		if _, err := m.Observe(ctx, trellis.ObserveRequest{Branch: branch, Session: "s1", Type: "insight", Text: "note " + branch + string(rune('a'+i))}); err != nil {
			t.Fatalf("observe %d on %s: %v", i, branch, err)
		}
		if n := m.scopes.CacheLen(); n != 1 {
			t.Fatalf("scope cache holds %d", n)
		}
	}
	recs, _, err := b.Store.Load(ctx, events.StreamMemory, "trellis.memory.>")
	if err != nil || len(recs) != 4 {
		t.Fatalf("%d memory events, %v; want 4", len(recs), err)
	}
}
