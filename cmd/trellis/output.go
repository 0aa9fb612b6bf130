package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/trellis/trellis"
)

// call opens a session for one command, runs fn, and prints its result:
// as JSON with --json (or when there is no human form), else through human.
func (a *app) call(cmd *cobra.Command, asJSON bool, fn func(ctx context.Context, s *session) (any, error), human func(any)) error {
	s, err := a.openSession(cmd.Context())
	if err != nil {
		return err
	}
	defer s.close()
	res, err := fn(cmd.Context(), s)
	if err != nil {
		return err
	}
	if asJSON || human == nil {
		return printJSON(a.stdout, res)
	}
	human(res)
	return nil
}

// printJSON writes v as indented JSON and a newline.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// printTask writes a task packet for people.
func printTask(w io.Writer, t *trellis.Task) {
	if t.Duplicate {
		fmt.Fprintf(w, "Not added: unique key %q is held by this task (duplicate)\n", t.UniqueKey)
	}
	fmt.Fprintf(w, "Task %s  [%s]  queue=%s  priority=%d\n", t.TaskID, t.Status, t.Queue, t.Priority)
	fmt.Fprintf(w, "  Objective:  %s\n", t.Objective)
	if t.RunAt != nil {
		fmt.Fprintf(w, "  Run at:     %s\n", t.RunAt.Format(time.RFC3339))
	}
	if len(t.After) > 0 {
		fmt.Fprintf(w, "  After:      %s\n", strings.Join(t.After, ", "))
	}
	if len(t.WaitingFor) > 0 {
		fmt.Fprintf(w, "  Waiting for: %s\n", strings.Join(t.WaitingFor, ", "))
	}
	for _, p := range t.Prerequisites {
		fmt.Fprintf(w, "  Prerequisite %s done: %s\n", p.TaskID, p.WhatWasDone)
	}
	if t.UniqueKey != "" {
		fmt.Fprintf(w, "  Unique key: %s\n", t.UniqueKey)
	}
	if t.ConcurrencyKey != "" {
		fmt.Fprintf(w, "  Concurrency key: %s\n", t.ConcurrencyKey)
	}
	if c := t.CancelRequested; c != nil && t.Status != trellis.StatusCancelled {
		fmt.Fprintf(w, "  Cancel requested by %s: %s (its worker stops it at the next heartbeat)\n", c.By, c.Reason)
	}
	if c := t.Cancellation; c != nil {
		fmt.Fprintf(w, "  Cancelled by %s: %s\n", c.By, c.Reason)
	}
	if len(t.Inputs) > 0 {
		fmt.Fprintf(w, "  Inputs:     %s\n", strings.Join(t.Inputs, ", "))
	}
	if t.Acceptance != "" {
		fmt.Fprintf(w, "  Acceptance: %s\n", t.Acceptance)
	}
	fmt.Fprintf(w, "  Budget:     %d tool calls, %d steps\n", t.Budget.MaxToolCalls, t.Budget.MaxSteps)
	if t.ParentID != nil {
		fmt.Fprintf(w, "  Parent:     %s\n", *t.ParentID)
	}
	if len(t.Metadata) > 0 {
		keys := make([]string, 0, len(t.Metadata))
		for k := range t.Metadata {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(w, "  Metadata:   %s=%s\n", k, t.Metadata[k])
		}
	}
	if t.ClaimedBy != "" {
		fmt.Fprintf(w, "  Claimed by: %s (attempt %d)\n", t.ClaimedBy, t.Attempts)
		if l := t.Lease; l != nil && l.ExpiresAt != nil && t.Status == trellis.StatusClaimed {
			fmt.Fprintf(w, "  Lease:      until %s (heartbeat with queue heartbeat %s)\n", l.ExpiresAt.Format(time.RFC3339), t.TaskID)
		}
	}
	fmt.Fprintf(w, "  Created:    %s   Updated: %s\n", t.CreatedAt.Format(time.RFC3339), t.UpdatedAt.Format(time.RFC3339))
	if cp := t.Checkpoint; cp != nil {
		fmt.Fprintf(w, "  What was done: %s\n", cp.WhatWasDone)
		if cp.Error != "" {
			fmt.Fprintf(w, "  Error:      %s\n", cp.Error)
		}
		if len(cp.WhatChanged) > 0 {
			fmt.Fprintf(w, "  Changed:    %s\n", strings.Join(cp.WhatChanged, ", "))
		}
		if cp.WhatNext != "" {
			fmt.Fprintf(w, "  Next:       %s\n", cp.WhatNext)
		}
		if len(cp.Blockers) > 0 {
			fmt.Fprintf(w, "  Blockers:   %s\n", strings.Join(cp.Blockers, "; "))
		}
		if len(cp.Citations) > 0 {
			fmt.Fprintf(w, "  Citations:  %s\n", strings.Join(cp.Citations, ", "))
		}
		fmt.Fprintf(w, "  Usage:      %d steps, %d tool calls\n", cp.Usage.StepsUsed, cp.Usage.ToolCallsUsed)
	}
	if t.BudgetExhausted {
		fmt.Fprintln(w, "  BUDGET EXHAUSTED")
	}
}

// printList writes the board for people: a header row over aligned
// columns ("-" for no claimant), then the counts per queue.
func printList(w io.Writer, l *trellis.TaskList) {
	if len(l.Tasks) == 0 {
		fmt.Fprintln(w, "no tasks")
	} else {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "TASK ID\tSTATUS\tQUEUE\tCLAIMED BY\tOBJECTIVE")
		for _, r := range l.Tasks {
			obj := strings.Join(strings.Fields(r.Objective), " ") // one line
			if len(obj) > 60 {
				obj = strings.ToValidUTF8(obj[:57], "") + "..."
			}
			by := r.ClaimedBy
			if by == "" {
				by = "-"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.TaskID, r.Status, r.Queue, by, obj)
		}
		_ = tw.Flush()
	}
	queues := make([]string, 0, len(l.Counts))
	for q := range l.Counts {
		queues = append(queues, q)
	}
	sort.Strings(queues)
	for _, q := range queues {
		var parts []string
		for _, s := range trellis.Statuses() {
			if n := l.Counts[q][s]; n > 0 {
				parts = append(parts, fmt.Sprintf("%s=%d", s, n))
			}
		}
		fmt.Fprintf(w, "queue %s: %s\n", q, strings.Join(parts, " "))
	}
	if l.NextCursor != "" {
		fmt.Fprintf(w, "more: --cursor %s\n", l.NextCursor)
	}
}
