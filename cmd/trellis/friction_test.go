package main

import (
	"strings"
	"testing"
)

// queue list --since takes the time syntax every other command takes
// (RFC 3339, a date, or a duration ago), and refuses what is none of them;
// replay --out says how to read what it wrote.
func TestQueueListSinceAndReplayOutHint(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if code, _, errOut := runIn(t, dir, "queue", "add", "--data", "d", "--objective", "recent"); code != 0 {
		t.Fatalf("queue add: exit %d: %s", code, errOut)
	}
	for _, since := range []string{"1h", "2000-01-02", "2000-01-02T15:04:05Z"} {
		code, out, errOut := runIn(t, dir, "queue", "list", "--data", "d", "--since", since)
		if code != 0 || !strings.Contains(out, "recent") {
			t.Errorf("queue list --since %s: exit %d\n%s%s", since, code, out, errOut)
		}
	}
	if code, out, errOut := runIn(t, dir, "queue", "list", "--data", "d", "--since", "2999-01-01"); code != 0 || strings.Contains(out, "recent") {
		t.Errorf("queue list --since a future date should list nothing: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := runIn(t, dir, "queue", "list", "--data", "d", "--since", "yesterdayish"); code != 2 || !strings.Contains(errOut, "since") {
		t.Errorf("queue list --since yesterdayish: exit %d %s; want 2 naming since", code, errOut)
	}
	code, out, errOut := runIn(t, dir, "replay", "--data", "d", "--until", "1", "--out", "at-1")
	if code != 0 || !strings.Contains(out, "--data at-1") && !strings.Contains(out, "--data "+dir) {
		t.Fatalf("replay --out: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := runIn(t, dir, "queue", "list", "--data", "at-1"); code != 0 || !strings.Contains(out, "recent") {
		t.Errorf("reading the replay's directory as the hint says: exit %d\n%s%s", code, out, errOut)
	}
}
