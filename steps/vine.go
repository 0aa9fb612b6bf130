package steps

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/cucumber/godog"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/vine"
	"github.com/trellis/trellis/workers"
)

func vineSteps() []Definition {
	return []Definition{
		{
			Pattern: `^a VINE graph "([^"]*)":$`,
			Example: "Given a VINE graph \"login.vine\":\n" +
				"  \"\"\"\n" +
				"  vine 1.2.0\n" +
				"  title: Login page\n" +
				"  ---\n" +
				"  [ship] Ship the login page (notstarted)\n" +
				"  -> implement\n" +
				"  ---\n" +
				"  [implement] Implement the form (notstarted)\n" +
				"  \"\"\"",
			Doc: "Writes the graph into the scenario's workspace under that name and imports it: from now on every change is an event.",
			run: func(w *World) any { return w.graphDoc },
		},
		{
			Pattern: `^a VINE graph "([^"]*)" from the file "([^"]*)"$`,
			Example: `Given a VINE graph "release.vine" from the file "graphs/release.vine"`,
			Doc:     "Copies a .vine file (relative to the feature file) into the workspace under that name and imports it.",
			run:     func(w *World) any { return w.graphFile },
		},
		{
			Pattern: `^(\d+) (?:agent runs|agents run) "([^"]*)" with "([^"]*)"$`,
			Example: `When 2 agents run "login.vine" with "./do-task.sh"`,
			Doc: "Runs N agents (agent-1 ... agent-N) in-process on the graph, as `trellis vine run --exec` does, until the root is " +
				"complete or nothing can move (blocked tasks). Each claims one ready task at a time and runs the command in the " +
				"feature file's directory: the task and its resolved dependencies as JSON on stdin, TRELLIS_VINE_FILE, " +
				"TRELLIS_VINE_TASK and TRELLIS_SCENARIO_DIR set; stdout lines starting with \"> \" are recorded as decisions; " +
				"a non-zero exit blocks the task. Bounded by 2 minutes.",
			run: func(w *World) any { return w.agentsCommand },
		},
		{
			Pattern: `^(\d+) (?:agent runs|agents run) "([^"]*)" with:$`,
			Example: "When 2 agents run \"login.vine\" with:\n" +
				"  \"\"\"\n" +
				"  echo \"> done by $TRELLIS_VINE_TASK\"\n" +
				"  \"\"\"",
			Doc: "The same with a shell script in a doc string.",
			run: func(w *World) any { return w.agentsScript },
		},
		{
			Pattern: `^agent "([^"]*)" claims the next task of "([^"]*)"$`,
			Example: `When agent "alice" claims the next task of "login.vine"`,
			Doc:     "Claims one ready task of the graph for the agent (it becomes started); fails when none is ready.",
			run:     func(w *World) any { return w.vineClaim },
		},
		{
			Pattern: `^agent "([^"]*)" sets task "([^"]*)" of "([^"]*)" to "([a-z]+)"$`,
			Example: `When agent "alice" sets task "implement" of "login.vine" to "reviewing"`,
			Doc:     "Sets a task's status: notstarted, planning, started, reviewing, complete or blocked.",
			run:     func(w *World) any { return w.vineSetStatus },
		},
		{
			Pattern: `^agent "([^"]*)" records the decision "([^"]*)" on task "([^"]*)" of "([^"]*)"$`,
			Example: `When agent "alice" records the decision "Use the shared validator" on task "implement" of "login.vine"`,
			Doc:     "Appends a decision (a \"> \" line) to a task.",
			run:     func(w *World) any { return w.vineDecision },
		},
		{
			Pattern: `^the root of "([^"]*)" is "([a-z]+)"$`,
			Example: `Then the root of "login.vine" is "complete"`,
			Doc:     "Checks the status of the graph's root, as the log has it.",
			Check:   true,
			run:     func(w *World) any { return w.rootIs },
		},
		{
			Pattern: `^task "([^"]*)" of "([^"]*)" is "([a-z]+)"$`,
			Example: `Then task "implement" of "login.vine" is "reviewing"`,
			Doc:     "Checks the status of a task of the graph, as the log has it.",
			Check:   true,
			run:     func(w *World) any { return w.vineTaskIs },
		},
		{
			Pattern: `^graph "([^"]*)" has (\d+) tasks? "([a-z]+)"$`,
			Example: `Then graph "login.vine" has 2 tasks "complete"`,
			Doc:     "Checks how many tasks of the graph have the status.",
			Check:   true,
			run:     func(w *World) any { return w.graphCount },
		},
		{
			Pattern: `^the frontier of "([^"]*)" is "([^"]*)"$`,
			Example: `Then the frontier of "login.vine" is "implement"`,
			Doc:     "Checks the tasks ready to start, comma-separated in any order (\"\" for none).",
			Check:   true,
			run:     func(w *World) any { return w.frontierIs },
		},
		{
			Pattern: `^task "([^"]*)" of "([^"]*)" has the decision "([^"]*)"$`,
			Example: `Then task "implement" of "login.vine" has the decision "Use the shared validator"`,
			Doc:     "Checks that one of the task's decisions contains the text.",
			Check:   true,
			run:     func(w *World) any { return w.hasDecision },
		},
	}
}

