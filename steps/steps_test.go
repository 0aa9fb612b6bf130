package steps

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cucumber/godog"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
)

// runFeature runs one feature text with the vocabulary (and extra steps)
// and returns godog's status and its pretty output.
func runFeature(t *testing.T, cfg Config, feature string, extra func(*godog.ScenarioContext, *World)) (int, string) {
	t.Helper()
	var out bytes.Buffer
	suite := godog.TestSuite{
		Name: t.Name(),
		ScenarioInitializer: func(sc *godog.ScenarioContext) {
			w := Register(sc, cfg)
			if extra != nil {
				extra(sc, w)
			}
		},
		Options: &godog.Options{
			Format:          "pretty",
			Output:          &out,
			NoColors:        true,
			Strict:          true,
			FeatureContents: []godog.Feature{{Name: "test.feature", Contents: []byte(feature)}},
		},
	}
	return suite.Run(), out.String()
}

// mustPass fails the test unless the feature passes.
func mustPass(t *testing.T, cfg Config, feature string, extra func(*godog.ScenarioContext, *World)) {
	t.Helper()
	if status, out := runFeature(t, cfg, feature, extra); status != 0 {
		t.Fatalf("feature failed (status %d):\n%s", status, out)
	}
}

// mustFail fails the test unless the feature fails with want in its output.
func mustFail(t *testing.T, feature, want string) {
	t.Helper()
	status, out := runFeature(t, Config{}, feature, nil)
	if status != 1 {
		t.Fatalf("feature status %d; want 1 (failed):\n%s", status, out)
	}
	if !strings.Contains(out, want) {
		t.Fatalf("output lacks %q:\n%s", want, out)
	}
}

// TestVocabularyIsConsistent: every definition has the documented shape,
// a doc, and an example that matches its own pattern and no other (godog
// in strict mode refuses a step two patterns match).
func TestVocabularyIsConsistent(t *testing.T) {
	t.Parallel()
	defs := Vocabulary()
	if len(defs) < 40 {
		t.Fatalf("only %d definitions", len(defs))
	}
	seen := map[string]bool{}
	for _, d := range defs {
		if err := d.validate(); err != nil {
			t.Error(err)
		}
		if d.Group == "" || d.Doc == "" || d.Example == "" {
			t.Errorf("%s: group, doc and example are required", d.Pattern)
		}
		if seen[d.Pattern] {
			t.Errorf("%s is defined twice", d.Pattern)
		}
		seen[d.Pattern] = true
		text := d.exampleText()
		var matching []string
		for _, o := range defs {
			if o.Matches(text) {
				matching = append(matching, o.Pattern)
			}
		}
		if len(matching) != 1 || matching[0] != d.Pattern {
			t.Errorf("example %q of %s matches %v", text, d.Pattern, matching)
		}
		// A step taking a doc string or a table shows one in its example.
		takesArg := strings.HasSuffix(d.Pattern, ":$")
		if shows := strings.Contains(d.Example, "\n"); shows != takesArg {
			t.Errorf("%s: takes an argument %v, example shows one %v", d.Pattern, takesArg, shows)
		}
		if d.Check && takesArg {
			t.Errorf("check %s takes a doc string or table: it cannot be waited on", d.Pattern)
		}
	}
}

// TestVocabularyCoversTheExactSteps: the steps scripts depend on match.
func TestVocabularyCoversTheExactSteps(t *testing.T) {
	t.Parallel()
	defs := Vocabulary()
	for _, line := range []string{
		`Given a Trellis server`,
		`When I add 5 tasks to queue "jobs" with objective "Build report"`,
		`And worker "w1" claims the next task from queue "jobs"`,
		`And worker "w1" completes it with "Report built"`,
		`Then queue "jobs" has 1 task "done" and 4 tasks "queued"`,
		`And the history of that task is "added, claimed, completed"`,
		`And no task was completed more than once`,
		`And replaying the log rebuilds the same board`,
	} {
		n := 0
		for _, d := range defs {
			if d.Matches(StripKeyword(line)) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%q matches %d definitions; want 1", line, n)
		}
	}
}

