package steps_test

import (
	"context"
	"fmt"
	"io"

	"github.com/cucumber/godog"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/steps"
)

// A Go project runs features about its own workflows with the Trellis
// steps, next to steps of its own that use the scenario's Trellis.
func Example() {
	feature := `Feature: reports
  Scenario: a report is built once
    Given a Trellis server
    When I add 5 tasks to queue "jobs" with objective "Build report"
    And worker "w1" claims the next task from queue "jobs"
    And worker "w1" completes it with "Report built"
    Then queue "jobs" has 1 task "done" and 4 tasks "queued"
    And the history of that task is "added, claimed, completed"
    And no task was completed more than once
    And replaying the log rebuilds the same board
    And the report says "Report built"
`
	suite := godog.TestSuite{
		Name: "reports",
		ScenarioInitializer: func(sc *godog.ScenarioContext) {
			w := steps.Register(sc, steps.Config{})
			// A step of the project's own, on the same Trellis.
			sc.Step(`^the report says "([^"]*)"$`, func(ctx context.Context, text string) error {
				t, err := w.Queue().Show(ctx, w.Task().TaskID)
				if err != nil {
					return err
				}
				if t.Status != trellis.StatusDone || t.Checkpoint.WhatWasDone != text {
					return fmt.Errorf("the report is %s: %q", t.Status, t.Checkpoint.WhatWasDone)
				}
				return nil
			})
		},
		Options: &godog.Options{
			Format:          "pretty",
			Output:          io.Discard, // os.Stdout in a real suite
			Strict:          true,
			FeatureContents: []godog.Feature{{Name: "reports.feature", Contents: []byte(feature)}},
		},
	}
	fmt.Println("exit status", suite.Run())
	// Output: exit status 0
}
