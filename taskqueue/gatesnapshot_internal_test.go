package taskqueue

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/command"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
)

// countingGates returns a runner of the gate kind without a cache (a
// process starting cold) and the count of events its loads fold.
func countingGates(store *events.Store) (*command.Runner[*Gate], *int) {
	n := new(int)
	kind := gateKind
	kind.Fold = func(g *Gate, rec events.Recorded) (*Gate, error) {
		*n++
		return gateKind.Fold(g, rec)
	}
	return command.New(store, kind, command.Config{CacheSize: -1}), n
}

// foldWhole folds every event the log holds of a gate (a replay).
func foldWhole(t *testing.T, store *events.Store, id string) (*Gate, int) {
	t.Helper()
	recs, _, err := store.Load(context.Background(), events.StreamQueue, infraFilter(id))
	if err != nil {
		t.Fatal(err)
	}
	var g *Gate
	for _, r := range recs {
		if g, err = gateKind.Fold(g, r); err != nil {
			t.Fatal(err)
		}
	}
	return g, len(recs)
}

func gateJSON(t *testing.T, g *Gate) string {
	t.Helper()
	if g == nil {
		g = &Gate{}
	}
	data, err := json.Marshal(g)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestGateSnapshotBoundsColdStart: a concurrency key's gate records every
// gated claim; after 150 of them a process starting cold folds at most
// GateSnapshotEvery+1 of its events (counted, not timed), gets the state
// a replay of the gate's whole history gets, and decides on it: the slot
// the last claim holds still refuses a second claim of the key, and is
// taken once that claim is done.
func TestGateSnapshotBoundsColdStart(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	t.Cleanup(cancel)
	q := New(b.Store, Config{})
	if _, err := q.SetPerKey(ctx, "g", "ops", 1); err != nil {
		t.Fatal(err)
	}
	const n = 150
	var last *trellis.Task
	for i := 0; i < n; i++ {
		if _, err := q.Add(ctx, trellis.AddTaskRequest{Queue: "g", Objective: fmt.Sprint(i), ConcurrencyKey: "repo"}); err != nil {
			t.Fatal(err)
		}
		got, err := q.Next(ctx, trellis.NextRequest{Queue: "g", Worker: "w"})
		if err != nil || got == nil {
			t.Fatalf("claim %d: %+v, %v", i, got, err)
		}
		last = got
		if i < n-1 {
			if _, err := q.Done(ctx, trellis.DoneRequest{TaskID: got.TaskID, Worker: "w", WhatWasDone: "ok"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	id := KeyGateID("g", "repo")
	cold, folded := countingGates(b.Store)
	st, err := cold.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	whole, events := foldWhole(t, b.Store, id)
	if events < n {
		t.Fatalf("the gate holds %d events; want at least the %d claims", events, n)
	}
	if *folded > GateSnapshotEvery+1 {
		t.Fatalf("a cold load folded %d of the gate's %d events; want at most %d (its last snapshot and the events after it)", *folded, events, GateSnapshotEvery+1)
	}
	if got, want := gateJSON(t, st.Value), gateJSON(t, whole); got != want {
		t.Fatalf("gate from its snapshot %s != replayed %s", got, want)
	}
	if len(st.Value.Holders) != 1 || st.Value.Holders[0].TaskID != last.TaskID {
		t.Fatalf("holders %+v; want the last claim %s", st.Value.Holders, last.TaskID)
	}
	// A second process decides on the gate as it loads it.
	other := New(b.Store, Config{})
	y, err := other.Add(ctx, trellis.AddTaskRequest{Queue: "g", Objective: "y", ConcurrencyKey: "repo"})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := other.Next(ctx, trellis.NextRequest{Queue: "g", Worker: "w2"}); err != nil || got != nil {
		t.Fatalf("claim while the key's slot is held: %+v, %v; want nothing", got, err)
	}
	if _, err := q.Done(ctx, trellis.DoneRequest{TaskID: last.TaskID, Worker: "w", WhatWasDone: "ok"}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		got, err := other.Next(ctx, trellis.NextRequest{Queue: "g", Worker: "w2"})
		if err != nil {
			t.Fatal(err)
		}
		if got != nil {
			if got.TaskID != y.TaskID {
				t.Fatalf("claimed %s; want %s", got.TaskID, y.TaskID)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the freed slot was not taken within 60s")
		}
	}
}
