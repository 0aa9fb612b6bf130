package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/vine"
)

// writeHelp is `vine write`'s long help: every operation with its
// arguments and effect, made from vine.Ops.
func writeHelp() string {
	var b strings.Builder
	b.WriteString(`Applies a list of operations to the graph as ONE atomic batch: they run in order, the result is
validated once at the end (no cycles, no islands, known dependencies), and on any error nothing is
recorded and the file is left byte for byte as it was. On success the file is rewritten in canonical
form. Each operation is a JSON object with "op" and only that operation's arguments ("?" marks an
optional one):

`)
	for _, s := range vine.Ops() {
		fmt.Fprintf(&b, "  %s\n      %s\n", s.Signature(), s.Effect)
	}
	b.WriteString("\nArgument values:\n")
	for _, f := range vine.OpArgumentForms() {
		fmt.Fprintf(&b, "  %s\n", f)
	}
	b.WriteString("\nReferenced and extracted files must lie inside the workspace roots. With --json: {\"graph_id\",\n\"summary\", \"results\", \"progress\", \"frontier\", \"written\"}.")
	return b.String()
}

// claimOutput is `vine claim --json`: the claimed task and its resolved
// dependencies (as before graph_id was added, so `.task.id` still works),
// the graph id and the progress; task is null when nothing was claimed.
type claimOutput struct {
	GraphID              string                    `json:"graph_id"`
	Task                 *vine.Node                `json:"task"`
	ResolvedDependencies []vine.ResolvedDependency `json:"resolved_dependencies"`
	Progress             vine.Progress             `json:"progress"`
}

func newClaimOutput(res *trellis.VineClaimResult) claimOutput {
	out := claimOutput{GraphID: res.GraphID, ResolvedDependencies: []vine.ResolvedDependency{}, Progress: res.Progress}
	if res.Node != nil {
		out.Task = &res.Node.Node
		if res.Node.ResolvedDependencies != nil {
			out.ResolvedDependencies = res.Node.ResolvedDependencies
		}
	}
	return out
}

// printClaim writes a claim for people.
func printClaim(w io.Writer, res *trellis.VineClaimResult) {
	p := res.Progress
	if res.Node == nil {
		fmt.Fprintf(w, "nothing claimed: no task is ready to start (graph %s: %d/%d complete, root %s: %s)\n",
			res.GraphID, p.Complete, p.Total, p.RootID, p.RootStatus)
		return
	}
	t := res.Node.Node
	fmt.Fprintf(w, "claimed %s: %s (now %s)\n", t.ID, t.ShortName, t.Status)
	if t.Description != "" {
		fmt.Fprintf(w, "  %s\n", indent(t.Description, "  "))
	}
	for _, d := range res.Node.ResolvedDependencies {
		fmt.Fprintf(w, "  depends on %s (%s)\n", d.ID, orDash(string(d.Status)))
		for _, dec := range d.Decisions {
			fmt.Fprintf(w, "    > %s\n", dec)
		}
	}
	fmt.Fprintf(w, "graph %s: %d/%d complete (%d%%)\n", res.GraphID, p.Complete, p.Total, p.Percentage)
}

