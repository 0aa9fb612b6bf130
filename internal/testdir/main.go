package testdir

import (
	"fmt"
	"os"
	"testing"
)

// Main is the body of a TestMain: it creates a temporary directory named
// by prefix, sets *dir to its path, runs the tests, removes the directory
// and returns the exit code for os.Exit (1 when the directory cannot be
// created or removed and the tests passed).
func Main(m *testing.M, prefix string, dir *string) int {
	d, err := os.MkdirTemp("", prefix)
	if err != nil {
		fmt.Fprintln(os.Stderr, "test dir:", err)
		return 1
	}
	*dir = d
	code := m.Run()
	if err := os.RemoveAll(d); err != nil {
		fmt.Fprintln(os.Stderr, "remove test dir:", err)
		code = max(code, 1)
	}
	return code
}
