Feature: Replay the log for an audit
  The event log is the truth. Every view can be dropped and rebuilt from
  it, and the full history of any task can be printed.

  Scenario: Rebuilt views equal the live ones
    Given a running Trellis server
    And a mixed workload of 120 operations has run
    When I remember the queue board and the checkpoints
    And I replay the log
    Then the queue board is the same as before
    And the checkpoint files are the same as before

  Scenario: The audit trail of a task
    Given a running Trellis server
    And a queued task "Write the release notes"
    When worker "agent-7" takes the next task
    And worker "agent-7" finishes it having used 2 steps and 1 tool calls
    Then the audit of the task lists the events "added, claimed, completed" in order
    And the claimed and completed events name "agent-7" as the actor
