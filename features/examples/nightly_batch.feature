@nightly
Feature: A nightly batch with retries
  Every night the day's orders are exported, one task per region, by a
  pool of workers running a shell script. The upstream API is flaky: the
  first attempt of every export gets a 503, and the worker retries it
  after a short backoff. One region's data is corrupt: its export fails on
  every attempt and ends as a dead letter for an operator, without
  holding up the others.

  Scenario: The export survives a flaky upstream and sets the poison task aside
    Given a Trellis server
    When I add a task "emea" to queue "nightly" with:
      | objective    | Export the EMEA orders |
      | metadata     | region=emea            |
      | max attempts | 3                      |
    And I add a task "apac" to queue "nightly" with:
      | objective    | Export the APAC orders |
      | metadata     | region=apac            |
      | max attempts | 3                      |
    And I add a task "amer" to queue "nightly" with:
      | objective    | Export the AMER orders |
      | metadata     | region=amer            |
      | metadata     | corrupt=yes            |
      | max attempts | 3                      |
    And I start 2 workers "nightly" on queue "nightly" running:
      """
      packet=$(cat)
      case "$packet" in
        *'"corrupt":"yes"'*) echo "row 17 of the export is malformed" >&2; exit 2 ;;
      esac
      if [ "$TRELLIS_ATTEMPT" -lt 2 ]; then echo "upstream returned 503" >&2; exit 1; fi
      echo '{"what_was_done":"exported the orders","steps_used":2,"tool_calls_used":1}'
      """
    Then wait up to 30 seconds until queue "nightly" is idle
    And queue "nightly" has 2 tasks "done" and 1 task "dead"
    And the history of task "emea" is "added, claimed, attempt_failed, claimed, completed"
    And that task's checkpoint says "exported the orders"
    And task "amer" is "dead"
    And that task was tried 3 times
    And that task's last error says "row 17 of the export is malformed"
    And the log holds 4 "attempt_failed" events for queue "nightly"
    And no task was completed more than once
    When I drain workers "nightly"
    Then replaying the log rebuilds the same board