func TestSuggestNamesTheClosestSteps(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ text, want string }{
		{`I ad 5 task to queue "jobs" with objectiv "Build report"`, `I add 5 tasks to queue "jobs" with objective "Build report"`},
		{`worker "w1" complete it with "done"`, `worker "w1" completes it with "Report built"`},
		{`the histroy of that task is "added"`, `the history of that task is "added, claimed, completed"`},
		{`I kill -9 worker "A"`, `I kill -9 worker process "A"`},
		{`queue "jobs" contains 3 done tasks`, `queue "jobs" has 1 task "done" and 4 tasks "queued"`},
		{`a trellis`, `a Trellis server`},
	} {
		got := Suggest(c.text, 3)
		if len(got) != 3 {
			t.Fatalf("Suggest(%q) gave %d definitions", c.text, len(got))
		}
		if got[0].exampleText() != c.want {
			var names []string
			for _, d := range got {
				names = append(names, d.exampleText())
			}
			t.Errorf("Suggest(%q) = %q; want %q first", c.text, names, c.want)
		}
	}
}

const exactFeature = `Feature: the exact steps
  Scenario: a report is built
    Given a Trellis server
    When I add 5 tasks to queue "jobs" with objective "Build report"
    And worker "w1" claims the next task from queue "jobs"
    And worker "w1" completes it with "Report built"
    Then queue "jobs" has 1 task "done" and 4 tasks "queued"
    And the history of that task is "added, claimed, completed"
    And no task was completed more than once
    And replaying the log rebuilds the same board
`

func TestExactStepsPass(t *testing.T) {
	t.Parallel()
	mustPass(t, Config{}, exactFeature, nil)
}

// TestFalseClaimsFail: each check fails when what it states is false.
func TestFalseClaimsFail(t *testing.T) {
	t.Parallel()
	head := "Feature: false\n  Scenario: false\n    Given a Trellis server\n" +
		"    When I add 5 tasks to queue \"jobs\" with objective \"Build report\"\n" +
		"    And worker \"w1\" claims the next task from queue \"jobs\"\n" +
		"    And worker \"w1\" completes it with \"Report built\"\n"
	for _, c := range []struct{ step, want string }{
		{`Then queue "jobs" has 2 tasks "done" and 3 tasks "queued"`, `queue "jobs" has 4 tasks "queued", 1 task "done"; expected 3 tasks "queued", 2 tasks "done"`},
		{`Then queue "jobs" has 1 task "done"`, `expected 1 task "done"`},
		{`Then the history of that task is "added, completed"`, `the history of task`},
		{`Then the history of that task is "added, claimed by w2, completed"`, `"added, claimed by w1, completed by w1"`},
		{`Then the history of that task is "added, claimed by w, completed"`, `"added, claimed by w1, completed by w1"`},
		{`Then that task is "queued"`, `is done; expected queued`},
		{`Then that task's checkpoint says "nothing"`, `expected it to contain "nothing"`},
		{`Then queue "jobs" is idle`, `is not idle`},
		{`Then wait up to 1 second until queue "jobs" has 5 tasks "done"`, `still not true after 1 seconds`},
		{`Then wait up to 1 second until worker "w1" claims the next task from queue "jobs"`, `is not a check that can be waited on`},
		{`Then worker "w1" completes it with "again"`, `worker "w1" holds no task`},
		{`Then worker "w2" completing that task is refused as "invalid"`, `refused with conflict`},
		{`Then the log holds 2 "claimed" events for queue "jobs"`, `holds 1 "claimed" events`},
		{`Then task "nobody" is "done"`, `no task is named "nobody"`},
	} {
		t.Run(c.step, func(t *testing.T) {
			mustFail(t, head+"    "+c.step+"\n", c.want)
		})
	}
}

func TestStepsNeedAServer(t *testing.T) {
	t.Parallel()
	mustFail(t, "Feature: f\n  Scenario: s\n    When I add 1 task to queue \"jobs\" with objective \"x\"\n", `start it with "Given a Trellis server"`)
}

// TestUndefinedStepNamesTheClosest: an undefined step fails the scenario
// and is reported with the closest definitions.
func TestUndefinedStepNamesTheClosest(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var reported []string
	var closest []Definition
	cfg := Config{OnUndefined: func(step string, c []Definition) {
		mu.Lock()
		defer mu.Unlock()
		reported = append(reported, step)
		closest = c
	}}
	status, out := runFeature(t, cfg, "Feature: f\n  Scenario: s\n    Given a Trellis server\n    When I ad 5 tasks to queue \"jobs\" with objectiv \"Build report\"\n", nil)
	if status != 1 {
		t.Fatalf("status %d; want 1:\n%s", status, out)
	}
	if len(reported) != 1 || reported[0] != `I ad 5 tasks to queue "jobs" with objectiv "Build report"` {
		t.Fatalf("reported %q", reported)
	}
	if closest[0].Pattern != `^I add (\d+) tasks? to queue "([^"]*)" with objective "([^"]*)"$` {
		t.Fatalf("closest first is %s", closest[0].Pattern)
	}
}

