Feature: A crashed worker's task is taken over by another worker
  A worker holds its claim under a lease that it keeps alive while its
  command runs. When the worker's machine dies (kill -9: no drain, no
  goodbye), the claim stays until the lease runs out; then the log records
  the expiry and another worker takes the task over. The task is completed
  once, by the second worker. The lease is 2 seconds here so the feature
  runs fast; the default is 30 seconds.

  Scenario: kill -9 a worker process in the middle of a task
    Given a Trellis server
    And queue "reindex" has a lease of 2 seconds
    When I add 1 task to queue "reindex" with objective "Rebuild the search index"
    And I start worker process "A" on queue "reindex" running "sleep 60"
    And wait up to 20 seconds until that task is claimed by "A"
    And I kill -9 worker process "A"
    And I start 1 worker "B" on queue "reindex" running "echo reindexed"
    Then wait up to 20 seconds until that task is "done"
    And the history of that task is "added, claimed by A/0, lease_expired, claimed by B/0, completed by B/0"
    And that task's checkpoint says "reindexed"
    And no task was completed more than once
    And no task was held by two workers at once
