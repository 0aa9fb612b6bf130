package client

import (
	"context"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/handlers/natsapi"
)

var _ trellis.AuditService = (*API)(nil)

// AuditQuery implements trellis.AuditService: one page per request, so a
// query of any size goes through NATS messages of bounded size.
func (c *API) AuditQuery(ctx context.Context, req trellis.AuditQuery) (*trellis.AuditPage, error) {
	var out trellis.AuditPage
	if err := c.call(ctx, natsapi.OpAuditQuery, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

var _ trellis.ProjectionStatus = (*API)(nil)

// Projections implements trellis.ProjectionStatus.
func (c *API) Projections(ctx context.Context) ([]trellis.ProjectionPosition, error) {
	var out []trellis.ProjectionPosition
	if err := c.call(ctx, natsapi.OpAuditProjections, struct{}{}, &out); err != nil {
		return nil, err
	}
	return out, nil
}
