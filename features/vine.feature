Feature: VINE task graphs run by many agents at once
  A .vine file is a dependency graph of tasks. Agents run a loop on it:
  find the frontier, expand references, complete what has been consumed,
  claim one ready task, do it, record decisions, hand it over for review.
  Every change is an event, claims are atomic across agents, and the file
  stays the readable, diffable picture of the graph.

  Scenario: An orchestrator drives the PR-ready checklist to done
    Given a Trellis server
    And a VINE graph "pr-ready.vine":
      """
      vine 1.2.0
      title: PR ready
      ---
      [pr-ready] PR is ready to merge (notstarted)
      All checks pass and the PR is reviewed.
      -> review
      -> ci-green
      ---
      [review] Review (notstarted)
      Address review comments until approved.
      -> ci-green
      ---
      [ci-green] CI green (notstarted)
      GitHub Actions pass on the PR.
      -> open-pr
      ---
      [open-pr] Open the PR (notstarted)
      Open a PR with a clear description.
      -> typecheck
      -> lint
      -> format-check
      -> test
      -> e2e
      -> build-vscode
      ---
      [typecheck] Typecheck (notstarted)
      -> changes
      ---
      [lint] Lint (notstarted)
      -> changes
      ---
      [format-check] Format check (notstarted)
      -> changes
      ---
      [test] Unit tests (notstarted)
      -> changes
      ---
      [e2e] End-to-end tests (notstarted)
      -> changes
      ---
      [build-vscode] Build the VS Code extension (notstarted)
      -> changes
      ---
      [changes] Make the changes (notstarted)
      -> branch
      ---
      [branch] Create the feature branch (notstarted)
      Branch from latest main.
      """
    When the orchestrator dispatches sub-agents on "pr-ready.vine", one per ready task, each doing one task and reporting back, until the root is complete
    Then the root of "pr-ready.vine" is "complete"
    And the file "pr-ready.vine" is the graph as the log has it
    And every task of "pr-ready.vine" was claimed exactly once
    And one round ran the six checks "typecheck, lint, format-check, test, e2e, build-vscode" in parallel
    And every task of "pr-ready.vine" carries the decision its agent recorded

  Scenario: Eight agents in separate processes share a 500-task graph
    Given a Trellis server
    And a generated graph "big.vine" of 500 tasks
    When 8 agents run the loop on "big.vine" as separate processes
    Then the root of "big.vine" is "complete"
    And the file "big.vine" is the graph as the log has it
    And every task of "big.vine" was claimed exactly once
    And the history of "big.vine" starts with its import and ends with the root's completion
