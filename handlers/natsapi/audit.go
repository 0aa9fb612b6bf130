package natsapi

import (
	"context"

	"github.com/trellis/trellis"
)

// OpAuditQuery answers one page of an audit query (trellis.AuditQuery).
const OpAuditQuery = "audit.query"

// OpAuditProjections answers how far the server's projections have folded
// the log (trellis.ProjectionStatus).
const OpAuditProjections = "audit.projections"

var _ trellis.AuditService = (*Client)(nil)

// AuditQuery implements trellis.AuditService: one page per request, so a
// query of any size goes through NATS messages of bounded size.
func (c *Client) AuditQuery(ctx context.Context, req trellis.AuditQuery) (*trellis.AuditPage, error) {
	var out trellis.AuditPage
	if err := c.call(ctx, OpAuditQuery, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

var _ trellis.ProjectionStatus = (*Client)(nil)

// Projections implements trellis.ProjectionStatus.
func (c *Client) Projections(ctx context.Context) ([]trellis.ProjectionPosition, error) {
	var out []trellis.ProjectionPosition
	if err := c.call(ctx, OpAuditProjections, struct{}{}, &out); err != nil {
		return nil, err
	}
	return out, nil
}