// TestQueueSteps: every add field reaches the task; claims, refusals,
// failures with and without retry, the operator's retry, budgets.
func TestQueueSteps(t *testing.T) {
	t.Parallel()
	feature := `Feature: queue steps
  Scenario: every field of an add
    Given a Trellis server
    When I add a task "parent" to queue "p" with:
      | objective | Run the nightly batch |
    And I add 2 tasks to queue "nightly" with:
      | objective       | Export the orders  |
      | input           | orders.csv         |
      | input           | customers.csv      |
      | acceptance      | the export is sent |
      | max tool calls  | 5                  |
      | max steps       | 3                  |
      | max attempts    | 2                  |
      | metadata        | team=data          |
      | metadata        | env=prod           |
      | idempotency key | nightly-orders     |
      | parent          | parent             |
    Then queue "nightly" has 1 task "queued"
    And that task carries every field of the table

  Scenario: failures, retries and budgets
    Given a Trellis server
    When I add a task "flaky" to queue "q" with:
      | objective    | Call the API |
      | max attempts | 1            |
    And worker "w1" claims the next task from queue "q"
    Then that task is claimed by "w1"
    And worker "w2" completing that task is refused as "conflict"
    And worker "w2" failing that task is refused as "conflict"
    When worker "w1" fails it with "upstream returned 503" and asks for a retry
    Then that task is "dead"
    And task "flaky" is "dead"
    And that task was tried 1 time
    And that task's last error says "503"
    When an operator retries that task
    Then that task is "queued"
    When worker "w3" claims the next task from queue "q"
    And worker "w3" completes it with "Called the API" using 12 steps and 1 tool calls
    Then that task is marked budget exhausted
    And that task's checkpoint says "Called the API"
    And worker "w3" finds no task in queue "q"
    And the log holds 1 "requeued" event for queue "q"
    And the log holds 2 "claimed" events for queue "q"
    And no task was held by two workers at once
    And no task was completed more than once
    When I add 1 task to queue "q" with objective "Fails for good"
    And worker "w4" claims the next task from queue "q"
    And worker "w4" fails it with "bad input"
    Then that task is "failed"
    And the history of that task is "added, claimed by w4, failed by w4"
    And queue "q" has 1 task "done" and 1 task "failed"

  Scenario: operator controls
    Given a Trellis server
    When I add 2 tasks to queue "ctl" with objective "Wait for the operator"
    And an operator pauses queue "ctl"
    Then worker "w1" finds no task in queue "ctl"
    When an operator resumes queue "ctl"
    And an operator limits queue "ctl" to 1 task in flight
    And worker "w1" claims the next task from queue "ctl"
    Then that task is claimed by "w1"
`
	mustPass(t, Config{}, feature, func(sc *godog.ScenarioContext, w *World) {
		sc.Step(`^that task carries every field of the table$`, func(ctx context.Context) error {
			got, err := w.Queue().Show(ctx, w.Task().TaskID)
			if err != nil {
				return err
			}
			parent := w.named["parent"].TaskID
			want := fmt.Sprintf("Export the orders [orders.csv customers.csv] the export is sent {5 3} 2 map[env:prod team:data] nightly-orders %s", parent)
			if s := fmt.Sprintf("%s %v %s %v %d %v %s %s", got.Objective, got.Inputs, got.Acceptance, got.Budget, got.MaxAttempts, got.Metadata, got.IdempotencyKey, *got.ParentID); s != want {
				return fmt.Errorf("task has %s; want %s", s, want)
			}
			return nil
		})
	})
}

func TestAddTableErrors(t *testing.T) {
	t.Parallel()
	head := "Feature: f\n  Scenario: s\n    Given a Trellis server\n    When I add 1 task to queue \"q\" with:\n"
	mustFail(t, head+"      | objective | x |\n      | colour | red |\n", `unknown field "colour"`)
	mustFail(t, head+"      | objective | x |\n      | max steps | many |\n", `max steps must be a number`)
	mustFail(t, head+"      | objective | x |\n      | metadata | team |\n", `metadata must be key=value`)
	mustFail(t, head+"      | acceptance | x |\n", `objective: must not be empty`)
}

