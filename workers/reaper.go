package workers

import (
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
)

// reaperScript is run with `sh -c` by a groupReaper. It reads "+ PGID" and
// "- PGID" lines on stdin, keeping the set of process groups of the
// commands running, and when stdin ends (the worker closed it, or the
// worker died and the kernel closed it) kills every group still in the
// set. It ignores the signals a terminal or a service manager sends to
// stop the worker, so it outlives the worker long enough to clean up.
const reaperScript = `trap '' HUP INT TERM QUIT
g=' '
while read -r op pg; do
	case $op in
	+) g="$g$pg " ;;
	-) case $g in *" $pg "*) g="${g%% $pg *} ${g#* $pg }" ;; esac ;;
	esac
done
for pg in $g; do kill -s KILL -- "-$pg" 2>/dev/null; done
`

// groupReaper makes the process groups of an Exec's commands die with the
// worker, even when the worker dies by SIGKILL and cannot act. A parent-
// death signal (Pdeathsig) reaches only the direct child; the command's
// own children would live on. So a small shell process, in a process
// group of its own, holds the read end of a pipe whose write end only the
// worker holds: the kernel closes it when the worker dies, whatever the
// cause, and the reaper then kills every group it was told about.
//
// The zero value is ready; the reaper process starts with the first
// group and is started again if it has gone away.
type groupReaper struct {
	mu     sync.Mutex
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	groups map[int]bool
}

// add registers a running command's process group.
func (r *groupReaper) add(pgid int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.groups == nil {
		r.groups = map[int]bool{}
	}
	r.groups[pgid] = true
	if r.stdin != nil {
		if _, err := fmt.Fprintf(r.stdin, "+ %d\n", pgid); err == nil {
			return nil
		}
		r.stopLocked() // gone: start a fresh one below
	}
	return r.startLocked()
}

// remove forgets a process group whose command has ended.
func (r *groupReaper) remove(pgid int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.groups, pgid)
	if r.stdin != nil {
		if _, err := fmt.Fprintf(r.stdin, "- %d\n", pgid); err != nil {
			r.stopLocked()
		}
	}
}

// close ends the reaper process: it kills the groups still registered
// (none when every command has ended) and exits.
func (r *groupReaper) close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stopLocked()
}

// startLocked starts the reaper process and registers the live groups.
func (r *groupReaper) startLocked() error {
	cmd := exec.Command("sh", "-c", reaperScript)
	// Its own process group: a Ctrl-C or a signal to the worker's group
	// does not reach it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe() // close-on-exec: no command inherits it
	if err != nil {
		return fmt.Errorf("process-group reaper: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start the process-group reaper: %w", err)
	}
	r.cmd, r.stdin = cmd, stdin
	for pgid := range r.groups {
		if _, err := io.WriteString(stdin, "+ "+strconv.Itoa(pgid)+"\n"); err != nil {
			r.stopLocked()
			return fmt.Errorf("process-group reaper: %w", err)
		}
	}
	return nil
}

func (r *groupReaper) stopLocked() error {
	if r.cmd == nil {
		return nil
	}
	_ = r.stdin.Close()
	err := r.cmd.Wait()
	r.cmd, r.stdin = nil, nil
	if err != nil {
		return fmt.Errorf("process-group reaper: %w", err)
	}
	return nil
}
