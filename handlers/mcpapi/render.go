package mcpapi

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/trellis/trellis"
)

// renderTask writes the task packet as text an agent can act on: a header
// line, the packet's fields in the packet's order, and the checkpoint (in the
// seed's checkpoint sections) once the task has one.
func renderTask(b *strings.Builder, t *trellis.Task) {
	fmt.Fprintf(b, "Task %s [%s] in queue %s\n", t.TaskID, t.Status, t.Queue)
	if t.ParentID != nil {
		fmt.Fprintf(b, "Parent: %s\n", *t.ParentID)
	}
	fmt.Fprintf(b, "Objective: %s\n", t.Objective)
	fmt.Fprintf(b, "Inputs: %s\n", list(t.Inputs))
	if t.Acceptance != "" {
		fmt.Fprintf(b, "Acceptance: %s\n", t.Acceptance)
	}
	fmt.Fprintf(b, "Budget: max_tool_calls %d, max_steps %d\n", t.Budget.MaxToolCalls, t.Budget.MaxSteps)
	if len(t.Metadata) > 0 {
		keys := slices.Sorted(maps.Keys(t.Metadata))
		pairs := make([]string, len(keys))
		for i, k := range keys {
			pairs[i] = k + "=" + t.Metadata[k]
		}
		fmt.Fprintf(b, "Metadata: %s\n", strings.Join(pairs, ", "))
	}
	fmt.Fprintf(b, "Attempts: %d of %d\n", t.Attempts, t.MaxAttempts)
	if t.ClaimedBy != "" {
		fmt.Fprintf(b, "Claimed by: %s", t.ClaimedBy)
		if t.ClaimedAt != nil {
			fmt.Fprintf(b, " at %s", stamp(*t.ClaimedAt))
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(b, "Created: %s; updated: %s\n", stamp(t.CreatedAt), stamp(t.UpdatedAt))
	if t.BudgetExhausted {
		b.WriteString("Budget exhausted: yes\n")
	}
	if c := t.Checkpoint; c != nil {
		fmt.Fprintf(b, "\nCheckpoint (%s)\n", stamp(c.CreatedAt))
		if c.Error != "" {
			fmt.Fprintf(b, "Error: %s\n", c.Error)
		}
		fmt.Fprintf(b, "What was done: %s\n", orNone(c.WhatWasDone))
		fmt.Fprintf(b, "What changed: %s\n", list(c.WhatChanged))
		fmt.Fprintf(b, "What's next: %s\n", orNone(c.WhatNext))
		fmt.Fprintf(b, "Blockers: %s\n", list(c.Blockers))
		fmt.Fprintf(b, "Citations: %s\n", list(c.Citations))
		fmt.Fprintf(b, "Usage: %d steps, %d tool calls\n", c.Usage.StepsUsed, c.Usage.ToolCallsUsed)
	}
}

// renderList writes the board listing: one line per task, oldest first,
// then the counts per queue and status.
func renderList(b *strings.Builder, l *trellis.TaskList) {
	switch len(l.Tasks) {
	case 0:
		b.WriteString("No tasks match.\n")
	case 1:
		b.WriteString("1 task:\n")
	default:
		fmt.Fprintf(b, "%d tasks:\n", len(l.Tasks))
	}
	for _, r := range l.Tasks {
		fmt.Fprintf(b, "- %s [%s] queue %s, attempts %d", r.TaskID, r.Status, r.Queue, r.Attempts)
		if r.ClaimedBy != "" {
			fmt.Fprintf(b, ", claimed by %s", r.ClaimedBy)
		}
		if r.BudgetExhausted {
			b.WriteString(", budget exhausted")
		}
		fmt.Fprintf(b, ": %s\n", oneLine(r.Objective, 120))
	}
	if l.NextCursor != "" {
		fmt.Fprintf(b, "More tasks match: call queue_list again with cursor %q.\n", l.NextCursor)
	}
	if len(l.Counts) == 0 {
		return
	}
	b.WriteString("Counts:\n")
	for _, q := range slices.Sorted(maps.Keys(l.Counts)) {
		var parts []string
		for _, s := range trellis.Statuses() {
			if n := l.Counts[q][s]; n > 0 {
				parts = append(parts, fmt.Sprintf("%s %d", s, n))
			}
		}
		fmt.Fprintf(b, "- %s: %s\n", q, orNone(strings.Join(parts, ", ")))
	}
}

func list(items []string) string {
	if len(items) == 0 {
		return "none"
	}
	return strings.Join(items, ", ")
}

func orNone(s string) string {
	if strings.TrimSpace(s) == "" {
		return "none"
	}
	return s
}

// oneLine folds s onto one line and cuts it to at most n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }
