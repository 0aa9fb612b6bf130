package steps

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/trellis/trellis/workflow"
)

// testWorkflows registers the workflows of the tests: "order" (reserve,
// charge, wait for "ship", ship), "declined" (its charge fails) and
// "flaky" (its charge fails on its first run only: a retry completes it).
func testWorkflows() func(e *workflow.Engine) error {
	var flaky atomic.Int32
	type order struct {
		ID string `json:"id"`
	}
	type out struct {
		ID        string `json:"id"`
		ShippedBy string `json:"shipped_by"`
	}
	ok := func(context.Context) (bool, error) { return true, nil }
	return func(e *workflow.Engine) error {
		err := workflow.Register(e, "order", 1, func(c *workflow.Context, in order) (out, error) {
			for _, s := range []string{"reserve", "charge"} {
				if _, err := workflow.Step(c, s, ok); err != nil {
					return out{}, err
				}
			}
			ship, err := workflow.WaitFor[struct {
				Carrier string `json:"carrier"`
			}](c, "ship", 0)
			if err != nil {
				return out{}, err
			}
			if _, err := workflow.Step(c, "ship", ok); err != nil {
				return out{}, err
			}
			return out{ID: in.ID, ShippedBy: ship.Carrier}, nil
		})
		if err != nil {
			return err
		}
		if err := workflow.Register(e, "declined", 1, func(c *workflow.Context, _ any) (bool, error) {
			return workflow.Step(c, "charge", func(context.Context) (bool, error) { return false, errors.New("card declined") })
		}); err != nil {
			return err
		}
		return workflow.Register(e, "flaky", 1, func(c *workflow.Context, _ any) (bool, error) {
			return workflow.Step(c, "charge", func(context.Context) (bool, error) {
				if flaky.Add(1) == 1 {
					return false, errors.New("gateway down")
				}
				return true, nil
			})
		})
	}
}

const workflowFeature = `Feature: durable workflows
  Scenario: an order waits for its shipment, one is declined, one is retried, one is cancelled
    Given a Trellis server
    And a workflow pool hosts the suite's workflows
    When I start workflow "order" as run "first" with input {"id": "o-1"}
    Then wait up to 60 seconds until run "first" is waiting
    When I signal run "first" with "ship" and data {"carrier": "ups"}
    Then wait up to 60 seconds until run "first" is completed with steps "reserve, charge, ship"
    And run "first" has output {"shipped_by": "ups", "id": "o-1"}
    When I start workflow "declined" with input null
    Then wait up to 60 seconds until the run failed with an error containing "card declined"
    When I start workflow "flaky" as run "flaky" with input {}
    Then wait up to 60 seconds until the run is failed
    When I retry run "flaky"
    Then wait up to 60 seconds until run "flaky" is completed with steps "charge"
    When I start workflow "order" with input {"id": "o-2"}
    Then wait up to 60 seconds until the run is waiting
    When I cancel the run
    Then wait up to 60 seconds until the run is cancelled
`

// TestWorkflowSteps: a suite's own workflows run through the steps:
// start, signal, completion with its steps and output, failure, retry,
// cancel.
func TestWorkflowSteps(t *testing.T) {
	t.Parallel()
	mustPass(t, Config{Workflows: testWorkflows()}, workflowFeature, nil)
}

// TestWorkflowStepErrors: false claims fail with what is true, and bad
// input (an unknown workflow, input that is not JSON, a signal to a
// finished run, a run never named, no workflows to host) fails with a
// clear error.
func TestWorkflowStepErrors(t *testing.T) {
	t.Parallel()
	head := "Feature: f\n  Scenario: s\n    Given a Trellis server\n    And a workflow pool hosts the suite's workflows\n" +
		"    When I start workflow \"order\" as run \"first\" with input {\"id\": \"o-1\"}\n" +
		"    Then wait up to 60 seconds until the run is waiting\n"
	done := head + "    When I signal the run with \"ship\" and data {\"carrier\": \"dhl\"}\n" +
		"    Then wait up to 60 seconds until the run is completed\n"
	for _, c := range []struct{ feature, want string }{
		{head + "    Then the run is completed\n", "is waiting; expected completed"},
		{head + "    Then the run is completed with steps \"reserve, charge\"\n", "is waiting with steps"},
		{done + "    Then the run is completed with steps \"reserve, ship\"\n", `has steps "reserve (completed), charge (completed), ship (completed)"; expected "reserve, ship"`},
		{done + "    Then the run has output {\"id\": \"o-1\", \"shipped_by\": \"ups\"}\n", `has output {"id":"o-1","shipped_by":"dhl"}`},
		{done + "    Then the run failed with an error containing \"x\"\n", "is completed; expected failed"},
		{done + "    When I signal the run with \"ship\"\n", "takes no more signals"},
		{head + "    When I start workflow \"nosuch\" with input {}\n", `workflow "nosuch"`},
		{head + "    When I start workflow \"order\" with input {id: 1}\n", "is not valid JSON"},
		{head + "    When I start workflow \"order\" as run \"first\" with input {}\n", `already named "first"`},
		{head + "    When I signal run \"nobody\" with \"ship\"\n", `workflow run "nobody" does not exist`},
		{head + "    When I cancel run \"no.such\"\n", `no run is named "no.such"`},
	} {
		t.Run(c.want, func(t *testing.T) {
			status, out := runFeature(t, Config{Workflows: testWorkflows()}, c.feature, nil)
			if status != 1 || !strings.Contains(out, c.want) {
				t.Fatalf("status %d; want 1 with %q:\n%s", status, c.want, out)
			}
		})
	}
	status, out := runFeature(t, Config{}, "Feature: f\n  Scenario: s\n    Given a Trellis server\n    And a workflow pool hosts the suite's workflows\n", nil)
	if status != 1 || !strings.Contains(out, "set steps.Config.Workflows") {
		t.Fatalf("no workflows: status %d:\n%s", status, out)
	}
	status, out = runFeature(t, Config{}, "Feature: f\n  Scenario: s\n    When I retry the run\n", nil)
	if status != 1 || !strings.Contains(out, `start it with "Given a Trellis server"`) {
		t.Fatalf("no server: status %d:\n%s", status, out)
	}
}
