package mcpapi

import (
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/vine"
)

// frontierResult is vine_next's result: the frontier with the graph's id
// as structured content and, as text, the progress, the frontier's lists
// and what to do next.
func frontierResult(fr *trellis.VineFrontier) *mcp.CallToolResult {
	var b strings.Builder
	renderFrontier(&b, &fr.Frontier)
	return structured(b.String(), fr)
}

// readResult is vine_read's result: the query's answer as structured
// content and a one-line account as text.
func readResult(res *trellis.VineReadResult) *mcp.CallToolResult {
	return structured(describeRead(res), res)
}

// writeResult is the result of vine_write and vine_expand: the applied
// batch as structured content and, as text, lead followed by the progress
// and the next step.
func writeResult(lead string, res *trellis.VineWriteResult) *mcp.CallToolResult {
	out := *res
	if out.Results == nil {
		out.Results = []vine.OpResult{}
	}
	if out.Written == nil {
		out.Written = []string{}
	}
	var b strings.Builder
	b.WriteString(lead)
	b.WriteString("\n")
	renderFrontier(&b, &out.Frontier)
	return structured(b.String(), &out)
}

// claimResult is vine_claim's result: the claimed task with its context, or
// task null when nothing is ready.
func claimResult(agent string, res *trellis.VineClaimResult) *mcp.CallToolResult {
	var b strings.Builder
	tc := res.Node
	if tc == nil {
		fmt.Fprintf(&b, "No task is ready to start: nothing was claimed. %s\n", progressLine(res.Progress))
		b.WriteString("Complete what vine_next lists as ready_to_complete, expand what needs_expansion lists, or stop and report the progress.")
		return structured(b.String(), res)
	}
	t := tc.Node
	fmt.Fprintf(&b, "Claimed task %s (%s) as agent %s: it is now started.\n", t.ID, t.ShortName, agent)
	if d := strings.TrimSpace(t.Description); d != "" {
		fmt.Fprintf(&b, "Description: %s\n", oneLine(d, 400))
	}
	if len(tc.ResolvedDependencies) == 0 {
		b.WriteString("Dependencies: none\n")
	} else {
		b.WriteString("Dependencies (your inputs):\n")
		for _, d := range tc.ResolvedDependencies {
			fmt.Fprintf(&b, "- %s (%s) [%s]", d.ID, d.ShortName, orNone(string(d.Status)))
			if len(d.Decisions) > 0 {
				fmt.Fprintf(&b, "; decisions: %s", oneLine(strings.Join(d.Decisions, " | "), 300))
			}
			for _, a := range d.Attachments {
				fmt.Fprintf(&b, "; @%s %s %s", a.Class, a.Mime, a.URI)
			}
			b.WriteString("\n")
		}
	}
	fmt.Fprintf(&b, "%s\n", progressLine(res.Progress))
	fmt.Fprintf(&b, "Work on this task only. Then call vine_write with [{\"op\":\"update\",\"id\":%q,\"decisions\":[...]},{\"op\":\"set_status\",\"id\":%q,\"status\":\"reviewing\"}] "+
		"- or set status blocked with a decision saying why.", t.ID, t.ID)
	return structured(b.String(), res)
}

// structured is a successful result with structured content v and text.
func structured(text string, v any) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: text}},
		StructuredContent: v,
	}
}

