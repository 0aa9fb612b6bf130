Feature: Worker pools on durable consumers
  Fleets of workers claim tasks with a lease they keep alive while they
  work. A worker that crashes loses its lease and another worker takes the
  task over; a task that keeps failing is retried with backoff and then set
  aside as a dead letter for an operator.

  Scenario: A pool of workers drains a queue
    Given a Trellis server
    When I add 40 tasks to queue "pool" with objective "Process an item"
    And I start 4 workers "P" on queue "pool" running "echo handled"
    Then wait up to 60 seconds until queue "pool" has 40 tasks "done"
    And the log holds 40 "completed" events for queue "pool"
    And no task was completed more than once

  Scenario: A crashed worker's task is taken over after its lease
    Given a Trellis server
    And queue "crash" has a lease of 1 second
    When I add 1 task to queue "crash" with objective "Rebuild the index"
    And worker "A" claims it under a 1 second lease and crashes without finishing
    And I start 1 worker "B" on queue "crash" running "echo rebuilt"
    Then wait up to 60 seconds until queue "crash" has 1 task "done"
    And the history of that task is "added, claimed by A, lease_expired, claimed by B/0, completed by B/0"

  Scenario: A task that always fails ends as a dead letter
    Given a Trellis server
    When I add 1 task to queue "flaky" with:
      | objective    | Call the flaky API |
      | max attempts | 3                  |
    And I start 2 workers "F" on queue "flaky" running "echo '503 from upstream' >&2; exit 1"
    Then wait up to 60 seconds until that task is "dead"
    And that task was tried 3 times
    And queue "flaky" has 1 task "dead"
    And that task's last error says "503 from upstream"
    When I drain workers "F"
    And an operator retries that task
    And I start 1 worker "G" on queue "flaky" running "echo called"
    Then wait up to 60 seconds until queue "flaky" has 1 task "done"
    And the history of that task is "added, claimed, attempt_failed, claimed, attempt_failed, claimed, dead, requeued, claimed by G/0, completed by G/0"