// printRead writes a read query's answer for people. The answer arrives
// typed in-process and as plain JSON values over NATS, so it is decoded
// again into the action's type.
func printRead(w io.Writer, res *trellis.VineReadResult) error {
	decode := func(dst any) error {
		data, err := json.Marshal(res.Result)
		if err != nil {
			return err
		}
		return json.Unmarshal(data, dst)
	}
	switch res.Action {
	case vine.ReadSummary:
		var s vine.Summary
		if err := decode(&s); err != nil {
			return err
		}
		title := ""
		if s.Title != "" {
			title = fmt.Sprintf(" %q", s.Title)
		}
		fmt.Fprintf(w, "graph %s%s\n", res.GraphID, title)
		fmt.Fprintf(w, "  root:      %s: %s (%s)\n", s.RootID, s.RootName, s.RootStatus)
		fmt.Fprintf(w, "  nodes:     %d (%d leaves, %d references)\n", s.Total, s.LeafCount, s.RefCount)
		fmt.Fprintf(w, "  by status: %s\n", byStatus(s.ByStatus))
	case vine.ReadList, vine.ReadSearch, vine.ReadRefs:
		var nodes []vine.Node
		if err := decode(&nodes); err != nil {
			return err
		}
		fmt.Fprintf(w, "%d node(s) in graph %s\n", len(nodes), res.GraphID)
		for _, n := range nodes {
			printNodeLine(w, n.ID, statusOf(n.Kind, n.Status), n.ShortName, n.URI)
		}
	case vine.ReadDescendants:
		var nodes []vine.NodeSummary
		if err := decode(&nodes); err != nil {
			return err
		}
		fmt.Fprintf(w, "%d node(s) depend on it, directly or not, in graph %s\n", len(nodes), res.GraphID)
		for _, n := range nodes {
			printNodeLine(w, n.ID, statusOf(n.Kind, n.Status), n.ShortName, "")
		}
	case vine.ReadTask:
		var n vine.Node
		if err := decode(&n); err != nil {
			return err
		}
		printNode(w, n)
	case vine.ReadContext:
		var c vine.NodeContext
		if err := decode(&c); err != nil {
			return err
		}
		printNode(w, c.Node)
		if len(c.ResolvedDependencies) == 0 {
			fmt.Fprintln(w, "dependencies: none")
		} else {
			fmt.Fprintln(w, "dependencies:")
		}
		for _, d := range c.ResolvedDependencies {
			printNodeLine(w, d.ID, statusOf(d.Kind, d.Status), d.ShortName, d.URI)
			for _, dec := range d.Decisions {
				fmt.Fprintf(w, "      > %s\n", dec)
			}
			for _, at := range d.Attachments {
				fmt.Fprintf(w, "      @%s %s %s\n", at.Class, at.Mime, at.URI)
			}
		}
		if len(c.Dependants) == 0 {
			fmt.Fprintln(w, "dependants: none")
		} else {
			fmt.Fprintln(w, "dependants:")
		}
		for _, d := range c.Dependants {
			printNodeLine(w, d.ID, statusOf(d.Kind, d.Status), d.ShortName, "")
		}
	case vine.ReadValidate:
		var r vine.ValidationReport
		if err := decode(&r); err != nil {
			return err
		}
		fmt.Fprintf(w, "valid: graph %s, %d nodes\n", res.GraphID, r.Total)
	default:
		return printJSON(w, res)
	}
	return nil
}

// printNode writes one node in full.
func printNode(w io.Writer, n vine.Node) {
	if n.IsRef() {
		fmt.Fprintf(w, "ref %s: %s -> %s\n", n.ID, n.ShortName, n.URI)
	} else {
		fmt.Fprintf(w, "%s: %s (%s)\n", n.ID, n.ShortName, n.Status)
	}
	if len(n.Annotations) > 0 {
		keys := make([]string, 0, len(n.Annotations))
		for k := range n.Annotations {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(w, "  @%s(%s)\n", k, strings.Join(n.Annotations[k], ","))
		}
	}
	if n.Description != "" {
		fmt.Fprintf(w, "  %s\n", indent(n.Description, "  "))
	}
	if len(n.Dependencies) > 0 {
		fmt.Fprintf(w, "  depends on: %s\n", strings.Join(n.Dependencies, ", "))
	}
	for _, d := range n.Decisions {
		fmt.Fprintf(w, "  > %s\n", d)
	}
	for _, at := range n.Attachments {
		fmt.Fprintf(w, "  @%s %s %s\n", at.Class, at.Mime, at.URI)
	}
}

func printNodeLine(w io.Writer, id, status, name, uri string) {
	if uri != "" {
		name += " -> " + uri
	}
	fmt.Fprintf(w, "  %-24s %-11s %s\n", id, status, name)
}

func statusOf(k vine.Kind, s vine.Status) string {
	if k == vine.KindRef {
		return "ref"
	}
	return orDash(string(s))
}

func byStatus(m map[string]int) string {
	var parts []string
	for _, s := range vine.Statuses() {
		parts = append(parts, fmt.Sprintf("%s %d", s, m[string(s)]))
	}
	if n, ok := m["ref"]; ok {
		parts = append(parts, fmt.Sprintf("ref %d", n))
	}
	return strings.Join(parts, ", ")
}

func indent(s, prefix string) string {
	return strings.ReplaceAll(s, "\n", "\n"+prefix)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// stalledNote explains a frontier no agent can move forward, or is empty.
func stalledNote(fr *vine.Frontier) string {
	p := fr.Progress
	if p.RootStatus == string(vine.StatusComplete) || len(fr.ReadyToStart) > 0 || len(fr.ReadyToComplete) > 0 ||
		len(fr.NeedsExpansion) > 0 || p.ByStatus[string(vine.StatusStarted)] > 0 {
		return ""
	}
	return "stalled: the root is not complete and no task is ready or in progress; blocked tasks need a human " +
		"(fix the cause, then set them back to notstarted with vine write)"
}
