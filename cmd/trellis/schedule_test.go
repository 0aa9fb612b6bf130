package main

import (
	"strings"
	"testing"

	"github.com/trellis/trellis"
)

// TestCLIScheduling covers the scheduling flags of queue add, queue cancel,
// queue limit's flow controls and the schedule commands, in-process, with
// their exit codes.
func TestCLIScheduling(t *testing.T) {
	t.Parallel()
	d := "--data=" + t.TempDir()
	code, out, errs := cli(t, "queue", "add", d, "--objective", "digest", "--delay", "1h", "--priority", "1", "--unique-key", "digest", "--json")
	if code != 0 {
		t.Fatalf("add: exit %d: %s", code, errs)
	}
	var first trellis.Task
	mustJSON(t, out, &first)
	if first.Status != trellis.StatusScheduled || first.Priority != 1 || first.RunAt == nil {
		t.Fatalf("add printed %+v", first)
	}
	code, out, _ = cli(t, "queue", "add", d, "--objective", "digest again", "--unique-key", "digest", "--json")
	if code != 0 || !strings.Contains(out, `"duplicate": true`) || !strings.Contains(out, first.TaskID) {
		t.Fatalf("duplicate add: exit %d, %s", code, out)
	}
	if code, out, _ = cli(t, "queue", "add", d, "--objective", "digest again", "--unique-key", "digest"); code != 0 || !strings.Contains(out, "duplicate") {
		t.Fatalf("duplicate add (human): exit %d, %s", code, out)
	}
	code, out, errs = cli(t, "queue", "add", d, "--objective", "review", "--after", first.TaskID, "--json")
	var review trellis.Task
	mustJSON(t, out, &review)
	if code != 0 || review.Status != trellis.StatusWaiting {
		t.Fatalf("dependant: exit %d, %+v %s", code, review, errs)
	}
	code, out, _ = cli(t, "queue", "cancel", d, first.TaskID, "--reason", "not today", "--json")
	var cancelled trellis.Task
	mustJSON(t, out, &cancelled)
	if code != 0 || cancelled.Status != trellis.StatusCancelled || cancelled.Cancellation.Reason != "not today" {
		t.Fatalf("cancel: exit %d, %+v", code, cancelled)
	}
	if code, out, _ = cli(t, "queue", "limit", d, "llm", "--rate", "10/s", "--burst", "5", "--per-key", "1"); code != 0 || !strings.Contains(out, "rate 10/s (burst 5)") || !strings.Contains(out, "per key 1") {
		t.Fatalf("limit: exit %d, %s", code, out)
	}
	if code, out, _ = cli(t, "queue", "controls", d, "llm"); code != 0 || !strings.Contains(out, "rate 10/s") {
		t.Fatalf("controls: exit %d, %s", code, out)
	}
	if code, out, errs = cli(t, "schedule", "add", d, "nightly", "--queue", "reports", "--cron", "0 9 * * 1-5", "--objective", "Build the report"); code != 0 || !strings.Contains(out, "cron 0 9 * * 1-5") {
		t.Fatalf("schedule add: exit %d, %s %s", code, out, errs)
	}
	if code, out, _ = cli(t, "schedule", "list", d); code != 0 || !strings.Contains(out, "schedule nightly: queue reports") || !strings.Contains(out, "next tick:") {
		t.Fatalf("schedule list: exit %d, %s", code, out)
	}
	if code, out, _ = cli(t, "schedule", "remove", d, "nightly"); code != 0 || !strings.Contains(out, "[removed]") {
		t.Fatalf("schedule remove: exit %d, %s", code, out)
	}
	if code, out, _ = cli(t, "schedule", "list", d, "--json"); code != 0 || !strings.Contains(out, `"schedules": []`) {
		t.Fatalf("schedule list after remove: exit %d, %s", code, out)
	}
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"bad delay", []string{"queue", "add", d, "--objective", "x", "--delay", "soon"}, 2, "delay"},
		{"priority out of range", []string{"queue", "add", d, "--objective", "x", "--priority", "9"}, 2, "priority"},
		{"unknown prerequisite", []string{"queue", "add", d, "--objective", "x", "--after", "01JB0000000000000000000000"}, 2, "after"},
		{"cancelled prerequisite", []string{"queue", "add", d, "--objective", "x", "--after", first.TaskID}, 4, "after"},
		{"cancel done unknown", []string{"queue", "cancel", d, "01JB0000000000000000000000"}, 3, "not_found"},
		{"rate of 0", []string{"queue", "limit", d, "llm", "--rate", "0/s"}, 2, "rate"},
		{"burst without rate", []string{"queue", "limit", d, "llm", "--burst", "3"}, 2, "burst"},
		{"limit without a limit", []string{"queue", "limit", d, "llm"}, 2, "max_in_flight"},
		{"bad cron", []string{"schedule", "add", d, "x", "--cron", "0 9 * *", "--objective", "x"}, 2, "cron"},
		{"every and cron", []string{"schedule", "add", d, "x", "--cron", "0 9 * * *", "--every", "1h", "--objective", "x"}, 2, "cron"},
		{"bad every", []string{"schedule", "add", d, "x", "--every", "0s", "--objective", "x"}, 2, "every"},
		{"remove unknown schedule", []string{"schedule", "remove", d, "nope"}, 3, "not_found"},
	} {
		code, _, errs := cli(t, c.args...)
		if code != c.code || !strings.Contains(errs, c.want) {
			t.Errorf("%s: exit %d, stderr %q; want exit %d mentioning %q", c.name, code, errs, c.code, c.want)
		}
	}
}
