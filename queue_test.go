package trellis_test

import (
	"testing"
	"time"

	"github.com/trellis/trellis"
)

// A duration accepted with spaces around it is the duration used: the
// delay and the unique hold are not silently dropped.
func TestSchedulingDurationsWithSpaces(t *testing.T) {
	t.Parallel()
	r := trellis.AddTaskRequest{Objective: "x", Delay: " 30s ", UniqueKey: "k", UniqueFor: "\t1h\n"}
	if err := r.Normalize(); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	if got := r.DelayUntil(now); !got.Equal(now.Add(30 * time.Second)) {
		t.Fatalf("DelayUntil = %s; want 30 s after %s", got, now)
	}
	if got := r.UniqueHold(); got != time.Hour {
		t.Fatalf("UniqueHold = %s; want 1h", got)
	}
}
