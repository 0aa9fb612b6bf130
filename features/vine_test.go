package features

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/cucumber/godog"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/vine"
	"github.com/trellis/trellis/workers"
)

func vineSteps(sc *godog.ScenarioContext, w *world) {
	sc.Step(`^the orchestrator dispatches sub-agents on "([^"]*)", one per ready task, each doing one task and reporting back, until the root is complete$`, w.orchestrate)
	sc.Step(`^the file "([^"]*)" is the graph as the log has it$`, w.fileIsLog)
	sc.Step(`^one round ran the six checks "([^"]*)" in parallel$`, w.roundRan)
	sc.Step(`^every task of "([^"]*)" carries the decision its agent recorded$`, w.decisionsRecorded)
	sc.Step(`^a generated graph "([^"]*)" of (\d+) tasks$`, w.generatedGraph)
	sc.Step(`^(\d+) agents run the loop on "([^"]*)" as separate processes$`, w.agentProcesses)
	sc.Step(`^the history of "([^"]*)" starts with its import and ends with the root's completion$`, w.historyBookends)
}

func (w *world) vinePath(name string) string { return filepath.Join(w.sw.Workspace(), name) }

func (w *world) writeVine(name, text string) error {
	return os.WriteFile(w.vinePath(name), []byte(text), 0o644)
}

// orchestrate is seed 001's orchestrator: it never touches the graph
// itself; it dispatches sub-agents (each does housekeeping and ONE task,
// then reports progress) and fans out when several tasks are ready.
func (w *world) orchestrate(name string) error {
	client, err := w.cl()
	if err != nil {
		return err
	}
	ctx, cancel := ctxT()
	defer cancel()
	file := w.vinePath(name)
	fanout := 1
	for round := 1; round <= 30; round++ {
		var wg sync.WaitGroup
		reports := make([]*workers.VineRunReport, fanout)
		errs := make([]error, fanout)
		for i := 0; i < fanout; i++ {
			agent := &workers.VineAgent{Service: client, File: file, Agent: fmt.Sprintf("sub-%d-%d", round, i), MaxTasks: 1,
				Work: workers.VineWorkFunc(func(_ context.Context, t *vine.NodeContext) ([]string, error) {
					return []string{fmt.Sprintf("%s checked by its sub-agent", t.Node.ID)}, nil
				})}
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				reports[i], errs[i] = agent.Run(ctx)
			}(i)
		}
		wg.Wait()
		var claimed []string
		for i, r := range reports {
			if errs[i] != nil {
				return errs[i]
			}
			claimed = append(claimed, r.Claimed...)
		}
		w.rounds = append(w.rounds, claimed)
		fr, err := client.VineNext(ctx, trellis.VineFileRequest{File: file})
		if err != nil {
			return err
		}
		if fr.Progress.RootStatus == string(vine.StatusComplete) {
			return nil
		}
		fanout = max(1, fr.Progress.ReadyCount)
	}
	return fmt.Errorf("root not complete after 30 rounds: %v", w.rounds)
}

func (w *world) graph(name string) (vine.Graph, error) {
	data, err := os.ReadFile(w.vinePath(name))
	if err != nil {
		return vine.Graph{}, err
	}
	return vine.Parse(string(data))
}

func (w *world) fileIsLog(name string) error {
	g, err := w.graph(name)
	if err != nil {
		return err
	}
	ctx, cancel := ctxT()
	defer cancel()
	exp, err := w.sw.Vine().VineExport(ctx, trellis.VineExportRequest{Graph: w.vinePath(name)})
	if err != nil {
		return err
	}
	if text, _ := vine.Serialize(g); exp.Text != text {
		return fmt.Errorf("the file and the log disagree")
	}
	return nil
}

// claims counts the claim operations per task in the graph's history.
func (w *world) claims(name string) (map[string]int, []events.Recorded, error) {
	ctx, cancel := ctxT()
	defer cancel()
	recs, err := w.srv().Service().Audit(ctx, events.GraphID(name))
	if err != nil {
		return nil, nil, err
	}
	out := map[string]int{}
	for _, r := range recs {
		if r.Type != events.GraphBatchApplied {
			continue
		}
		var p events.GraphBatchPayload
		if err := r.DecodePayload(&p); err != nil {
			return nil, nil, err
		}
		for _, op := range p.Ops {
			if op.Op == vine.OpClaim {
				out[op.ID]++
			}
		}
	}
	return out, recs, nil
}

