package handlers

import (
	"context"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/projections"
	"github.com/trellis/trellis/vinegraph"
)

var _ trellis.VineService = (*Service)(nil)

// Vine returns the VINE domain.
func (s *Service) Vine() *vinegraph.Service { return s.vine }

// VineHandler returns the VINE command handler.
func (s *Service) VineHandler() *vinegraph.Handler { return s.vine.Handler() }

// Frontiers returns the frontier projection.
func (s *Service) Frontiers() *projections.Frontiers { return s.vine.Frontiers() }

// VineNext implements trellis.VineService.
func (s *Service) VineNext(ctx context.Context, req trellis.VineFileRequest) (*trellis.VineFrontier, error) {
	return s.vine.VineNext(ctx, req)
}

// VineRead implements trellis.VineService.
func (s *Service) VineRead(ctx context.Context, req trellis.VineReadRequest) (*trellis.VineReadResult, error) {
	return s.vine.VineRead(ctx, req)
}

// VineWrite implements trellis.VineService.
func (s *Service) VineWrite(ctx context.Context, req trellis.VineWriteRequest) (*trellis.VineWriteResult, error) {
	return s.vine.VineWrite(ctx, req)
}

// VineClaim implements trellis.VineService.
func (s *Service) VineClaim(ctx context.Context, req trellis.VineClaimRequest) (*trellis.VineClaimResult, error) {
	return s.vine.VineClaim(ctx, req)
}

// VineExpand implements trellis.VineService.
func (s *Service) VineExpand(ctx context.Context, req trellis.VineExpandRequest) (*trellis.VineWriteResult, error) {
	return s.vine.VineExpand(ctx, req)
}

// VineImport implements trellis.VineService.
func (s *Service) VineImport(ctx context.Context, req trellis.VineFileRequest) (*trellis.VineGraphInfo, error) {
	return s.vine.VineImport(ctx, req)
}

// VineExport implements trellis.VineService.
func (s *Service) VineExport(ctx context.Context, req trellis.VineExportRequest) (*trellis.VineExportResult, error) {
	return s.vine.VineExport(ctx, req)
}

// VineGraphs lists every graph the log holds (see vinegraph.Service).
func (s *Service) VineGraphs(ctx context.Context) ([]trellis.VineGraphSummary, error) {
	return s.vine.VineGraphs(ctx)
}

// VineGraph returns a graph by id for drawing (see vinegraph.Service).
func (s *Service) VineGraph(ctx context.Context, graphID string, brief bool) (*trellis.VineGraphView, error) {
	return s.vine.VineGraph(ctx, graphID, brief)
}

// VineNode returns one node of a graph in full (see vinegraph.Service).
func (s *Service) VineNode(ctx context.Context, graphID, nodeID string) (*trellis.VineNodeView, error) {
	return s.vine.VineNode(ctx, graphID, nodeID)
}