// graphPath returns the workspace path of a graph name.
func (w *World) graphPath(name string) (string, error) {
	if w.srv == nil {
		return "", errNoServer
	}
	if !filepath.IsLocal(name) {
		return "", fmt.Errorf("graph name %q must be a relative path inside the workspace", name)
	}
	return filepath.Join(w.ws, name), nil
}

func (w *World) graphDoc(ctx context.Context, name string, doc *godog.DocString) error {
	return w.importGraph(ctx, name, doc.Content)
}

func (w *World) graphFile(ctx context.Context, name, file string) error {
	data, err := os.ReadFile(w.localPath(file))
	if err != nil {
		return fmt.Errorf("read the graph: %w", err)
	}
	return w.importGraph(ctx, name, string(data))
}

func (w *World) importGraph(ctx context.Context, name, text string) error {
	path, err := w.graphPath(name)
	if err != nil {
		return err
	}
	if _, err := os.Stat(path); err == nil {
		return fmt.Errorf("graph %q is already in the workspace", name)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		return err
	}
	ctx, cancel, err := w.call(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	if _, err := w.vine.VineImport(ctx, trellis.VineFileRequest{File: path, Agent: "features"}); err != nil {
		return fmt.Errorf("import %s: %w", name, err)
	}
	return nil
}

// graphFileOf returns the path of a graph in the workspace.
func (w *World) graphFileOf(name string) (string, error) {
	path, err := w.graphPath(name)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("graph %q is not in the workspace: load it with `a VINE graph %q:`", name, name)
	}
	return path, nil
}

func (w *World) agentsCommand(ctx context.Context, n int, name, command string) error {
	return w.runAgents(ctx, n, name, command)
}

func (w *World) agentsScript(ctx context.Context, n int, name string, script *godog.DocString) error {
	return w.runAgents(ctx, n, name, script.Content)
}

// shellQuote quotes s for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func (w *World) runAgents(ctx context.Context, n int, name, command string) error {
	if n < 1 {
		return fmt.Errorf("run %d agents: give at least 1", n)
	}
	if strings.TrimSpace(command) == "" {
		return errors.New("the command is empty")
	}
	file, err := w.graphFileOf(name)
	if err != nil {
		return err
	}
	// VineExec runs in the current directory: move to the feature's.
	script := "cd " + shellQuote(w.featureDir) + " || exit 1\nexport TRELLIS_SCENARIO_DIR=" + shellQuote(w.dir) + "\n" + command
	ctx, cancel := context.WithTimeout(ctx, w.cfg.AgentTimeout)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		agent := &workers.VineAgent{
			Service: w.vine, File: file, Agent: fmt.Sprintf("agent-%d", i+1),
			Work: &workers.VineExec{Command: script, File: file},
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = agent.Run(ctx)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		switch {
		case err == nil, errors.Is(err, workers.ErrStalled):
		case errors.Is(err, context.DeadlineExceeded):
			return fmt.Errorf("the agents did not finish %s within %s", name, w.cfg.AgentTimeout)
		default:
			return fmt.Errorf("agent-%d: %w", i+1, err)
		}
	}
	return nil
}

// graphCall is call with the file of the scenario's graph name.
func (w *World) graphCall(ctx context.Context, name string) (context.Context, context.CancelFunc, string, error) {
	file, err := w.graphFileOf(name)
	if err != nil {
		return ctx, func() {}, "", err
	}
	ctx, cancel, err := w.call(ctx)
	return ctx, cancel, file, err
}

func (w *World) vineClaim(ctx context.Context, agent, name string) error {
	ctx, cancel, file, err := w.graphCall(ctx, name)
	if err != nil {
		return err
	}
	defer cancel()
	res, err := w.vine.VineClaim(ctx, trellis.VineClaimRequest{File: file, Agent: agent})
	if err != nil {
		return err
	}
	if res.Node == nil {
		return fmt.Errorf("no task of %s is ready to claim", name)
	}
	return nil
}

func (w *World) vineWrite(ctx context.Context, agent, name string, ops ...vine.Op) error {
	ctx, cancel, file, err := w.graphCall(ctx, name)
	if err != nil {
		return err
	}
	defer cancel()
	_, err = w.vine.VineWrite(ctx, trellis.VineWriteRequest{File: file, Operations: ops, Agent: agent})
	return err
}

