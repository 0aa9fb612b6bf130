Feature: Many workers, each task claimed exactly once
  A fleet of workers on many machines claims tasks from one queue through
  a durable JetStream consumer; every claim is a checked append to the
  task's history, so no task is ever claimed twice.

  Scenario: 10 workers and 200 tasks each
    Given a running Trellis server
    And 2000 queued tasks in queue "batch"
    When 10 workers claim and complete tasks from queue "batch" until it is empty
    Then every one of the 2000 tasks was claimed exactly once
    And the log holds exactly one claimed and one completed event per task
