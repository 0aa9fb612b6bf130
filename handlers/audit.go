package handlers

import (
	"context"
	"time"

	"github.com/trellis/trellis"
)

var _ trellis.AuditService = (*Service)(nil)

// AuditQuery implements trellis.AuditService (see audit.Service).
func (s *Service) AuditQuery(ctx context.Context, req trellis.AuditQuery) (*trellis.AuditPage, error) {
	return s.audit.AuditQuery(ctx, req)
}

// ListAsOf answers a list request about the queue board as it stood at
// time at (see audit.Service.ListAsOf).
func (s *Service) ListAsOf(ctx context.Context, at time.Time, req trellis.ListRequest) (*trellis.TaskList, error) {
	return s.audit.ListAsOf(ctx, at, req)
}

var _ trellis.ProjectionStatus = (*Service)(nil)

// Projections implements trellis.ProjectionStatus: the position of every
// projection Replay rebuilds.
func (s *Service) Projections(context.Context) ([]trellis.ProjectionPosition, error) {
	out := make([]trellis.ProjectionPosition, 0, len(s.runners))
	for _, r := range s.runners {
		seq, id := r.Position()
		out = append(out, trellis.ProjectionPosition{Projection: r.Projection().Name(), Stream: r.Projection().Stream(), Applied: seq, EventID: id})
	}
	return out, nil
}
