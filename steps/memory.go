package steps

import (
	"context"
	"fmt"
	"regexp"

	"github.com/trellis/trellis"
)

func memorySteps() []Definition {
	return []Definition{
		{
			Pattern: `^a memory task "([^"]*)" with the objectives? ("[^"]*"(?:(?:, | and )"[^"]*")*)$`,
			Example: `Given a memory task "fix-auth" with the objectives "Fix the middleware" and "Add tests"`,
			Doc:     "Creates an agent task (branch task/NAME off main) with its objectives (`trellis task create`).",
			run:     func(w *World) any { return w.memoryTask },
		},
		{
			Pattern: `^agent "([^"]*)" joins memory task "([^"]*)" as "([^"]*)"$`,
			Example: `Given agent "alice" joins memory task "fix-auth" as "implementer"`,
			Doc:     "Assigns an agent to the task (branch task/NAME/AGENT).",
			run:     func(w *World) any { return w.memoryJoin },
		},
		{
			Pattern: `^agent "([^"]*)" observes on memory task "([^"]*)" in session "([^"]*)" an? ([a-z][a-z0-9_-]*) "([^"]*)"$`,
			Example: `When agent "alice" observes on memory task "fix-auth" in session "a1" a discovery "Expired tokens pass on refresh"`,
			Doc:     "Records an observation (insight, decision, discovery, ...) on the agent's branch of the task.",
			run:     func(w *World) any { return w.observeTask },
		},
		{
			Pattern: `^I observe on branch "([^"]*)" in session "([^"]*)" an? ([a-z][a-z0-9_-]*) "([^"]*)"$`,
			Example: `When I observe on branch "main" in session "s1" a decision "Validate tokens in one place"`,
			Doc:     "Records an observation on a branch.",
			run:     func(w *World) any { return w.observeBranch },
		},
		{
			Pattern: `^I consolidate session "([^"]*)"$`,
			Example: `When I consolidate session "s1"`,
			Doc:     "Consolidates the session's observations into facts on their branches (`trellis consolidate --level session`).",
			run:     func(w *World) any { return w.consolidateSession },
		},
		{
			Pattern: `^agent "([^"]*)" completes (?:her|his|their|its) work on memory task "([^"]*)"$`,
			Example: `When agent "alice" completes her work on memory task "fix-auth"`,
			Doc:     "Consolidates the agent's sessions and merges its facts into the task branch, deduplicating what other agents found.",
			run:     func(w *World) any { return w.completeAgent },
		},
		{
			Pattern: `^agent "([^"]*)" marks every objective of memory task "([^"]*)" done$`,
			Example: `When agent "alice" marks every objective of memory task "fix-auth" done`,
			Doc:     "Sets every objective of the task to done (`trellis task objective ... --status done`); a task completes without --force only when its objectives are done and its agents have completed.",
			run:     func(w *World) any { return w.objectivesDone },
		},
		{
			Pattern: `^memory task "([^"]*)" is completed (with|without) a merge$`,
			Example: `When memory task "fix-auth" is completed with a merge`,
			Doc:     "Completes the task; with a merge its durable facts reach the parent branch.",
			run:     func(w *World) any { return w.completeMemoryTask },
		},
		{
			Pattern: `^branch "([^"]*)" holds (\d+) active facts?$`,
			Example: `Then branch "task/fix-auth" holds 3 active facts`,
			Doc:     "Checks the number of active facts on a branch.",
			Check:   true,
			run:     func(w *World) any { return w.factCount },
		},
		{
			Pattern: `^branch "([^"]*)" holds the fact "([^"]*)"$`,
			Example: `Then branch "main" holds the fact "Validate tokens in one place"`,
			Doc:     "Checks that an active fact of the branch has exactly this text.",
			Check:   true,
			run:     func(w *World) any { return w.holdsFact },
		},
		{
			Pattern: `^branch "([^"]*)" does not hold the fact "([^"]*)"$`,
			Example: `Then branch "main" does not hold the fact "The refresh handler retries three times"`,
			Doc:     "Checks that no active fact of the branch has this text.",
			Check:   true,
			run:     func(w *World) any { return w.lacksFact },
		},
	}
}

