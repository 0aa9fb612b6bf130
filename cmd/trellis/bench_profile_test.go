package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchProfilesWritten: a benchmark run with the profile flags leaves
// four pprof files (gzip), also when the benchmark fails; an unwritable
// profile path is a clear error.
func TestBenchProfilesWritten(t *testing.T) {
	dir := t.TempDir()
	paths := map[string]string{}
	var flags []string
	for _, k := range []string{"cpuprofile", "memprofile", "blockprofile", "mutexprofile"} {
		paths[k] = filepath.Join(dir, k+".pb")
		flags = append(flags, "--"+k, paths[k])
	}
	check := func(what string) {
		t.Helper()
		for k, p := range paths {
			data, err := os.ReadFile(p)
			if err != nil || !bytes.HasPrefix(data, []byte{0x1f, 0x8b}) {
				t.Fatalf("%s: %s not a pprof file (%d bytes): %v", what, k, len(data), err)
			}
			os.Remove(p)
		}
	}
	code, _, errOut := cli(t, append([]string{"bench", "queue", "--tasks", "50", "--workers", "2", "--seconds", "0.2", "--rate", "50", "--json"}, flags...)...)
	if code != 0 {
		t.Fatalf("bench queue: exit %d: %s", code, errOut)
	}
	check("a run")
	// A benchmark that fails (a flag combination it refuses) still writes them.
	code, _, errOut = cli(t, append([]string{"bench", "workers", "--nats-url", "nats://127.0.0.1:1", "--sync-interval", "1s"}, flags...)...)
	if code == 0 || !strings.Contains(errOut, "sync-interval") {
		t.Fatalf("refused run: exit %d: %s", code, errOut)
	}
	check("a refused run")
	code, _, errOut = cli(t, "bench", "queue", "--tasks", "10", "--cpuprofile", filepath.Join(dir, "missing", "cpu.pb"))
	if code == 0 || !strings.Contains(errOut, "cpu profile") {
		t.Fatalf("unwritable profile: exit %d: %s", code, errOut)
	}
}
