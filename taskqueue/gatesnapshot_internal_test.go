package taskqueue

import (
	"fmt"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
)

// TestGateSnapshotBoundsColdStart: a concurrency key's gate records every
// gated claim; after 150 of them a process starting cold folds at most
// GateSnapshotEvery+1 of its events (counted, not timed), gets the state
// a replay of the gate's whole history gets, and decides on it: the slot
// the last claim holds still refuses a second claim of the key, and is
// taken once that claim is done.
func TestGateSnapshotBoundsColdStart(t *testing.T) {
	t.Parallel()
	b, ctx := snapshotTest(t)
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
	st, folded := coldLoad(t, ctx, b.Store, gateKind, id)
	recs := eventstest.Load(t, ctx, b.Store, events.StreamQueue, infraFilter(id))
	var whole *Gate
	for _, r := range recs {
		var err error
		if whole, err = gateKind.Fold(whole, r); err != nil {
			t.Fatal(err)
		}
	}
	if len(recs) < n {
		t.Fatalf("the gate holds %d events; want at least the %d claims", len(recs), n)
	}
	if folded > GateSnapshotEvery+1 {
		t.Fatalf("a cold load folded %d of the gate's %d events; want at most %d (its last snapshot and the events after it)", folded, len(recs), GateSnapshotEvery+1)
	}
	if got, want := jsonOf(t, st.Value), jsonOf(t, whole); got != want {
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
