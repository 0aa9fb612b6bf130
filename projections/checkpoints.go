package projections

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/taskqueue"
)

// Checkpoints writes the Markdown checkpoint of every finished task
// to <dir>/<task_id>.md. Rendering depends only on the finishing event, so
// applying an event twice rewrites the same bytes.
type Checkpoints struct {
	dir     string
	posPath string
}

// NewCheckpoints returns the projection writing into dir and keeping its
// position in posDir/checkpoints.pos.
func NewCheckpoints(dir, posDir string) *Checkpoints {
	return &Checkpoints{dir: dir, posPath: filepath.Join(posDir, "checkpoints.pos")}
}

// Dir is where the Markdown files are written.
func (c *Checkpoints) Dir() string { return c.dir }

// Path is the checkpoint file of a task. Callers with an id from outside
// (the log, a request) use SafePath.
func (c *Checkpoints) Path(taskID string) string { return filepath.Join(c.dir, taskID+".md") }

// SafePath is the checkpoint file of a task, or an error wrapping
// events.ErrBadEvent when the id is not a task id (a ULID) and so could
// name a file elsewhere: ids read from the log are untrusted (anyone who
// could publish on the stream chose them), and this is where the id
// becomes a path.
func (c *Checkpoints) SafePath(taskID string) (string, error) {
	if err := trellis.ValidateTaskID("aggregate_id", taskID); err != nil {
		return "", fmt.Errorf("checkpoint of %q: %w: %w", taskID, events.ErrBadEvent, err)
	}
	p := c.Path(taskID)
	if filepath.Dir(p) != filepath.Clean(c.dir) {
		return "", fmt.Errorf("checkpoint of %q would leave %s: %w", taskID, c.dir, events.ErrBadEvent)
	}
	return p, nil
}

// Name implements Projection.
func (c *Checkpoints) Name() string { return "checkpoints" }

// Stream implements Projection.
func (c *Checkpoints) Stream() string { return events.StreamQueue }

// Load implements Projection.
func (c *Checkpoints) Load() (uint64, error) {
	data, err := os.ReadFile(c.posPath)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	seq, err := strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("checkpoint position %s is corrupt: %w", c.posPath, err)
	}
	return seq, nil
}

// Apply implements Projection.
func (c *Checkpoints) Apply(rec events.Recorded) error {
	var cp trellis.Checkpoint
	var status trellis.Status
	var worker string
	for _, id := range taskqueue.PrunedTasks(rec) {
		if err := c.remove(id); err != nil {
			return err
		}
	}
	switch rec.Type {
	case taskqueue.Completed:
		var p taskqueue.CompletedPayload
		if err := rec.DecodePayload(&p); err != nil {
			return err
		}
		status, worker = trellis.StatusDone, p.Worker
		cp = trellis.Checkpoint{WhatWasDone: p.WhatWasDone, WhatChanged: p.WhatChanged, WhatNext: p.WhatNext,
			Blockers: p.Blockers, Citations: p.Citations, BudgetExhausted: p.BudgetExhausted, Usage: p.Usage}
	case taskqueue.Failed:
		var p taskqueue.FailedPayload
		if err := rec.DecodePayload(&p); err != nil {
			return err
		}
		status, worker = trellis.StatusFailed, p.Worker
		cp = trellis.Checkpoint{WhatWasDone: p.WhatWasDone, Blockers: p.Blockers, Error: p.Error,
			BudgetExhausted: p.BudgetExhausted, Usage: p.Usage}
	case taskqueue.Dead:
		var p taskqueue.AttemptFailedPayload
		if err := rec.DecodePayload(&p); err != nil {
			return err
		}
		status, worker = trellis.StatusDead, p.Worker
		cp = trellis.Checkpoint{WhatWasDone: p.WhatWasDone, Blockers: p.Blockers, Error: p.Error,
			BudgetExhausted: p.BudgetExhausted, Usage: p.Usage}
	case taskqueue.Pruned:
		if !taskqueue.IsTaskSubject(rec.Subject) {
			return nil // a prune record: its tasks were dropped above
		}
		return c.remove(rec.AggregateID)
	default:
		return nil
	}
	cp.CreatedAt = rec.Time
	path, err := c.SafePath(rec.AggregateID)
	if err != nil {
		return err
	}
	return WriteFileAtomic(path, []byte(RenderCheckpoint(rec.AggregateID, status, worker, cp)))
}

// remove deletes a pruned task's checkpoint file (see retention/): it is
// in the archive.
func (c *Checkpoints) remove(taskID string) error {
	path, err := c.SafePath(taskID)
	if err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// Save implements Projection.
func (c *Checkpoints) Save(seq uint64) error {
	return WriteFileAtomic(c.posPath, []byte(strconv.FormatUint(seq, 10)+"\n"))
}

// Reset implements Projection: removes every checkpoint file and the
// position.
func (c *Checkpoints) Reset() error {
	entries, err := os.ReadDir(c.dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".md") {
			if err := os.Remove(filepath.Join(c.dir, e.Name())); err != nil {
				return err
			}
		}
	}
	if err := os.Remove(c.posPath); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// RenderCheckpoint renders a checkpoint in the Markdown checkpoint format.
func RenderCheckpoint(taskID string, status trellis.Status, worker string, cp trellis.Checkpoint) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Checkpoint: %s\n\n", taskID)
	fmt.Fprintf(&b, "**Created:** %s\n", cp.CreatedAt.UTC().Format(time.RFC3339))
	fmt.Fprintf(&b, "**Status:** %s\n", status)
	if worker != "" {
		fmt.Fprintf(&b, "**Worker:** %s\n", worker)
	}
	fmt.Fprintf(&b, "**Usage:** %d steps, %d tool calls\n", cp.Usage.StepsUsed, cp.Usage.ToolCallsUsed)
	if cp.BudgetExhausted {
		b.WriteString("**Budget exhausted:** yes\n")
	}
	b.WriteString("\n## What Was Done\n\n")
	b.WriteString(orNone(cp.WhatWasDone))
	b.WriteString("\n\n## What Changed\n\n")
	b.WriteString(bullets(cp.WhatChanged))
	b.WriteString("\n## What's Next\n\n")
	b.WriteString(orNone(cp.WhatNext))
	b.WriteString("\n\n## Blockers/Errors\n\n")
	var blockers []string
	if cp.Error != "" {
		blockers = append(blockers, "Error: "+cp.Error)
	}
	if cp.BudgetExhausted {
		blockers = append(blockers, "Budget exhausted")
	}
	b.WriteString(bullets(append(blockers, cp.Blockers...)))
	b.WriteString("\n## Citations Used\n\n")
	b.WriteString(bullets(cp.Citations))
	return b.String()
}

func orNone(s string) string {
	if strings.TrimSpace(s) == "" {
		return "None"
	}
	return strings.TrimRight(s, "\n")
}

func bullets(items []string) string {
	if len(items) == 0 {
		return "- None\n"
	}
	var b strings.Builder
	for _, it := range items {
		b.WriteString("- ")
		b.WriteString(strings.ReplaceAll(strings.TrimRight(it, "\n"), "\n", "\n  "))
		b.WriteString("\n")
	}
	return b.String()
}
