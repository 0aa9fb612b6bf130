package workers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/vine"
)

// VineWork does one claimed VINE task. It returns the decisions to record
// (they become "> " lines of the task), or an error: the task is then set
// blocked with the error as a decision, for a human to look at.
type VineWork interface {
	Work(ctx context.Context, task *vine.NodeContext) ([]string, error)
}

// VineWorkFunc adapts a function to VineWork.
type VineWorkFunc func(ctx context.Context, task *vine.NodeContext) ([]string, error)

// Work implements VineWork.
func (f VineWorkFunc) Work(ctx context.Context, task *vine.NodeContext) ([]string, error) {
	return f(ctx, task)
}

// VineAgent runs the VINE sub-agent loop on one graph until its root is
// complete: next → expand references → complete what is ready to complete
// → claim ONE ready task (atomically, across all agents) → work → record
// decisions → set reviewing → repeat. Many agents, in many processes, can
// run it on the same graph at once.
type VineAgent struct {
	// Service is the VINE API (in-process or a NATS client).
	Service trellis.VineService
	// File is the .vine file.
	File string
	// Agent identifies this agent in claims and the history.
	Agent string
	// Work does each task (default: record that the agent did it).
	Work VineWork
	// Poll is the wait when no task is ready but others are in progress
	// (default 50 ms).
	Poll time.Duration
	// MaxTasks ends the run after this many claimed tasks (0 = until the
	// root is complete): 1 makes the agent one of the VINE sub-agents,
	// which do one task and report back.
	MaxTasks int
	// Idle ends the run with ErrStalled when nothing is ready for this long
	// while other tasks stay started (0 waits for ever).
	Idle time.Duration
}

// VineRunReport says what an agent did.
type VineRunReport struct {
	Agent     string        `json:"agent"`
	Claimed   []string      `json:"claimed"`
	Completed []string      `json:"completed"`
	Blocked   []string      `json:"blocked"`
	Expanded  []string      `json:"expanded"`
	Progress  vine.Progress `json:"progress"`
}

// ErrStalled reports a graph no agent can move forward: nothing is ready,
// nothing is in progress, and the root is not complete (blocked tasks need
// a human), or nothing became ready for VineAgent.Idle. Run returns it
// inside a *trellis.Error with code trellis.CodeStalled (CLI exit 8) whose
// message names the blocked tasks and the references that could not be
// expanded.
var ErrStalled = errors.New("graph is stalled")

// Run loops until the root is complete, the graph stalls, or ctx ends.
func (a *VineAgent) Run(ctx context.Context) (*VineRunReport, error) {
	if a.Work == nil {
		a.Work = VineWorkFunc(func(_ context.Context, t *vine.NodeContext) ([]string, error) {
			return []string{"done by " + a.Agent}, nil
		})
	}
	if a.Poll <= 0 {
		a.Poll = 50 * time.Millisecond
	}
	rep := &VineRunReport{Agent: a.Agent, Claimed: []string{}, Completed: []string{}, Blocked: []string{}, Expanded: []string{}}
	file := trellis.VineFileRequest{File: a.File, Agent: a.Agent}
	idleSince := time.Time{}
	unexpandable := map[string]string{} // reference id → why it could not be expanded
	for {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		fr, err := a.Service.VineNext(ctx, file)
		if err != nil {
			return rep, err
		}
		rep.Progress = fr.Progress
		if fr.Progress.RootStatus == string(vine.StatusComplete) {
			return rep, nil
		}
		// Housekeeping: expand references, complete consumed work.
		expanded := false
		for _, ref := range fr.NeedsExpansion {
			_, err := a.Service.VineExpand(ctx, trellis.VineExpandRequest{File: a.File, RefID: ref.ID, ChildFile: ref.URI, Agent: a.Agent})
			switch code := trellis.ErrorCode(err); {
			case err == nil:
				rep.Expanded = append(rep.Expanded, ref.ID)
				expanded = true
				delete(unexpandable, ref.ID)
			case code == trellis.CodeInternal || code == trellis.CodeUnavailable || ctx.Err() != nil:
				return rep, fmt.Errorf("expand %s: %w", ref.ID, err)
			default:
				// Another agent expanded it first (it is no reference any
				// more: the next pass will not list it), or its child file
				// is missing or invalid: go on with the rest of the graph,
				// and report it if the graph stalls on it.
				unexpandable[ref.ID] = trellis.AsError(err).Message
			}
		}
		if expanded {
			continue
		}
		if len(fr.ReadyToComplete) > 0 {
			ops := make([]vine.Op, 0, len(fr.ReadyToComplete))
			for _, n := range fr.ReadyToComplete {
				ops = append(ops, vine.Op{Op: vine.OpSetStatus, ID: n.ID, Status: vine.StatusComplete})
			}
			if res, err := a.Service.VineWrite(ctx, trellis.VineWriteRequest{File: a.File, Operations: ops, Agent: a.Agent}); err == nil {
				for i, n := range fr.ReadyToComplete {
					// Another agent may have completed it first: count
					// only what this write changed.
					if i < len(res.Results) && !res.Results[i].Unchanged {
						rep.Completed = append(rep.Completed, n.ID)
					}
				}
			}
			continue // the frontier changed either way
		}
		claim, err := a.Service.VineClaim(ctx, trellis.VineClaimRequest{File: a.File, Agent: a.Agent})
		if err != nil {
			return rep, err
		}
		if claim.Node == nil && a.MaxTasks > 0 {
			return rep, nil // a sub-agent with nothing to do reports back
		}
		if claim.Node == nil {
			if inProgress(fr.Progress) == 0 && len(fr.ReadyToStart) == 0 {
				return rep, stalled(&fr.Frontier, unexpandable)
			}
			if idleSince.IsZero() {
				idleSince = time.Now()
			} else if a.Idle > 0 && time.Since(idleSince) > a.Idle {
				return rep, &trellis.Error{Code: trellis.CodeStalled, Err: ErrStalled, Message: fmt.Sprintf(
					"the graph did not move for %s: nothing became ready while %d task(s) stay started by other agents (an agent may have died holding one: set it back to notstarted to let another agent take it)",
					a.Idle, inProgress(fr.Progress))}
			}
			select {
			case <-ctx.Done():
				return rep, ctx.Err()
			case <-time.After(a.Poll):
			}
			continue
		}
		idleSince = time.Time{}
		id := claim.Node.Node.ID
		rep.Claimed = append(rep.Claimed, id)
		decisions, werr := a.Work.Work(ctx, claim.Node)
		ops := []vine.Op{}
		status := vine.StatusReviewing
		if werr != nil {
			status = vine.StatusBlocked
			decisions = append(decisions, "blocked: "+oneLine(werr.Error()))
			rep.Blocked = append(rep.Blocked, id)
		}
		if len(decisions) > 0 {
			ops = append(ops, vine.Op{Op: vine.OpUpdate, ID: id, Decisions: decisions})
		}
		ops = append(ops, vine.Op{Op: vine.OpSetStatus, ID: id, Status: status})
		res, err := a.Service.VineWrite(ctx, trellis.VineWriteRequest{File: a.File, Operations: ops, Agent: a.Agent})
		if err != nil {
			return rep, fmt.Errorf("record %s: %w", id, err)
		}
		rep.Progress = res.Progress
		if a.MaxTasks > 0 && len(rep.Claimed) >= a.MaxTasks {
			return rep, nil
		}
	}
}

