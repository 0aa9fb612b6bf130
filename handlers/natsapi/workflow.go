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

type workflowShowRequest struct {
	RunID string `json:"run_id"`
}

// workflowOps are the workflow operations of the API.
func workflowOps(wf workflow.Service) map[string]func(context.Context, []byte) (any, error) {
	return map[string]func(context.Context, []byte) (any, error){
		OpWorkflowStart: handler(wf.Start),
		OpWorkflowShow: handler(func(ctx context.Context, r workflowShowRequest) (*workflow.Run, error) {
			return wf.Show(ctx, r.RunID)
		}),
		OpWorkflowList:   handler(wf.List),
		OpWorkflowSignal: handler(wf.Signal),
		OpWorkflowCancel: handler(wf.Cancel),
		OpWorkflowRetry:  handler(wf.Retry),
	}
}

// Workflows returns the server's workflow API through this client.
func (c *Client) Workflows() workflow.Service { return workflowClient{c} }

// workflowClient implements workflow.Service over the NATS API.
type workflowClient struct{ c *Client }

// Start implements workflow.Service.
func (w workflowClient) Start(ctx context.Context, req workflow.StartRequest) (*workflow.Run, error) {
	return callInto[workflow.Run](ctx, w.c, OpWorkflowStart, req)
}

// Show implements workflow.Service.
func (w workflowClient) Show(ctx context.Context, runID string) (*workflow.Run, error) {
	return callInto[workflow.Run](ctx, w.c, OpWorkflowShow, workflowShowRequest{RunID: runID})
}

// List implements workflow.Service.
func (w workflowClient) List(ctx context.Context, req workflow.ListRequest) (*workflow.RunList, error) {
	return callInto[workflow.RunList](ctx, w.c, OpWorkflowList, req)
}

// Signal implements workflow.Service.
func (w workflowClient) Signal(ctx context.Context, req workflow.SignalRequest) (*workflow.Run, error) {
	return callInto[workflow.Run](ctx, w.c, OpWorkflowSignal, req)
}

// Cancel implements workflow.Service.
func (w workflowClient) Cancel(ctx context.Context, req workflow.CancelRequest) (*workflow.Run, error) {
	return callInto[workflow.Run](ctx, w.c, OpWorkflowCancel, req)
}

// Retry implements workflow.Service.
func (w workflowClient) Retry(ctx context.Context, req workflow.RetryRequest) (*workflow.Run, error) {
	return callInto[workflow.Run](ctx, w.c, OpWorkflowRetry, req)
}
