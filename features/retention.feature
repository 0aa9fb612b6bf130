Feature: Keep the log bounded: prune finished tasks into an archive
  Finished tasks leave the live log once they are older than the
  retention period. Their events go first to an archive that can be
  checked on its own; the live log still verifies afterwards, and the
  tasks that are still open keep working as before.

  Scenario: An operator prunes finished tasks and checks the archive and the log
    Given a Trellis server
    When I add a task "export" to queue "reports" with:
      | objective | Export the orders |
    And worker "w1" claims the next task from queue "reports"
    And worker "w1" completes it with "Orders exported"
    And I add 4 tasks to queue "reports" with objective "Build the monthly report"
    And worker "w1" claims the next task from queue "reports"
    And worker "w1" completes it with "Report built"
    And worker "w1" claims the next task from queue "reports"
    And worker "w1" fails it with "database unreachable"
    Then the history of that task is "added, claimed by w1, failed by w1"
    And queue "reports" has 2 tasks "done", 1 task "failed" and 2 tasks "queued"
    And the live log verifies
    When an operator prunes finished tasks older than 1ms into the archive "monthly"
    Then the prune removed 3 tasks and kept 2 open tasks
    And task "export" is no longer in the log
    And the archive "monthly" verifies and holds 3 tasks
    And an edit to the archive "monthly" is found
    And the live log verifies
    And wait up to 30 seconds until queue "reports" has 2 tasks "queued"
    When worker "w2" claims the next task from queue "reports"
    And worker "w2" completes it with "Report built after the prune"
    Then the history of that task is "added, claimed by w2, completed by w2"
    And queue "reports" has 1 task "done" and 1 task "queued"
    And the live log verifies
    And replaying the log rebuilds the same board

  Scenario: The server prunes finished tasks on its own
    Given a Trellis server that prunes finished tasks older than 1ms every 200ms into the archive "rolling"
    When I add 3 tasks to queue "images" with objective "Resize the images"
    And worker "w1" claims the next task from queue "images"
    And worker "w1" completes it with "Images resized"
    And worker "w1" claims the next task from queue "images"
    And worker "w1" completes it with "Images resized"
    Then wait up to 60 seconds until the server's retention has pruned 2 tasks
    And the archive "rolling" verifies and holds 2 tasks
    And the live log verifies
    And wait up to 30 seconds until queue "images" has 1 task "queued"
    When worker "w2" claims the next task from queue "images"
    And worker "w2" completes it with "Images resized"
    Then wait up to 60 seconds until the server's retention has pruned 3 tasks
    And the archive "rolling" verifies and holds 3 tasks
    And the live log verifies

  Scenario: An operator prunes a finished workflow run; a waiting run keeps working
    Given a Trellis server
    And a workflow pool hosts the suite's workflows
    When I start workflow "order" as run "shipped" with input {"id": "o-1"}
    Then wait up to 60 seconds until run "shipped" is waiting
    When I signal run "shipped" with "ship" and data {"carrier": "ups"}
    Then wait up to 60 seconds until run "shipped" is completed with steps "reserve, charge, ship"
    When I start workflow "order" as run "pending" with input {"id": "o-2"}
    Then wait up to 60 seconds until run "pending" is waiting
    When an operator prunes finished tasks older than 1ms into the archive "runs"
    Then the prune removed 1 workflow run and kept 1 open run
    And run "shipped" is no longer in the log
    And the archive "runs" verifies and holds 1 workflow run
    And the live log verifies
    When I signal run "pending" with "ship" and data {"carrier": "dhl"}
    Then wait up to 60 seconds until run "pending" is completed with steps "reserve, charge, ship"
    And run "pending" has output {"id": "o-2", "shipped_by": "dhl"}
    And the live log verifies
