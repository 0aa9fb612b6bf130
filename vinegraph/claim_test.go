package vinegraph_test

import (
	"os"
	"strings"
	"testing"
	"time"
)

// waitFile waits until the file at path holds a text ok accepts (a claim
// returns once its event is recorded; the file follows right after) and
// returns it; it fails after a minute.
func waitFile(t *testing.T, path string, ok func(string) bool) string {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		data, err := os.ReadFile(path)
		if err == nil && ok(string(data)) {
			return string(data)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never held the expected text (%v):\n%s", path, err, data)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// holds returns a predicate true for a text containing every one of want.
func holds(want ...string) func(string) bool {
	return func(s string) bool {
		for _, w := range want {
			if !strings.Contains(s, w) {
				return false
			}
		}
		return true
	}
}