// renderFrontier writes the progress, the frontier's lists and the next
// step of the agent loop.
func renderFrontier(b *strings.Builder, fr *vine.Frontier) {
	b.WriteString(progressLine(fr.Progress))
	b.WriteString("\n")
	for _, l := range []struct {
		name  string
		nodes []vine.Node
	}{
		{"needs_expansion", fr.NeedsExpansion},
		{"ready_to_complete", fr.ReadyToComplete},
		{"ready_to_start", fr.ReadyToStart},
		{"blocked", fr.Blocked},
	} {
		fmt.Fprintf(b, "%s: %s\n", l.name, nodeList(l.nodes))
	}
	b.WriteString("Next: ")
	switch {
	case fr.Progress.RootStatus == string(vine.StatusComplete):
		b.WriteString("the root is complete; the graph is done.")
	case len(fr.NeedsExpansion) > 0:
		n := fr.NeedsExpansion[0]
		fmt.Fprintf(b, "expand %s with vine_expand (ref_id %q, child_file %q), then call vine_next again.", n.ID, n.ID, n.URI)
	case len(fr.ReadyToComplete) > 0:
		fmt.Fprintf(b, "mark %s complete with vine_write set_status, then claim one ready task with vine_claim.", ids(fr.ReadyToComplete))
	case len(fr.ReadyToStart) > 0:
		b.WriteString("claim ONE ready task with vine_claim, work on it, record decisions and set it reviewing.")
	case len(fr.Blocked) > 0:
		b.WriteString("nothing is ready; blocked tasks need intervention.")
	default:
		b.WriteString("nothing is ready now: other tasks are in progress or waiting for a dependant to start.")
	}
}

// progressLine is the progress snapshot in one line.
func progressLine(p vine.Progress) string {
	return fmt.Sprintf("Progress: %d of %d complete (%d%%), %d ready to start; root %s is %s.",
		p.Complete, p.Total, p.Percentage, p.ReadyCount, p.RootID, p.RootStatus)
}

// nodeList renders nodes as "id (name), ..." or "none".
func nodeList(nodes []vine.Node) string {
	if len(nodes) == 0 {
		return "none"
	}
	parts := make([]string, len(nodes))
	for i, n := range nodes {
		parts[i] = fmt.Sprintf("%s (%s)", n.ID, oneLine(n.ShortName, 80))
	}
	return strings.Join(parts, ", ")
}

func ids(nodes []vine.Node) string {
	parts := make([]string, len(nodes))
	for i, n := range nodes {
		parts[i] = n.ID
	}
	return strings.Join(parts, ", ")
}

// describeRead is a one-line account of a read query's answer; the answer
// itself is the structured content.
func describeRead(res *trellis.VineReadResult) string {
	head := fmt.Sprintf("vine_read %s on graph %s: ", res.Action, res.GraphID)
	switch r := res.Result.(type) {
	case vine.Summary:
		return head + fmt.Sprintf("root %s (%s) is %s; %d nodes, %d leaves, %d references.", r.RootID, oneLine(r.RootName, 80), r.RootStatus, r.Total, r.LeafCount, r.RefCount)
	case []vine.Node:
		return head + fmt.Sprintf("%d node(s): %s.", len(r), oneLine(nodeList(r), 600))
	case vine.Node:
		return head + fmt.Sprintf("%s %s (%s) is %s, depends on %s.", r.Kind, r.ID, oneLine(r.ShortName, 80), orNone(string(r.Status)), list(r.Dependencies))
	case vine.NodeContext:
		deps := make([]string, len(r.ResolvedDependencies))
		for i, d := range r.ResolvedDependencies {
			deps[i] = fmt.Sprintf("%s [%s]", d.ID, orNone(string(d.Status)))
		}
		dependants := make([]string, len(r.Dependants))
		for i, d := range r.Dependants {
			dependants[i] = d.ID
		}
		return head + fmt.Sprintf("%s (%s) is %s; dependencies: %s; dependants: %s.", r.Node.ID, oneLine(r.Node.ShortName, 80), orNone(string(r.Node.Status)), list(deps), list(dependants))
	case []vine.NodeSummary:
		names := make([]string, len(r))
		for i, n := range r {
			names[i] = n.ID
		}
		return head + fmt.Sprintf("%d node(s) depend on it: %s.", len(r), oneLine(list(names), 600))
	case vine.ValidationReport:
		return head + fmt.Sprintf("valid, %d nodes.", r.Total)
	}
	return head + "see the structured content."
}
