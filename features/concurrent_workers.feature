Feature: Many workers, each task claimed exactly once
  A fleet of workers on many machines claims tasks from one queue through
  a durable JetStream consumer; every claim is a checked append to the
  task's history, so no task is ever claimed twice.

  Scenario: 10 workers and 200 tasks each
    Given a Trellis server
    When I add 2000 tasks to queue "batch" with objective "Process an item"
    And 10 workers claim and complete tasks from queue "batch" until it is empty, each on its own connection
    Then queue "batch" has 2000 tasks "done"
    And the log holds 2000 "claimed" events for queue "batch"
    And the log holds 2000 "completed" events for queue "batch"
    And no task was held by two workers at once