func (w *world) roundRan(list string) error {
	want := strings.Split(list, ", ")
	for _, round := range w.rounds {
		got := map[string]bool{}
		for _, id := range round {
			got[id] = true
		}
		all := len(round) == len(want)
		for _, id := range want {
			all = all && got[id]
		}
		if all {
			return nil
		}
	}
	return fmt.Errorf("no round claimed exactly %v: rounds %v", want, w.rounds)
}

func (w *world) decisionsRecorded(name string) error {
	g, err := w.graph(name)
	if err != nil {
		return err
	}
	for _, n := range g.Nodes {
		want := n.ID + " checked by its sub-agent"
		found := false
		for _, d := range n.Decisions {
			found = found || d == want
		}
		if !found {
			return fmt.Errorf("task %s lacks the decision %q: %v", n.ID, want, n.Decisions)
		}
	}
	return nil
}

// generatedGraph writes a random DAG of n tasks: every task depends on a
// few later ones, and every task is reachable from the root.
func (w *world) generatedGraph(name string, n int) error {
	rng := rand.New(rand.NewSource(42))
	deps := make([][]int, n)
	for i := 1; i < n; i++ {
		p := max(0, i-1-rng.Intn(min(i, 25)))
		deps[p] = append(deps[p], i)
		if extra := i - 1 - rng.Intn(min(i, 60)); extra >= 0 && extra != p && rng.Intn(3) == 0 {
			deps[extra] = append(deps[extra], i)
		}
	}
	id := func(i int) string {
		if i == 0 {
			return "root"
		}
		return fmt.Sprintf("t%03d", i)
	}
	var b strings.Builder
	b.WriteString("vine 1.2.0\ntitle: generated\n---\n")
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString("---\n")
		}
		fmt.Fprintf(&b, "[%s] Task %d (notstarted)\n", id(i), i)
		for _, d := range deps[i] {
			fmt.Fprintf(&b, "-> %s\n", id(d))
		}
	}
	return w.writeVine(name, b.String())
}

func (w *world) agentProcesses(n int, name string) error {
	bin, err := trellisBinary()
	if err != nil {
		return err
	}
	file := w.vinePath(name)
	var wg sync.WaitGroup
	errs := make([]error, n)
	outs := make([][]byte, n)
	for i := 0; i < n; i++ {
		cmd := exec.Command(bin, "vine", "run", file, "--agent", fmt.Sprintf("agent-%d", i),
			"--nats-url", w.srv().Info().NATSURL, "--data", filepath.Join(w.sw.Dir(), fmt.Sprintf("agent-%d", i)), "--idle", "2m")
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			outs[i], errs[i] = cmd.CombinedOutput()
		}(i)
	}
	wg.Wait()
	claimedBy := 0
	for i := range errs {
		if errs[i] != nil {
			return fmt.Errorf("agent %d: %v\n%s", i, errs[i], outs[i])
		}
		if strings.Contains(string(outs[i]), "claimed 0,") {
			continue
		}
		claimedBy++
	}
	if claimedBy < 2 {
		return fmt.Errorf("only %d of %d agents claimed anything", claimedBy, n)
	}
	return nil
}

func (w *world) historyBookends(name string) error {
	_, recs, err := w.claims(name)
	if err != nil {
		return err
	}
	if recs[0].Type != events.GraphImported {
		return fmt.Errorf("history starts with %s", recs[0].Type)
	}
	last := recs[len(recs)-1]
	var p events.GraphBatchPayload
	if last.Type != events.GraphBatchApplied || last.DecodePayload(&p) != nil {
		return fmt.Errorf("history ends with %s", last.Type)
	}
	for _, op := range p.Ops {
		if op.ID == "root" && op.Status == vine.StatusComplete {
			return nil
		}
	}
	return fmt.Errorf("the last event does not complete the root: %+v", p.Ops)
}

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// trellisBinary builds the trellis command once for the process scenarios.
func trellisBinary() (string, error) {
	binOnce.Do(func() {
		binPath = filepath.Join(buildDir, "trellis")
		if out, err := exec.Command("go", "build", "-o", binPath, "../cmd/trellis").CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	return binPath, binErr
}
