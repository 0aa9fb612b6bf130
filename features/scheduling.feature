Feature: Scheduling and flow control
  Tasks can wait for other tasks, for a time, or for their turn: a review
  runs after the implementation it reviews and reads what it did, one
  agent at a time works in a repository, a schedule adds the nightly work,
  and an operator can cancel what is no longer needed. Every one of these
  is an event in the log.

  Scenario: Implement, then review
    Given a Trellis server
    When I add a task "implement" to queue "dev" with:
      | objective | Implement the login form |
    And I add a task "review" to queue "dev" with:
      | objective | Review the login form |
      | after     | implement             |
    Then task "review" is "waiting"
    When worker "coder" claims the next task from queue "dev"
    Then that task is claimed by "coder"
    And worker "reviewer" finds no task in queue "dev"
    When worker "coder" completes it with "Implemented the form in login.py"
    Then wait up to 10 seconds until task "review" is "queued"
    When worker "reviewer" claims the next task from queue "dev"
    Then task "review" shows what task "implement" did
    And the history of task "review" is "added, ready, claimed by reviewer"

  Scenario: A failed implementation cancels its review
    Given a Trellis server
    When I add a task "implement" to queue "dev" with:
      | objective | Implement the payment form |
    And I add a task "review" to queue "dev" with:
      | objective | Review the payment form |
      | after     | implement               |
    And worker "coder" claims the next task from queue "dev"
    And worker "coder" fails it with "the payment API is down"
    Then wait up to 10 seconds until task "review" is "cancelled"
    And queue "dev" has 1 task "failed" and 1 task "cancelled"

  Scenario: At most one agent per repository
    Given a Trellis server
    When an operator limits queue "agents" to 1 task per concurrency key
    And I add 3 tasks to queue "agents" with:
      | objective       | Fix a flaky test in the API |
      | concurrency key | repo-api                    |
    And I add 2 tasks to queue "agents" with:
      | objective       | Update the docs site |
      | concurrency key | repo-docs            |
    And I start 3 workers "agent" on queue "agents" running "sleep 0.3"
    Then wait up to 30 seconds until queue "agents" is idle
    And queue "agents" has 5 tasks "done"
    And no two tasks with one concurrency key ran at once in queue "agents"
    And no task was held by two workers at once

  Scenario: Urgent work goes first
    Given a Trellis server
    When I add 5 tasks to queue "ops" with:
      | objective | Rebuild the search index |
      | priority  | 4                        |
    And I add a task "page" to queue "ops" with:
      | objective | Answer the page |
      | priority  | 1               |
    And worker "oncall" claims the next task from queue "ops"
    Then that task is claimed by "oncall"
    And the history of task "page" is "added, claimed by oncall"

  Scenario: A nightly schedule, and ticks that add one task each
    Given a Trellis server
    When an operator adds schedule "nightly" to queue "reports" at cron "0 2 * * *" with objective "Export the orders"
    Then schedule "nightly" next ticks at "02:00"
    When an operator adds schedule "pulse" to queue "reports" every "1s" with objective "Check the disk space"
    And I start 1 worker "reporter" on queue "reports" running "true"
    Then wait up to 20 seconds until schedule "pulse" has added 3 or more tasks, one per tick
    When an operator removes schedule "pulse"
    Then wait up to 20 seconds until queue "reports" is idle
    And no task was completed more than once
    And replaying the log rebuilds the same board

  Scenario: Cancel what is no longer needed
    Given a Trellis server
    When I add a task "digest" to queue "mail" with:
      | objective  | Send the weekly digest |
      | delay      | 1h                     |
      | unique key | weekly-digest          |
    Then task "digest" is "scheduled"
    When I add 1 task to queue "mail" with:
      | objective  | Send the weekly digest again |
      | unique key | weekly-digest                |
    Then that task is "scheduled"
    And the log holds 1 "added" event for queue "mail"
    When an operator cancels task "digest" because "the list is empty"
    Then that task is "cancelled"
    And the history of task "digest" is "added, cancelled by operator"
