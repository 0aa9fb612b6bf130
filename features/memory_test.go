package features

import (
	"fmt"
	"strings"

	"github.com/cucumber/godog"

	"github.com/trellis/trellis"
)

func memorySteps(sc *godog.ScenarioContext, w *world) {
	sc.Step(`^a task "([^"]*)" with the objectives "([^"]*)" and "([^"]*)"$`, func(name, o1, o2 string) error {
		ctx, cancel := ctxT()
		defer cancel()
		_, err := w.client.TaskCreate(ctx, trellis.TaskCreateRequest{Name: name, Objectives: []string{o1, o2}})
		return err
	})
	sc.Step(`^agent "([^"]*)" joined "([^"]*)" as "([^"]*)"$`, func(agent, task, role string) error {
		ctx, cancel := ctxT()
		defer cancel()
		_, err := w.client.TaskJoin(ctx, trellis.TaskJoinRequest{Task: task, Agent: agent, Role: role})
		return err
	})
	sc.Step(`^"([^"]*)" observes in session "([^"]*)" an? (\w+) "([^"]*)"$`, func(agent, session, typ, text string) error {
		ctx, cancel := ctxT()
		defer cancel()
		_, err := w.client.Observe(ctx, trellis.ObserveRequest{Task: "fix-auth", Agent: agent, Session: session, Type: typ, Text: text})
		return err
	})
	sc.Step(`^"([^"]*)" completes (?:her|his|their) work on "([^"]*)"$`, func(agent, task string) error {
		ctx, cancel := ctxT()
		defer cancel()
		_, err := w.client.TaskCompleteAgent(ctx, trellis.TaskAgentRequest{Task: task, Agent: agent})
		return err
	})
	sc.Step(`^the task branch "([^"]*)" holds (\d+) active facts$`, func(branch string, n int) error {
		ctx, cancel := ctxT()
		defer cancel()
		facts, err := w.client.Facts(ctx, trellis.FactsRequest{Branch: branch, Status: "active"})
		if err != nil {
			return err
		}
		if len(facts) != n {
			return fmt.Errorf("%s holds %d active facts: %+v", branch, len(facts), facts)
		}
		return nil
	})
	sc.Step(`^the consolidation history of "([^"]*)" shows bob's duplicates deduplicated$`, func(task string) error {
		ctx, cancel := ctxT()
		defer cancel()
		runs, err := w.client.History(ctx, trellis.HistoryRequest{Task: task})
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
	sc.Step(`^"([^"]*)" marks every objective of "([^"]*)" done$`, func(agent, task string) error {
		ctx, cancel := ctxT()
		defer cancel()
		t, err := w.client.TaskShow(ctx, task)
		if err != nil {
			return err
		}
		for _, o := range t.Objectives {
			if _, err := w.client.TaskObjective(ctx, trellis.TaskObjectiveRequest{Task: task, ObjectiveID: o.ObjectiveID, Status: "done", Agent: agent}); err != nil {
				return err
			}
		}
		return nil
	})
	sc.Step(`^the task "([^"]*)" is completed with a merge$`, func(task string) error {
		ctx, cancel := ctxT()
		defer cancel()
		_, err := w.client.TaskComplete(ctx, trellis.TaskCompleteRequest{Task: task, Merge: true})
		return err
	})
	hasFact := func(branch, text string) (bool, error) {
		ctx, cancel := ctxT()
		defer cancel()
		facts, err := w.client.Facts(ctx, trellis.FactsRequest{Branch: branch, Status: "active"})
		if err != nil {
			return false, err
		}
		for _, f := range facts {
			if f.FactText == text {
				return true, nil
			}
		}
		return false, nil
	}
	sc.Step(`^"([^"]*)" holds the fact "([^"]*)"$`, func(branch, text string) error {
		ok, err := hasFact(branch, text)
		if err == nil && !ok {
			err = fmt.Errorf("%s lacks %q", branch, text)
		}
		return err
	})
	sc.Step(`^"([^"]*)" does not hold the fact "([^"]*)"$`, func(branch, text string) error {
		ok, err := hasFact(branch, text)
		if err == nil && ok {
			err = fmt.Errorf("%s holds %q", branch, text)
		}
		return err
	})
	sc.Step(`^the context of "([^"]*)" lists both agents' summaries$`, func(task string) error {
		ctx, cancel := ctxT()
		defer cancel()
		c, err := w.client.TaskContext(ctx, task)
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
