Feature: A quick task costs one write
  A worker pool holds the dispatch of a task it runs as its lease. When the
  handler ends within the pool's claim window, the outcome is recorded with
  its claim in one event, so a queue of short tasks moves at the rate of
  one durable write per task; a task that runs longer has its claim on the
  board while it runs. Either way the history reads added, claimed,
  completed, and no task is held or completed twice.

  Scenario: Short tasks are each recorded in two events
    Given a Trellis server
    And queue "thumbnails" has a lease of 20 seconds
    And queue "thumbnails" has a claim window of 5 seconds
    When I add 60 tasks to queue "thumbnails" in one call with objective "Resize one image"
    And I start 3 workers "resizer" on queue "thumbnails" running "true"
    Then wait up to 60 seconds until queue "thumbnails" has 60 tasks "done"
    And that task was recorded in 2 events
    And the history of that task is "added, claimed, completed"
    And the log holds 60 "claimed" events for queue "thumbnails"
    And no task was held by two workers at once
    And no task was completed more than once
    And replaying the log rebuilds the same board

  Scenario: A long task shows as claimed while it runs
    Given a Trellis server
    When I add 1 task to queue "reports" with objective "Build the quarterly report"
    And I start 1 worker "reporter" on queue "reports" running "sleep 2"
    Then wait up to 10 seconds until that task is claimed by "reporter"
    And wait up to 30 seconds until that task is "done"
    And that task was recorded in 3 events
    And the history of that task is "added, claimed by reporter/0, completed by reporter/0"
