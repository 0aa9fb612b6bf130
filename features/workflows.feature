Feature: Durable workflows in a suite's own steps
  A Go project hosts its workflows in its godog suite (steps.Config.Workflows)
  and drives them with the steps vocabulary: start runs, send signals, cancel,
  retry, and check what each run recorded.

  Background:
    Given a Trellis server
    And a workflow pool hosts the suite's workflows

  Scenario: an order waits for its shipment and completes with every step recorded
    When I start workflow "order" as run "o-1" with input {"id": "o-1"}
    Then wait up to 60 seconds until run "o-1" is waiting
    When I signal run "o-1" with "ship" and data {"carrier": "ups"}
    Then wait up to 60 seconds until run "o-1" is completed with steps "reserve, charge, ship"
    And run "o-1" has output {"id": "o-1", "shipped_by": "ups"}

  Scenario: an order waiting for its shipment is cancelled
    When I start workflow "order" with input {"id": "o-2"}
    Then wait up to 60 seconds until the run is waiting
    When I cancel the run
    Then wait up to 60 seconds until the run is cancelled
