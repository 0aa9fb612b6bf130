package natsapi

import (
	"context"

	"github.com/trellis/trellis"
)

// OpAuditQuery answers one page of an audit query (trellis.AuditQuery).
const OpAuditQuery = "audit.query"

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
