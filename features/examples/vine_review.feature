Feature: Implement, then review, on a VINE graph
  A feature is planned as a VINE graph: every piece of work is implemented
  and then reviewed before the feature ships. Agents claim whatever is
  ready, one task at a time, so both implementations run at once and a
  review starts only once its implementation is done. The reviewer reads
  the implementer's decisions, which come with the task it claims
  (agents/login.sh is the agents' script).

  Background:
    Given a Trellis server
    And a VINE graph "login.vine":
      """
      vine 1.2.0
      title: Login page
      ---
      [ship] Ship the login page (notstarted)
      The form and the API are implemented and reviewed.
      -> review-form
      -> review-api
      ---
      [review-form] Review the form (notstarted)
      -> implement-form
      ---
      [review-api] Review the API (notstarted)
      -> implement-api
      ---
      [implement-form] Implement the form (notstarted)
      Two fields and a button.
      ---
      [implement-api] Implement the API (notstarted)
      POST /login returns a session cookie.
      """

  Scenario: Two agents implement and review a login page
    Then the frontier of "login.vine" is "implement-form, implement-api"
    When 2 agents run "login.vine" with "sh agents/login.sh"
    Then the root of "login.vine" is "complete"
    And task "implement-api" of "login.vine" has the decision "implemented the api"
    And task "review-api" of "login.vine" has the decision "approved the api"
    And task "review-form" of "login.vine" has the decision "approved the form"
    And every task of "login.vine" was claimed exactly once

  Scenario: A review that finds nothing implemented blocks the graph
    When 2 agents run "login.vine" with "LOGIN_SKIP=api sh agents/login.sh"
    Then task "review-api" of "login.vine" is "blocked"
    And task "review-form" of "login.vine" is "reviewing"
    And the root of "login.vine" is "notstarted"
    And the frontier of "login.vine" is ""