// TestWorkerPoolSteps: an in-process pool runs a script; a task that
// always fails is retried, then dead; the board rebuilds the same.
func TestWorkerPoolSteps(t *testing.T) {
	t.Parallel()
	mustPass(t, Config{}, `Feature: pools
  Scenario: a pool works a queue with a poison task
    Given a Trellis server
    And queue "batch" has a lease of 2 seconds
    When I add 3 tasks to queue "batch" with objective "Resize an image"
    And I add a task "poison" to queue "batch" with:
      | objective    | Resize a corrupt image |
      | max attempts | 2                      |
    And I start 2 workers "pool" on queue "batch" running:
      """
      case "$(cat)" in *corrupt*) echo "cannot decode" >&2; exit 3;; esac
      test -d "$TRELLIS_SCENARIO_DIR" || exit 4
      echo '{"what_was_done":"resized","steps_used":1}'
      """
    Then wait up to 30 seconds until queue "batch" is idle
    And queue "batch" has 3 tasks "done" and 1 task "dead"
    And the history of task "poison" is "added, claimed, attempt_failed, claimed, dead"
    And the log holds 3 "completed" events for queue "batch"
    And no task was completed more than once
    And no task was held by two workers at once
    When I drain workers "pool"
    Then replaying the log rebuilds the same board
`, nil)
}

func TestWorkerStepErrors(t *testing.T) {
	t.Parallel()
	head := "Feature: f\n  Scenario: s\n    Given a Trellis server\n"
	mustFail(t, head+"    When I kill -9 worker process \"ghost\"\n", `no workers named "ghost"`)
	mustFail(t, head+"    When I start 1 worker \"p\" on queue \"q\" running \"true\"\n    And I kill -9 worker process \"p\"\n", `in-process pool: kill -9 needs a worker process`)
	mustFail(t, head+"    When I start 1 worker \"p\" on queue \"q\" running \"true\"\n    And I start 1 worker \"p\" on queue \"q\" running \"true\"\n", `already started`)
	mustFail(t, head+"    When I start 1 worker \"p\" on queue \"q\" running \"true\"\n    And queue \"q\" has a lease of 1 second\n", `set the lease before starting workers`)
	mustFail(t, head+"    When I start 1 worker \"bad name\" on queue \"q\" running \"true\"\n", `is not a worker id`)
	mustFail(t, head+"    When I start worker process \"A\" on queue \"q\" running \"true\"\n",
		`worker processes need the trellis binary`)
}

func TestVineSteps(t *testing.T) {
	t.Parallel()
	mustPass(t, Config{}, `Feature: vine
  Scenario: an agent by hand, then two agents by command
    Given a Trellis server
    And a VINE graph "login.vine":
      """
      vine 1.2.0
      title: Login page
      ---
      [ship] Ship the login page (notstarted)
      -> review
      ---
      [review] Review the form (notstarted)
      -> implement
      ---
      [implement] Implement the form (notstarted)
      -> design
      ---
      [design] Design the form (notstarted)
      """
    Then the frontier of "login.vine" is "design"
    When agent "alice" claims the next task of "login.vine"
    Then task "design" of "login.vine" is "started"
    And graph "login.vine" has 1 task "started"
    And the frontier of "login.vine" is ""
    When agent "alice" records the decision "Two fields and a button" on task "design" of "login.vine"
    And agent "alice" sets task "design" of "login.vine" to "reviewing"
    Then the frontier of "login.vine" is "implement"
    When 2 agents run "login.vine" with:
      """
      case "$TRELLIS_VINE_TASK" in
        implement) grep -q "Two fields" && echo "> built the two fields" ;;
        review) grep -q "built the two fields" && echo "> approved" ;;
        *) echo "> done" ;;
      esac
      """
    Then the root of "login.vine" is "complete"
    And graph "login.vine" has 4 tasks "complete"
    And task "review" of "login.vine" has the decision "approved"
    And every task of "login.vine" was claimed exactly once
`, nil)
}

