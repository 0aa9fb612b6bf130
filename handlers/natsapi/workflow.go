package natsapi

import (
	"context"

	"github.com/trellis/trellis/workflow"
)

// Durable workflow operations.
const (
	OpWorkflowStart  = "workflow.start"
	OpWorkflowShow   = "workflow.show"
	OpWorkflowList   = "workflow.list"
	OpWorkflowSignal = "workflow.signal"
	OpWorkflowCancel = "workflow.cancel"
	OpWorkflowRetry  = "workflow.retry"
)

// workflowOps are the workflow operations of the API.
func workflowOps(wf workflow.Service) map[string]func(context.Context, []byte) (any, error) {
	return map[string]func(context.Context, []byte) (any, error){
		OpWorkflowStart: handler(wf.Start),
		OpWorkflowShow: handler(func(ctx context.Context, r WorkflowShowRequest) (*workflow.Run, error) {
			return wf.Show(ctx, r.RunID)
		}),
		OpWorkflowList:   handler(wf.List),
		OpWorkflowSignal: handler(wf.Signal),
		OpWorkflowCancel: handler(wf.Cancel),
		OpWorkflowRetry:  handler(wf.Retry),
	}
}