// stalled describes a graph nothing can move forward: the root, the
// blocked tasks whose dependencies are met (with their last decision: why
// they are blocked), and the references that could not be expanded.
func stalled(fr *vine.Frontier, unexpandable map[string]string) error {
	p := fr.Progress
	var b strings.Builder
	fmt.Fprintf(&b, "the graph cannot move forward: root %s is %s and no task is ready to start or in progress (%d/%d complete)", p.RootID, p.RootStatus, p.Complete, p.Total)
	if len(fr.Blocked) > 0 {
		b.WriteString("; blocked: ")
		for i, n := range fr.Blocked {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(n.ID)
			if len(n.Decisions) > 0 {
				fmt.Fprintf(&b, " (%s)", clip(n.Decisions[len(n.Decisions)-1], 120))
			}
		}
	} else if n := p.ByStatus[string(vine.StatusBlocked)]; n > 0 {
		fmt.Fprintf(&b, "; %d blocked task(s)", n)
	}
	if len(fr.NeedsExpansion) > 0 {
		b.WriteString("; references that cannot be expanded: ")
		for i, n := range fr.NeedsExpansion {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%s (%s", n.ID, n.URI)
			if why := unexpandable[n.ID]; why != "" {
				fmt.Fprintf(&b, ": %s", clip(why, 160))
			}
			b.WriteString(")")
		}
	}
	b.WriteString("; fix the cause, set blocked tasks back to notstarted (set_status), and run again")
	return &trellis.Error{Code: trellis.CodeStalled, Message: b.String(), Err: ErrStalled}
}

// clip shortens s to one line of at most n bytes.
func clip(s string, n int) string {
	s = oneLine(s)
	if len(s) > n {
		s = strings.ToValidUTF8(s[:n], "") + "..."
	}
	return s
}

// inProgress counts tasks someone is working on.
func inProgress(p vine.Progress) int {
	return p.ByStatus[string(vine.StatusStarted)]
}

func oneLine(s string) string {
	s = strings.TrimSpace(strings.ReplaceAll(s, "\n", " "))
	if len(s) > 500 {
		s = s[:500] + "..."
	}
	return strings.ToValidUTF8(s, "?")
}

// VineExec does a VINE task by running a shell command: the task with its
// resolved dependencies as JSON on stdin, TRELLIS_VINE_FILE and
// TRELLIS_VINE_TASK in the environment. Exit 0: every stdout line starting
// with "> " is a decision. Non-zero: the task is blocked with the stderr
// tail.
type VineExec struct {
	Command string
	File    string
}

// Work implements VineWork.
func (e *VineExec) Work(ctx context.Context, task *vine.NodeContext) ([]string, error) {
	packet, err := json.Marshal(task)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, "sh", "-c", e.Command)
	cmd.Env = append(os.Environ(), "TRELLIS_VINE_FILE="+e.File, "TRELLIS_VINE_TASK="+task.Node.ID)
	cmd.Stdin = bytes.NewReader(packet)
	stdout, stderr := &tailBuffer{max: 64 << 10}, &tailBuffer{max: tailBytes}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return nil, errors.New(msg)
	}
	var decisions []string
	for _, line := range strings.Split(stdout.String(), "\n") {
		if d, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), "> "); ok && strings.TrimSpace(d) != "" {
			decisions = append(decisions, strings.TrimSpace(d))
		}
	}
	return decisions, nil
}
