Feature: Bounded tasks on a shared queue
  Agents break long work into bounded tasks, take one task at a time,
  work within its budget and leave a checkpoint, so that work can resume
  after any crash without losing context.

  Background:
    Given a running Trellis server

  Scenario: The seed's 20-task workflow
    When I add 20 tasks "Process batch N" with a budget of 10 tool calls and 5 steps
    And a worker "agent-1" runs the loop 20 times: take the next task, then finish it with "Batch processed" and next step "Next batch"
    Then 20 tasks are done
    And every done task has a Markdown checkpoint with the sections of the seed
    And taking the next task returns nothing

  Scenario: A task fails with blockers
    Given a queued task "Fix bug in payment processing"
    When worker "agent-1" takes the next task
    And worker "agent-1" fails it with error "Cannot access database credentials" and blockers "Missing .env file" and "Database unreachable"
    Then the task is failed
    And its checkpoint lists "Error: Cannot access database credentials", "Missing .env file" and "Database unreachable" under Blockers/Errors
    And finishing the task again is refused as a conflict

  Scenario: Only the claimant may finish a task
    Given a queued task "Refactor authentication module"
    When worker "agent-1" takes the next task
    Then worker "agent-2" finishing it is refused as a conflict
    And the task is still claimed by "agent-1"

  Scenario: Going over budget is recorded
    Given a queued task "Summarise the design" with a budget of 20 tool calls and 10 steps
    When worker "agent-1" takes the next task
    And worker "agent-1" finishes it having used 12 steps and 3 tool calls
    Then the task is done and marked budget exhausted
    And its checkpoint says the budget was exhausted
