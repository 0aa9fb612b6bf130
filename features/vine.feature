Feature: VINE task graphs run by many agents at once
  A .vine file is a dependency graph of tasks. Agents run a loop on it:
  find the frontier, expand references, complete what has been consumed,
  claim one ready task, do it, record decisions, hand it over for review.
  Every change is an event, claims are atomic across agents, and the file
  stays the readable, diffable picture of the graph.

  Scenario: An orchestrator drives the PR-ready checklist to done
    Given a running Trellis server with a workspace
    And the PR-ready checklist graph "pr-ready.vine"
    When the orchestrator dispatches sub-agents, one per ready task, each doing one task and reporting back, until the root is complete
    Then the root "pr-ready" is complete in "pr-ready.vine"
    And every task of "pr-ready.vine" was claimed exactly once
    And one round ran the six checks "typecheck, lint, format-check, test, e2e, build-vscode" in parallel
    And every task of "pr-ready.vine" carries the decision its agent recorded

  Scenario: Eight agents in separate processes share a 500-task graph
    Given a running Trellis server with a workspace
    And a generated graph "big.vine" of 500 tasks
    When 8 agents run the loop on "big.vine" as separate processes
    Then the root "root" is complete in "big.vine"
    And every task of "big.vine" was claimed exactly once
    And the history of "big.vine" starts with its import and ends with the root's completion
