Feature: Agent memory consolidated into facts
  Agents working on a task record observations. Consolidation turns them
  into facts, collapses the duplicate findings of different agents, and
  lets the durable knowledge reach the main branch.

  Scenario: Two agents work a task, duplicate findings collapse, durable facts reach main
    Given a Trellis server
    And a memory task "fix-auth" with the objectives "Fix the middleware" and "Add tests"
    And agent "alice" joins memory task "fix-auth" as "implementer"
    And agent "bob" joins memory task "fix-auth" as "reviewer"
    When agent "alice" observes on memory task "fix-auth" in session "a1" a discovery "Expired tokens pass the auth middleware on refresh"
    And agent "alice" observes on memory task "fix-auth" in session "a1" an insight "The refresh handler retries three times before failing"
    And agent "alice" observes on memory task "fix-auth" in session "a1" a decision "Validate tokens in one shared function"
    And agent "alice" observes on memory task "fix-auth" in session "a2" a decision "Validate tokens in one shared function"
    And agent "bob" observes on memory task "fix-auth" in session "b1" a discovery "Expired tokens pass the auth middleware on refresh"
    And agent "bob" observes on memory task "fix-auth" in session "b1" a decision "Validate tokens in one shared function"
    And agent "alice" completes her work on memory task "fix-auth"
    And agent "bob" completes his work on memory task "fix-auth"
    Then branch "task/fix-auth" holds 3 active facts
    And the consolidation history of "fix-auth" shows bob's duplicates deduplicated
    When agent "alice" marks every objective of memory task "fix-auth" done
    And memory task "fix-auth" is completed with a merge
    Then branch "main" holds the fact "Validate tokens in one shared function"
    And branch "main" does not hold the fact "The refresh handler retries three times before failing"
    And the context of "fix-auth" lists both agents' summaries
