package taskqueue

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/trellis/trellis/command"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
)

// The snapshot tests (gates, controls, unique keys, schedules) share these:
// each builds a long history, loads it as a process starting cold, and
// compares that with a replay of the whole history.

// snapshotTest starts a server for a snapshot test and a context that
// ends with the test (two minutes at most).
func snapshotTest(t *testing.T) (*eventstest.Bundle, context.Context) {
	t.Helper()
	b := eventstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	t.Cleanup(cancel)
	return b, ctx
}

// coldLoad loads aggregate id of kind as a process starting cold does (a
// runner without a cache) and returns its state and how many events the
// load folded (counted, not timed).
func coldLoad[S any](t *testing.T, ctx context.Context, store *events.Store, kind command.Kind[S], id string) (command.State[S], int) {
	t.Helper()
	folded := 0
	fold := kind.Fold
	kind.Fold = func(s S, rec events.Recorded) (S, error) {
		folded++
		return fold(s, rec)
	}
	st, err := command.New(store, kind, command.Config{CacheSize: -1}).Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return st, folded
}

// jsonOf is v as JSON, to compare states and to print them.
func jsonOf(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
