Feature: Bounded tasks on a shared queue
  Agents break long work into bounded tasks, take one task at a time,
  work within its budget and leave a checkpoint, so that work can resume
  after any crash without losing context.

  Background:
    Given a Trellis server

  Scenario: A 20-task workflow run by one agent
    When I add 20 tasks "Process batch N" with a budget of 10 tool calls and 5 steps
    And a worker "agent-1" runs the loop 20 times: take the next task, then finish it with "Batch processed" and next step "Next batch"
    Then queue "default" has 20 tasks "done"
    And every done task has a Markdown checkpoint with every checkpoint section
    And worker "agent-2" finds no task in queue "default"

  Scenario: A task fails with blockers
    When I add 1 task to queue "default" with objective "Fix bug in payment processing"
    And worker "agent-1" claims the next task from queue "default"
    And worker "agent-1" fails it with error "Cannot access database credentials" and blockers "Missing .env file" and "Database unreachable"
    Then that task is "failed"
    And its checkpoint lists "Error: Cannot access database credentials", "Missing .env file" and "Database unreachable" under Blockers/Errors
    And worker "agent-1" completing that task is refused as "conflict"

  Scenario: Only the claimant may finish a task
    When I add 1 task to queue "default" with objective "Refactor authentication module"
    And worker "agent-1" claims the next task from queue "default"
    Then worker "agent-2" completing that task is refused as "conflict"
    And that task is claimed by "agent-1"

  Scenario: Going over budget is recorded
    When I add 1 task to queue "default" with:
      | objective      | Summarise the design |
      | max tool calls | 20                   |
      | max steps      | 10                   |
    And worker "agent-1" claims the next task from queue "default"
    And worker "agent-1" completes it with "Summarised" using 12 steps and 3 tool calls
    Then that task is "done"
    And that task is marked budget exhausted
    And its checkpoint file says the budget was exhausted
