package mcpapi

import (
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trellis/trellis"
)

// agentTaskResult is a result carrying an agent task: the task as
// structured content and, as text, lead followed by the task's rendering.
func agentTaskResult(lead string, t *trellis.AgentTaskView) *mcp.CallToolResult {
	var b strings.Builder
	if lead != "" {
		b.WriteString(lead)
		b.WriteString("\n\n")
	}
	renderAgentTask(&b, t)
	return structured(b.String(), t)
}

// reportResult is a result carrying a consolidation report: the report as
// structured content and, as text, lead followed by one line per run.
func reportResult(lead string, r *trellis.ConsolidationReport) *mcp.CallToolResult {
	var b strings.Builder
	b.WriteString(lead)
	b.WriteString("\n")
	for _, run := range r.Runs {
		if run.Type == "session_end" {
			renderRun(&b, &run)
		}
	}
	renderRun(&b, r)
	for _, run := range r.Runs {
		if run.Type != "session_end" {
			renderRun(&b, &run)
		}
	}
	return structured(strings.TrimRight(b.String(), "\n"), r)
}

// renderAgentTask writes an agent task: header, objectives, agents.
func renderAgentTask(b *strings.Builder, t *trellis.AgentTaskView) {
	fmt.Fprintf(b, "Task %s (task_id %s) [%s] on branch %s, parent %s\n", t.Name, t.TaskID, t.Status, t.Branch, t.ParentBranch)
	if d := strings.TrimSpace(t.Description); d != "" {
		fmt.Fprintf(b, "Description: %s\n", oneLine(d, 400))
	}
	fmt.Fprintf(b, "Progress: %s\n", progressCounts(t.Progress))
	if len(t.Objectives) == 0 {
		b.WriteString("Objectives: none\n")
	} else {
		b.WriteString("Objectives:\n")
		for _, o := range t.Objectives {
			fmt.Fprintf(b, "- %s [%s] %s", o.ObjectiveID, o.Status, oneLine(o.Description, 200))
			if o.AgentID != "" {
				fmt.Fprintf(b, " (%s)", o.AgentID)
			}
			b.WriteString("\n")
		}
	}
	renderAgents(b, t.Agents)
}

func renderAgents(b *strings.Builder, agents []trellis.TaskAgentView) {
	if len(agents) == 0 {
		b.WriteString("Agents: none\n")
		return
	}
	b.WriteString("Agents:\n")
	for _, a := range agents {
		fmt.Fprintf(b, "- %s (%s) on %s", a.AgentID, a.Role, a.Branch)
		if a.Completed {
			b.WriteString(", completed")
			if a.Summary != "" {
				fmt.Fprintf(b, ": %s", oneLine(a.Summary, 300))
			}
		}
		b.WriteString("\n")
	}
}

func progressCounts(p map[string]int) string {
	return fmt.Sprintf("%d todo, %d active, %d done, %d blocked", p["todo"], p["active"], p["done"], p["blocked"])
}

// renderRun writes one consolidation run on one line.
func renderRun(b *strings.Builder, r *trellis.ConsolidationReport) {
	if r.RunID == "" {
		fmt.Fprintf(b, "- %s\n", r.Summary)
		return
	}
	fmt.Fprintf(b, "- %s %s (%s → %s): %s", r.Type, r.RunID, r.SourceBranch, r.TargetBranch, oneLine(r.Summary, 300))
	if len(r.Durable) > 0 || len(r.Ephemeral) > 0 {
		fmt.Fprintf(b, "; durable: %s; ephemeral: %s", list(r.Durable), list(r.Ephemeral))
	}
	b.WriteString("\n")
}

// renderContext writes a task context: the task, then the key facts.
func renderContext(c *trellis.AgentTaskContextView) string {
	var b strings.Builder
	renderAgentTask(&b, &c.Task)
	if len(c.KeyFacts) == 0 {
		b.WriteString("Key facts: none yet (they appear on the task branch as agents complete)")
		return b.String()
	}
	b.WriteString("Key facts:\n")
	renderFactLines(&b, c.KeyFacts)
	return strings.TrimRight(b.String(), "\n")
}

// renderTaskList writes one line per agent task.
func renderTaskList(l []trellis.AgentTaskView) string {
	if len(l) == 0 {
		return "No agent tasks match."
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d agent task(s):\n", len(l))
	for _, t := range l {
		fmt.Fprintf(&b, "- %s (task_id %s) [%s] on %s: %d agent(s); %s\n", t.Name, t.TaskID, t.Status, t.Branch, len(t.Agents), progressCounts(t.Progress))
	}
	return strings.TrimRight(b.String(), "\n")
}

// renderFacts writes one line per fact.
func renderFacts(fs []trellis.FactView) string {
	if len(fs) == 0 {
		return "No facts match."
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d fact(s):\n", len(fs))
	renderFactLines(&b, fs)
	return strings.TrimRight(b.String(), "\n")
}

func renderFactLines(b *strings.Builder, fs []trellis.FactView) {
	for _, f := range fs {
		fmt.Fprintf(b, "- %s [%s, %s, %.2f] on %s: %s\n", f.FactID, f.Status, f.Category, f.Confidence, f.Branch, oneLine(f.FactText, 300))
	}
}

// renderHistory writes one line per consolidation run.
func renderHistory(rs []trellis.ConsolidationReport) string {
	if len(rs) == 0 {
		return "No consolidation runs match."
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d consolidation run(s), oldest first:\n", len(rs))
	for i := range rs {
		renderRun(&b, &rs[i])
	}
	return strings.TrimRight(b.String(), "\n")
}