var quotedItemRE = regexp.MustCompile(`"([^"]*)"`)

func (w *World) memoryTask(ctx context.Context, name, objectives string) error {
	var objs []string
	for _, m := range quotedItemRE.FindAllStringSubmatch(objectives, -1) {
		objs = append(objs, m[1])
	}
	ctx, cancel, err := w.call(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	_, err = w.memory.TaskCreate(ctx, trellis.AgentTaskCreateRequest{Name: name, Objectives: objs})
	return err
}

func (w *World) memoryJoin(ctx context.Context, agent, task, role string) error {
	ctx, cancel, err := w.call(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	_, err = w.memory.TaskJoin(ctx, trellis.AgentTaskJoinRequest{Task: task, Agent: agent, Role: role})
	return err
}

func (w *World) observe(ctx context.Context, req trellis.ObserveRequest) error {
	ctx, cancel, err := w.call(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	_, err = w.memory.Observe(ctx, req)
	return err
}

func (w *World) observeTask(ctx context.Context, agent, task, session, typ, text string) error {
	return w.observe(ctx, trellis.ObserveRequest{Task: task, Agent: agent, Session: session, Type: typ, Text: text})
}

func (w *World) observeBranch(ctx context.Context, branch, session, typ, text string) error {
	return w.observe(ctx, trellis.ObserveRequest{Branch: branch, Session: session, Type: typ, Text: text})
}

func (w *World) consolidateSession(ctx context.Context, session string) error {
	ctx, cancel, err := w.call(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	_, err = w.memory.Consolidate(ctx, trellis.ConsolidateRequest{Level: "session", Session: session})
	return err
}

func (w *World) completeAgent(ctx context.Context, agent, task string) error {
	ctx, cancel, err := w.call(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	_, err = w.memory.TaskCompleteAgent(ctx, trellis.AgentCompleteRequest{Task: task, Agent: agent})
	return err
}

func (w *World) completeMemoryTask(ctx context.Context, task, merge string) error {
	ctx, cancel, err := w.call(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	_, err = w.memory.TaskComplete(ctx, trellis.AgentTaskCompleteRequest{Task: task, Merge: merge == "with"})
	return err
}

func (w *World) objectivesDone(ctx context.Context, agent, task string) error {
	ctx, cancel, err := w.call(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	t, err := w.memory.TaskShow(ctx, task)
	if err != nil {
		return err
	}
	for _, o := range t.Objectives {
		if _, err := w.memory.TaskObjective(ctx, trellis.AgentTaskObjectiveRequest{Task: task, ObjectiveID: o.ObjectiveID, Status: "done", Agent: agent}); err != nil {
			return err
		}
	}
	return nil
}

// activeFacts returns the texts of a branch's active facts.
func (w *World) activeFacts(ctx context.Context, branch string) ([]string, error) {
	ctx, cancel, err := w.call(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	facts, err := w.memory.Facts(ctx, trellis.FactsRequest{Branch: branch, Status: "active"})
	if err != nil {
		return nil, err
	}
	out := make([]string, len(facts))
	for i, f := range facts {
		out[i] = f.FactText
	}
	return out, nil
}

func (w *World) factCount(ctx context.Context, branch string, n int) error {
	facts, err := w.activeFacts(ctx, branch)
	if err != nil {
		return err
	}
	if len(facts) != n {
		return fmt.Errorf("branch %s holds %d active facts; expected %d: %q", branch, len(facts), n, facts)
	}
	return nil
}

func (w *World) holdsFact(ctx context.Context, branch, text string) error {
	facts, err := w.activeFacts(ctx, branch)
	if err != nil {
		return err
	}
	for _, f := range facts {
		if f == text {
			return nil
		}
	}
	return fmt.Errorf("branch %s does not hold the fact %q; its active facts: %q", branch, text, facts)
}

func (w *World) lacksFact(ctx context.Context, branch, text string) error {
	facts, err := w.activeFacts(ctx, branch)
	if err != nil {
		return err
	}
	for _, f := range facts {
		if f == text {
			return fmt.Errorf("branch %s holds the fact %q", branch, text)
		}
	}
	return nil
}
