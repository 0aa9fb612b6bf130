Feature: Replay the log for an audit
  The event log is the truth. Every view can be dropped and rebuilt from
  it, and the full history of any task can be printed.

  Scenario: Rebuilt views equal the live ones
    Given a Trellis server
    And a mixed workload of 120 operations has run
    When I remember the checkpoint files
    Then replaying the log rebuilds the same board
    And the checkpoint files are the same as before

  Scenario: The audit trail of a task
    Given a Trellis server
    When I add 1 task to queue "default" with objective "Write the release notes"
    And worker "agent-7" claims the next task from queue "default"
    And worker "agent-7" completes it with "Release notes written" using 2 steps and 1 tool calls
    Then the history of that task is "added, claimed by agent-7, completed by agent-7"
