package workers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/trellis/trellis"
)

// tailBytes is how much of a command's stdout and stderr is kept.
const tailBytes = 4096

// Exec runs a shell command per task: the task packet as JSON on stdin,
// TRELLIS_TASK_ID, TRELLIS_QUEUE and TRELLIS_ATTEMPT in the environment.
// Exit 0 finishes the task: if the last non-empty stdout line is a JSON
// object, its fields (what_was_done, what_changed, what_next, blockers,
// citations, steps_used, tool_calls_used) fill the checkpoint; otherwise
// the stdout tail is what_was_done. A non-zero exit is a failed attempt
// with the stderr tail as the error. On cancellation the command's process
// group gets SIGTERM, then SIGKILL after KillDelay.
//
// The command and everything it starts die with the worker, even when the
// worker is killed with SIGKILL (Linux): the command runs in a process
// group of its own with a parent-death signal (SIGKILL), and a small
// reaper process kills the groups of the commands still running once the
// worker is gone (see groupReaper). Close ends the reaper.
type Exec struct {
	// Command is run with `sh -c`.
	Command string
	// Dir is the working directory (default: the current one).
	Dir string
	// Env is added to the worker's own environment.
	Env []string
	// KillDelay is how long a cancelled command has between SIGTERM and
	// SIGKILL (default 5 s).
	KillDelay time.Duration

	reaper groupReaper
}

// Close stops the process-group reaper; call it when no command runs any
// more (after the pool's Run returns).
func (e *Exec) Close() error { return e.reaper.close() }

// execReport is the optional JSON object on the last stdout line.
type execReport struct {
	WhatWasDone   string   `json:"what_was_done"`
	WhatChanged   []string `json:"what_changed"`
	WhatNext      string   `json:"what_next"`
	Blockers      []string `json:"blockers"`
	Citations     []string `json:"citations"`
	StepsUsed     int      `json:"steps_used"`
	ToolCallsUsed int      `json:"tool_calls_used"`
}

// Handle implements Handler.
func (e *Exec) Handle(ctx context.Context, task *trellis.Task, _ *Progress) (*trellis.Checkpoint, error) {
	packet, err := json.Marshal(task)
	if err != nil {
		return nil, fmt.Errorf("encode task packet: %w", err)
	}
	cmd := exec.CommandContext(ctx, "sh", "-c", e.Command)
	cmd.Dir = e.Dir
	cmd.Env = append(append(os.Environ(), e.Env...),
		"TRELLIS_TASK_ID="+task.TaskID,
		"TRELLIS_QUEUE="+task.Queue,
		"TRELLIS_ATTEMPT="+strconv.Itoa(task.Attempts),
	)
	cmd.Stdin = bytes.NewReader(packet)
	stdout, stderr := &tailBuffer{max: 64 << 10}, &tailBuffer{max: tailBytes}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	// Its own process group (so the whole group can be signalled), and
	// SIGKILL when the thread that started it dies (see run).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = e.KillDelay
	if cmd.WaitDelay <= 0 {
		cmd.WaitDelay = 5 * time.Second
	}
	runErr := e.run(cmd)
	if ctx.Err() != nil {
		return nil, fmt.Errorf("command cancelled: %w", ctx.Err())
	}
	if runErr != nil {
		msg := strings.TrimSpace(stderr.String())
		var exitErr *exec.ExitError
		switch {
		case errors.As(runErr, &exitErr) && msg != "":
			msg = fmt.Sprintf("%s (exit status %d)", msg, exitErr.ExitCode())
		case msg == "":
			msg = runErr.Error()
		}
		return nil, errors.New(msg)
	}
	return parseReport(stdout.String()), nil
}

// run starts the command, registers its process group with the reaper,
// waits for it, then kills whatever it left behind in its group.
//
// The parent-death signal is tied to the OS thread that forks the child,
// not to the process: Linux sends it when that thread exits. Go exits an
// OS thread only when a goroutine locked to it ends without unlocking,
// which could be any goroutine that later runs on the thread that forked
// our child. Holding this goroutine locked to its thread from Start until
// Wait returns keeps that thread ours (nothing else runs on it, so nothing
// can end it) for the child's whole life; unlocking afterwards returns it
// to the scheduler intact. The cost is one OS thread per running command,
// which Wait would occupy anyway.
func (e *Exec) run(cmd *exec.Cmd) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cmd.Start(); err != nil {
		return err
	}
	pgid := cmd.Process.Pid
	if err := e.reaper.add(pgid); err != nil {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		_ = cmd.Wait()
		return err
	}
	err := cmd.Wait()
	// Whatever the command left behind in its group goes too.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	e.reaper.remove(pgid)
	return err
}

// parseReport builds the checkpoint from a successful command's stdout.
func parseReport(out string) *trellis.Checkpoint {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	if strings.HasPrefix(last, "{") {
		var r execReport
		dec := json.NewDecoder(strings.NewReader(last))
		if dec.Decode(&r) == nil {
			return &trellis.Checkpoint{
				WhatWasDone: r.WhatWasDone, WhatChanged: r.WhatChanged, WhatNext: r.WhatNext,
				Blockers: r.Blockers, Citations: r.Citations,
				Usage: trellis.Usage{StepsUsed: r.StepsUsed, ToolCallsUsed: r.ToolCallsUsed},
			}
		}
	}
	what := strings.TrimSpace(out)
	if len(what) > tailBytes {
		what = what[len(what)-tailBytes:]
	}
	if what == "" {
		what = "command exited 0"
	}
	return &trellis.Checkpoint{WhatWasDone: strings.ToValidUTF8(what, "?")}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return strings.ToValidUTF8(string(t.buf), "?") }
