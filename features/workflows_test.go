package features

import (
	"context"

	"github.com/trellis/trellis/steps"
	"github.com/trellis/trellis/workflow"
)

// suiteConfig is the steps' configuration of TestFeatures: the trellis
// binary for worker processes and the workflows workflows.feature runs.
func suiteConfig(bin string) steps.Config {
	return steps.Config{Binary: bin, Workflows: featureWorkflows}
}

// featureWorkflows registers the workflows workflows.feature runs: "order"
// takes {"id"}, runs the steps reserve and charge, waits for the signal
// "ship" ({"carrier"}), runs the step ship and returns {"id",
// "shipped_by"}.
func featureWorkflows(e *workflow.Engine) error {
	type order struct {
		ID string `json:"id"`
	}
	type shipped struct {
		ID        string `json:"id"`
		ShippedBy string `json:"shipped_by"`
	}
	ok := func(context.Context) (bool, error) { return true, nil }
	return workflow.Register(e, "order", 1, func(c *workflow.Context, in order) (shipped, error) {
		for _, s := range []string{"reserve", "charge"} {
			if _, err := workflow.Step(c, s, ok); err != nil {
				return shipped{}, err
			}
		}
		ship, err := workflow.WaitFor[struct {
			Carrier string `json:"carrier"`
		}](c, "ship", 0)
		if err != nil {
			return shipped{}, err
		}
		if _, err := workflow.Step(c, "ship", ok); err != nil {
			return shipped{}, err
		}
		return shipped{ID: in.ID, ShippedBy: ship.Carrier}, nil
	})
}
