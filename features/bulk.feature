Feature: A plan added in bulk, worked by a pool
  A planner breaks a migration into many small tasks and adds them in one
  call; a worker pool works them off. Each is still its own task: claimed
  once, completed once, with its own history.

  Scenario: Two hundred tasks added in one call are all done exactly once
    Given a Trellis server
    When I add 200 tasks to queue "migration" in one call with objective "Migrate one module"
    And I start 4 workers "migrator" on queue "migration" running "true"
    Then wait up to 60 seconds until queue "migration" has 200 tasks "done"
    And no task was completed more than once
    And the history of that task is "added, claimed, completed"
    And replaying the log rebuilds the same board
