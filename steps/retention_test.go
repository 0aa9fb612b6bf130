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