func TestVineStepErrors(t *testing.T) {
	t.Parallel()
	head := "Feature: f\n  Scenario: s\n    Given a Trellis server\n"
	mustFail(t, head+"    Then the root of \"nope.vine\" is \"complete\"\n", `graph "nope.vine" is not in the workspace`)
	mustFail(t, head+"    Given a VINE graph \"../escape.vine\" from the file \"x.vine\"\n", `read the graph`)
	mustFail(t, head+"    Given a VINE graph \"bad.vine\":\n      \"\"\"\n      not a graph\n      \"\"\"\n", `import bad.vine`)
	// A task that fails blocks the graph: the run ends, the root stays open.
	mustFail(t, head+"    Given a VINE graph \"g.vine\":\n      \"\"\"\n      vine 1.2.0\n      ---\n      [root] Root (notstarted)\n      -> leaf\n      ---\n      [leaf] Leaf (notstarted)\n      \"\"\"\n"+
		"    When 1 agent runs \"g.vine\" with \"echo broken >&2; exit 1\"\n    Then task \"leaf\" of \"g.vine\" is \"blocked\"\n    And the root of \"g.vine\" is \"complete\"\n",
		`the root "root" of g.vine is notstarted; expected complete`)
}

func TestMemorySteps(t *testing.T) {
	t.Parallel()
	mustPass(t, Config{}, `Feature: memory
  Scenario: two agents, a merge, a session on main
    Given a Trellis server
    And a memory task "fix-auth" with the objectives "Fix the middleware" and "Add tests"
    And agent "alice" joins memory task "fix-auth" as "implementer"
    And agent "bob" joins memory task "fix-auth" as "reviewer"
    When agent "alice" observes on memory task "fix-auth" in session "a1" a decision "Validate tokens in one shared function"
    And agent "alice" observes on memory task "fix-auth" in session "a2" a decision "Validate tokens in one shared function"
    And agent "bob" observes on memory task "fix-auth" in session "b1" a decision "Validate tokens in one shared function"
    And agent "alice" completes her work on memory task "fix-auth"
    And agent "bob" completes his work on memory task "fix-auth"
    Then branch "task/fix-auth" holds 1 active fact
    When agent "alice" marks every objective of memory task "fix-auth" done
    And memory task "fix-auth" is completed with a merge
    Then branch "main" holds the fact "Validate tokens in one shared function"
    When I observe on branch "main" in session "s1" a decision "Rotate the signing keys monthly"
    And I consolidate session "s1"
    Then branch "main" holds 2 active facts
    And branch "main" holds the fact "Rotate the signing keys monthly"
    And branch "main" does not hold the fact "Something nobody said"
`, nil)
}

// TestExternalNATS: on a NATS server of its own, a scenario leaves no
// stream behind; on one holding Trellis data, it refuses to start.
func TestExternalNATS(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t) // creates the (empty) TRELLIS_* streams
	cfg := Config{NATSURL: b.Server.ClientURL()}
	mustPass(t, cfg, exactFeature, nil)
	mustPass(t, cfg, exactFeature, nil) // a second run finds it clean
	js, err := jetstream.New(b.Conn)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, spec := range events.Streams() {
		if _, err := js.Stream(ctx, spec.Name); !errors.Is(err, jetstream.ErrStreamNotFound) {
			t.Fatalf("stream %s left behind: %v", spec.Name, err)
		}
	}
	// Someone's data: the scenario must not touch it.
	if err := b.Store.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "trellis.queue.prod.01J00000000000000000000000.added", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	status, out := runFeature(t, cfg, exactFeature, nil)
	if status != 1 || !strings.Contains(out, "holds Trellis data (stream TRELLIS_QUEUE has 1 messages)") {
		t.Fatalf("status %d:\n%s", status, out)
	}
	st, err := js.Stream(ctx, events.StreamQueue)
	if err != nil || st.CachedInfo().State.Msgs != 1 {
		t.Fatalf("the foreign data was touched: %v", err)
	}
}

// TestCheckScratchRefusesARunningServer: a Trellis server answering on the
// NATS is refused even when its streams are empty.
func TestCheckScratchRefusesARunningServer(t *testing.T) {
	t.Parallel()
	mustPass(t, Config{}, `Feature: f
  Scenario: s
    Given a Trellis server
    Then the NATS of this scenario is no scratch namespace
`, func(sc *godog.ScenarioContext, w *World) {
		sc.Step(`^the NATS of this scenario is no scratch namespace$`, func(ctx context.Context) error {
			err := CheckScratch(ctx, w.Server().Info().NATSURL)
			if err == nil || !strings.Contains(err.Error(), "a Trellis server") {
				return fmt.Errorf("CheckScratch = %v; want a refusal naming the running server", err)
			}
			return nil
		})
	})
}
