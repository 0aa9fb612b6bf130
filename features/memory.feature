Feature: Agent memory consolidated into facts
  Agents working on a task record observations. Consolidation turns them
  into facts, collapses the duplicate findings of different agents, and
  lets the durable knowledge reach the main branch.

  Scenario: Two agents work a task, duplicate findings collapse, durable facts reach main
    Given a running Trellis server
    And a task "fix-auth" with the objectives "Fix the middleware" and "Add tests"
    And agent "alice" joined "fix-auth" as "implementer"
    And agent "bob" joined "fix-auth" as "reviewer"
    When "alice" observes in session "a1" a discovery "Expired tokens pass the auth middleware on refresh"
    And "alice" observes in session "a1" an insight "The refresh handler retries three times before failing"
    And "alice" observes in session "a1" a decision "Validate tokens in one shared function"
    And "alice" observes in session "a2" a decision "Validate tokens in one shared function"
    And "bob" observes in session "b1" a discovery "Expired tokens pass the auth middleware on refresh"
    And "bob" observes in session "b1" a decision "Validate tokens in one shared function"
    And "alice" completes her work on "fix-auth"
    And "bob" completes his work on "fix-auth"
    Then the task branch "task/fix-auth" holds 3 active facts
    And the consolidation history of "fix-auth" shows bob's duplicates deduplicated
    When "alice" marks every objective of "fix-auth" done
    And the task "fix-auth" is completed with a merge
    Then "main" holds the fact "Validate tokens in one shared function"
    And "main" does not hold the fact "The refresh handler retries three times before failing"
    And the context of "fix-auth" lists both agents' summaries
