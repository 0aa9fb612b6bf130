package client

import (
	"context"

	"github.com/trellis/trellis/handlers/natsapi"
	"github.com/trellis/trellis/workflow"
)

// Workflows returns the server's workflow API through this client.
func (c *API) Workflows() workflow.Service { return workflowClient{c} }

// workflowClient implements workflow.Service over the NATS API.
type workflowClient struct{ c *API }

// Start implements workflow.Service.
func (w workflowClient) Start(ctx context.Context, req workflow.StartRequest) (*workflow.Run, error) {
	return callInto[workflow.Run](ctx, w.c, natsapi.OpWorkflowStart, req)
}

// Show implements workflow.Service.
func (w workflowClient) Show(ctx context.Context, runID string) (*workflow.Run, error) {
	return callInto[workflow.Run](ctx, w.c, natsapi.OpWorkflowShow, natsapi.WorkflowShowRequest{RunID: runID})
}

// List implements workflow.Service.
func (w workflowClient) List(ctx context.Context, req workflow.ListRequest) (*workflow.RunList, error) {
	return callInto[workflow.RunList](ctx, w.c, natsapi.OpWorkflowList, req)
}

// Signal implements workflow.Service.
func (w workflowClient) Signal(ctx context.Context, req workflow.SignalRequest) (*workflow.Run, error) {
	return callInto[workflow.Run](ctx, w.c, natsapi.OpWorkflowSignal, req)
}

// Cancel implements workflow.Service.
func (w workflowClient) Cancel(ctx context.Context, req workflow.CancelRequest) (*workflow.Run, error) {
	return callInto[workflow.Run](ctx, w.c, natsapi.OpWorkflowCancel, req)
}

// Retry implements workflow.Service.
func (w workflowClient) Retry(ctx context.Context, req workflow.RetryRequest) (*workflow.Run, error) {
	return callInto[workflow.Run](ctx, w.c, natsapi.OpWorkflowRetry, req)
}
