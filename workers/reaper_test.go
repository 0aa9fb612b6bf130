package workers

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trellis/trellis"
)

// startGroup starts `sh -c script` in a process group of its own and
// returns the group id and the pids the script prints (one per line).
func startGroup(t *testing.T, script string, pids int) (int, []int) {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait() }() // reap it when it dies
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	var got []int
	buf := make([]byte, 256)
	var text string
	for len(got) < pids {
		n, err := out.Read(buf)
		if err != nil {
			t.Fatalf("reading pids: %v (got %q)", err, text)
		}
		text += string(buf[:n])
		got = got[:0]
		for _, f := range strings.Fields(text) {
			pid, err := strconv.Atoi(f)
			if err != nil {
				t.Fatalf("pid %q: %v", f, err)
			}
			got = append(got, pid)
		}
	}
	return cmd.Process.Pid, got
}

// alive reports whether a process exists and is not a zombie.
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

func waitGone(t *testing.T, pids ...int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range pids {
		for alive(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("pid %d still runs", pid)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// TestReaperKillsRegisteredGroupsWhenItsPipeCloses: when the worker's end
// of the pipe closes without the groups being removed (what the kernel
// does when the worker dies), the reaper kills every registered group,
// grandchildren included, and leaves a removed group alone.
func TestReaperKillsRegisteredGroupsWhenItsPipeCloses(t *testing.T) {
	t.Parallel()
	var r groupReaper
	pg1, pids1 := startGroup(t, `sleep 300 & echo $$; echo $!; wait`, 2)
	pg2, pids2 := startGroup(t, `sleep 300 & echo $$; echo $!; wait`, 2)
	kept, keptPIDs := startGroup(t, `echo $$; exec sleep 300`, 1)
	for _, pg := range []int{pg1, kept, pg2} {
		if err := r.add(pg); err != nil {
			t.Fatal(err)
		}
	}
	r.remove(kept)
	for _, pid := range append(append(pids1, pids2...), keptPIDs...) {
		if !alive(pid) {
			t.Fatalf("pid %d is not running before the pipe closes", pid)
		}
	}
	r.mu.Lock()
	reaper := r.cmd
	_ = r.stdin.Close() // as the kernel does when the worker dies
	r.mu.Unlock()
	if err := reaper.Wait(); err != nil {
		t.Fatalf("reaper exit: %v", err)
	}
	waitGone(t, append(pids1, pids2...)...)
	if !alive(keptPIDs[0]) {
		t.Fatal("the reaper killed a group that had been removed")
	}
}

// TestReaperRestartsAndCloses: a reaper that has gone away is started
// again with the live groups; Close ends it and leaves no process.
func TestReaperRestartsAndCloses(t *testing.T) {
	t.Parallel()
	var r groupReaper
	pg1, pids1 := startGroup(t, `echo $$; exec sleep 300`, 1)
	if err := r.add(pg1); err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	first := r.cmd.Process.Pid
	r.mu.Unlock()
	// Someone kills the reaper; the next registration starts a new one
	// that knows both groups.
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, first)
	pg2, pids2 := startGroup(t, `echo $$; exec sleep 300`, 1)
	var err error
	for i := 0; i < 2 && err == nil; i++ {
		// The first write after the kill may still land in the pipe
		// buffer; the one after surely fails and restarts.
		err = r.add(pg2)
		r.mu.Lock()
		restarted := r.cmd != nil && r.cmd.Process.Pid != first
		r.mu.Unlock()
		if restarted {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	second := r.cmd.Process.Pid
	r.mu.Unlock()
	if second == first {
		t.Fatal("the reaper was not restarted")
	}
	// Closing with groups still registered kills them.
	if err := r.close(); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pids1[0], pids2[0], second)
}

// TestExecCancelKillsProcessGroup: a cancelled command and the children
// it started are gone when Handle returns (SIGTERM to the group, SIGKILL
// after KillDelay, then SIGKILL to whatever is left), and the reaper
// forgets the group.
func TestExecCancelKillsProcessGroup(t *testing.T) {
	t.Parallel()
	pidFile := t.TempDir() + "/pids"
	// The shell ignores SIGTERM, so only the SIGKILL ends it.
	e := &Exec{Command: fmt.Sprintf(`trap '' TERM; sleep 300 & echo $$ $! > %[1]s.tmp && mv %[1]s.tmp %[1]s; wait; wait`, pidFile), KillDelay: 200 * time.Millisecond}
	defer e.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := e.Handle(ctx, &trellis.Task{TaskID: "01JBTESTTASK0000000000000X", Queue: "q"}, nil)
		done <- err
	}()
	var pids []int
	deadline := time.Now().Add(10 * time.Second)
	for len(pids) == 0 {
		if b, err := os.ReadFile(pidFile); err == nil {
			for _, f := range strings.Fields(string(b)) {
				pid, _ := strconv.Atoi(f)
				pids = append(pids, pid)
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the command never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err == nil || !strings.Contains(err.Error(), "cancelled") {
		t.Fatalf("cancelled command: %v", err)
	}
	// SIGKILL is sent to the group before Handle returns; its delivery
	// completes asynchronously.
	waitGone(t, pids...)
	e.reaper.mu.Lock()
	left := len(e.reaper.groups)
	e.reaper.mu.Unlock()
	if left != 0 {
		t.Fatalf("the reaper still holds %d groups", left)
	}
}
