package features

import (
	"fmt"
	"strings"

	"github.com/cucumber/godog"

	"github.com/trellis/trellis"
)

// memorySteps look at the consolidation history and the task context,
// which the public vocabulary does not cover.
func memorySteps(sc *godog.ScenarioContext, w *world) {
	sc.Step(`^the consolidation history of "([^"]*)" shows bob's duplicates deduplicated$`, func(task string) error {
		ctx, cancel := ctxT()
		defer cancel()
		runs, err := w.sw.Memory().History(ctx, trellis.HistoryRequest{Task: task})
		if err != nil {
			return err
		}
		for _, r := range runs {
			if r.Type == "agent_complete" && r.AgentID == "bob" {
				if r.Created != 0 || r.Deduplicated+r.Updated != 2 {
					return fmt.Errorf("bob's merge: %+v", r)
				}
				return nil
			}
		}
		return fmt.Errorf("no agent_complete run for bob in %+v", runs)
	})
	sc.Step(`^the context of "([^"]*)" lists both agents' summaries$`, func(task string) error {
		ctx, cancel := ctxT()
		defer cancel()
		c, err := w.sw.Memory().TaskContext(ctx, task)
		if err != nil {
			return err
		}
		if len(c.AgentSummaries) != 2 {
			return fmt.Errorf("summaries: %+v", c.AgentSummaries)
		}
		for _, a := range c.AgentSummaries {
			if !a.Completed || !strings.Contains(a.Summary, a.AgentID) {
				return fmt.Errorf("summary of %s: %q", a.AgentID, a.Summary)
			}
		}
		return nil
	})
}
