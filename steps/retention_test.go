package steps

import "testing"

// TestPruneRightAfterFinishing: a prune "older than 2s" right after the
// task finished removes it: the step waits until every event is older
// than the age before it takes the cut, so the scenario of
// features/retention.feature ("older than 1ms" right after a task
// finishes) counts the same tasks on any machine.
func TestPruneRightAfterFinishing(t *testing.T) {
	t.Parallel()
	mustPass(t, Config{}, `Feature: prune right after finishing
  Scenario: a task finished just now is older than a short age by the time the prune cuts
    Given a Trellis server
    When I add a task "export" to queue "reports" with:
      | objective | Export the orders |
    And worker "w1" claims the next task from queue "reports"
    And worker "w1" completes it with "Orders exported"
    And an operator prunes finished tasks older than 2s into the archive "now"
    Then the prune removed 1 tasks and kept 0 open tasks
`, nil)
}

// TestPruneWorkflowRunSteps: the workflow retention steps on a prune of
// one finished run while another waits (the scenario of
// features/retention.feature): the finished run is gone from the log and
// its archive verifies, the waiting one completes after the prune.
func TestPruneWorkflowRunSteps(t *testing.T) {
	t.Parallel()
	mustPass(t, Config{Workflows: testWorkflows()}, `Feature: prune a workflow run
  Scenario: a finished run is pruned, a waiting one keeps working
    Given a Trellis server
    And a workflow pool hosts the suite's workflows
    When I start workflow "order" as run "shipped" with input {"id": "o-1"}
    Then wait up to 60 seconds until run "shipped" is waiting
    When I signal run "shipped" with "ship" and data {"carrier": "ups"}
    Then wait up to 60 seconds until run "shipped" is completed with steps "reserve, charge, ship"
    When I start workflow "order" as run "pending" with input {"id": "o-2"}
    Then wait up to 60 seconds until run "pending" is waiting
    When an operator prunes finished tasks older than 1ms into the archive "runs"
    Then the prune removed 1 workflow run and kept 1 open run
    And run "shipped" is no longer in the log
    And the archive "runs" verifies and holds 1 workflow run
    And the live log verifies
    When I signal run "pending" with "ship" and data {"carrier": "dhl"}
    Then wait up to 60 seconds until run "pending" is completed with steps "reserve, charge, ship"
    And the live log verifies
`, nil)
}