func (w *World) vineSetStatus(ctx context.Context, agent, id, name, status string) error {
	return w.vineWrite(ctx, agent, name, vine.Op{Op: vine.OpSetStatus, ID: id, Status: vine.Status(status)})
}

func (w *World) vineDecision(ctx context.Context, agent, decision, id, name string) error {
	return w.vineWrite(ctx, agent, name, vine.Op{Op: vine.OpUpdate, ID: id, Decisions: []string{decision}})
}

// graph returns a graph as the log has it.
func (w *World) graph(ctx context.Context, name string) (vine.Graph, error) {
	file, err := w.graphFileOf(name)
	if err != nil {
		return vine.Graph{}, err
	}
	ctx, cancel, err := w.call(ctx)
	if err != nil {
		return vine.Graph{}, err
	}
	defer cancel()
	exp, err := w.vine.VineExport(ctx, trellis.VineExportRequest{Graph: file})
	if err != nil {
		return vine.Graph{}, err
	}
	return vine.Parse(exp.Text)
}

func (w *World) node(ctx context.Context, name, id string) (vine.Node, error) {
	g, err := w.graph(ctx, name)
	if err != nil {
		return vine.Node{}, err
	}
	for _, n := range g.Nodes {
		if n.ID == id {
			return n, nil
		}
	}
	return vine.Node{}, fmt.Errorf("graph %s has no task %q", name, id)
}

func (w *World) rootIs(ctx context.Context, name, status string) error {
	g, err := w.graph(ctx, name)
	if err != nil {
		return err
	}
	root, ok := g.Root()
	if !ok {
		return fmt.Errorf("graph %s has no root", name)
	}
	if string(root.Status) != status {
		return fmt.Errorf("the root %q of %s is %s; expected %s%s", root.ID, name, root.Status, status, describeGraph(g))
	}
	return nil
}

// describeGraph lists the tasks per status, for error messages.
func describeGraph(g vine.Graph) string {
	by := map[vine.Status][]string{}
	for _, n := range g.Nodes {
		if n.Kind == vine.KindTask {
			by[n.Status] = append(by[n.Status], n.ID)
		}
	}
	statuses := make([]string, 0, len(by))
	for s := range by {
		statuses = append(statuses, string(s))
	}
	sort.Strings(statuses)
	var b strings.Builder
	for _, s := range statuses {
		fmt.Fprintf(&b, "\n  %s: %s", s, strings.Join(by[vine.Status(s)], ", "))
	}
	return b.String()
}

func (w *World) vineTaskIs(ctx context.Context, id, name, status string) error {
	n, err := w.node(ctx, name, id)
	if err != nil {
		return err
	}
	if string(n.Status) != status {
		return fmt.Errorf("task %q of %s is %s; expected %s", id, name, n.Status, status)
	}
	return nil
}

func (w *World) graphCount(ctx context.Context, name string, count int, status string) error {
	g, err := w.graph(ctx, name)
	if err != nil {
		return err
	}
	got := 0
	for _, n := range g.Nodes {
		if n.Kind == vine.KindTask && string(n.Status) == status {
			got++
		}
	}
	if got != count {
		return fmt.Errorf("graph %s has %d tasks %s; expected %d%s", name, got, status, count, describeGraph(g))
	}
	return nil
}

func (w *World) frontierIs(ctx context.Context, name, list string) error {
	ctx, cancel, file, err := w.graphCall(ctx, name)
	if err != nil {
		return err
	}
	defer cancel()
	fr, err := w.vine.VineNext(ctx, trellis.VineFileRequest{File: file})
	if err != nil {
		return err
	}
	got := make([]string, 0, len(fr.ReadyToStart))
	for _, n := range fr.ReadyToStart {
		got = append(got, n.ID)
	}
	want := splitList(list)
	sort.Strings(got)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		return fmt.Errorf("the frontier of %s is %q; expected %q", name, strings.Join(got, ", "), strings.Join(want, ", "))
	}
	return nil
}

// splitList splits "a, b and c" into its items.
func splitList(s string) []string {
	var out []string
	for _, part := range strings.Split(strings.ReplaceAll(s, " and ", ","), ",") {
		if p := strings.TrimSpace(part); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func (w *World) hasDecision(ctx context.Context, id, name, text string) error {
	n, err := w.node(ctx, name, id)
	if err != nil {
		return err
	}
	for _, d := range n.Decisions {
		if strings.Contains(d, text) {
			return nil
		}
	}
	return fmt.Errorf("task %q of %s has no decision containing %q; its decisions: %q", id, name, text, n.Decisions)
}
