package workers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
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
}

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
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = e.KillDelay
	if cmd.WaitDelay <= 0 {
		cmd.WaitDelay = 5 * time.Second
	}
	runErr := cmd.Run()
	if cmd.Process != nil {
		// Whatever the command left behind in its group goes too.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
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
