Feature: Worker pools on durable consumers
  Fleets of workers claim tasks with a lease they keep alive while they
  work. A worker that crashes loses its lease and another worker takes the
  task over; a task that keeps failing is retried with backoff and then set
  aside as a dead letter for an operator.

  Scenario: A pool of workers drains a queue
    Given a running Trellis server
    And 40 queued tasks in queue "pool"
    When a worker pool "P" of 4 runs a handler that succeeds on queue "pool"
    Then every task in queue "pool" is done
    And each task in queue "pool" has exactly one completion event

  Scenario: A crashed worker's task is taken over after its lease
    Given a running Trellis server
    And a queue "crash" whose lease is 1 second
    And a queued task "Rebuild the index" in queue "crash"
    When worker "A" claims it and crashes without finishing
    And a worker pool "B" of 1 runs a handler that succeeds on queue "crash"
    Then every task in queue "crash" is done
    And its history reads "claimed by A, lease_expired, claimed by B/0, completed by B/0"

  Scenario: A task that always fails ends as a dead letter
    Given a running Trellis server
    And a queued task "Call the flaky API" in queue "flaky" with 3 attempts
    When a worker pool "F" of 2 runs a handler that always fails with "503 from upstream" on queue "flaky"
    Then the task is dead after 3 attempts
    And it is listed among the dead tasks with the error "503 from upstream"
    When an operator retries it and a worker pool "G" of 1 runs a handler that succeeds on queue "flaky"
    Then every task in queue "flaky" is done
