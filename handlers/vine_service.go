package handlers

import (
	"context"
	"strings"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/projections"
	"github.com/trellis/trellis/vine"
)

var _ trellis.VineService = (*Service)(nil)

// VineHandler returns the VINE command handler.
func (s *Service) VineHandler() *Vine { return s.vine }

// Frontiers returns the frontier projection.
func (s *Service) Frontiers() *projections.Frontiers { return s.frontiers }

// VineNext implements trellis.VineService: the file is reconciled with the
// log, then the frontier is read from the frontier projection once it has
// applied the graph's latest event.
func (s *Service) VineNext(ctx context.Context, req trellis.VineFileRequest) (*trellis.VineFrontier, error) {
	_, id, seq, err := s.vine.Graph(ctx, req.File)
	if err != nil {
		return nil, err
	}
	if err := s.waitFrontier(ctx, seq); err != nil {
		return nil, err
	}
	fr, ok := s.frontiers.Frontier(id)
	if !ok {
		return nil, trellis.Errorf(trellis.CodeInternal, "frontier projection lacks graph %s", id)
	}
	return &trellis.VineFrontier{GraphID: id, Frontier: fr}, nil
}

func (s *Service) waitFrontier(ctx context.Context, seq uint64) error {
	return s.waitProjection(ctx, s.frontierRun, seq, s.cfg.ReadTimeout)
}

// VineRead implements trellis.VineService.
func (s *Service) VineRead(ctx context.Context, req trellis.VineReadRequest) (*trellis.VineReadResult, error) {
	if strings.TrimSpace(req.Action) == "" {
		return nil, trellis.FieldError("action", "must not be empty: one of summary, list, task, context, descendants, search, refs, validate")
	}
	g, id, _, err := s.vine.Graph(ctx, req.File)
	if err != nil {
		return nil, err
	}
	res, err := vine.Read(g, vine.ReadRequest{Action: req.Action, ID: req.ID, Status: req.Status, Query: req.Query})
	if err != nil {
		return nil, vineError(readField(err), err)
	}
	return &trellis.VineReadResult{GraphID: id, Action: req.Action, Result: res}, nil
}

// VineWrite implements trellis.VineService.
func (s *Service) VineWrite(ctx context.Context, req trellis.VineWriteRequest) (*trellis.VineWriteResult, error) {
	return s.vine.Write(ctx, req)
}

// VineClaim implements trellis.VineService.
func (s *Service) VineClaim(ctx context.Context, req trellis.VineClaimRequest) (*trellis.VineClaimResult, error) {
	return s.vine.Claim(ctx, req)
}

// VineExpand implements trellis.VineService.
func (s *Service) VineExpand(ctx context.Context, req trellis.VineExpandRequest) (*trellis.VineWriteResult, error) {
	return s.vine.Expand(ctx, req)
}

// VineImport implements trellis.VineService.
func (s *Service) VineImport(ctx context.Context, req trellis.VineFileRequest) (*trellis.VineGraphInfo, error) {
	return s.vine.Import(ctx, req)
}

// VineExport implements trellis.VineService.
func (s *Service) VineExport(ctx context.Context, req trellis.VineExportRequest) (*trellis.VineExportResult, error) {
	return s.vine.Export(ctx, req)
}

// readField names the read argument a vine.Read error is about.
func readField(err error) string {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "id is required"):
		return "id"
	case strings.Contains(msg, "query"):
		return "query"
	case strings.Contains(msg, "status"):
		return "status"
	case vine.ErrorCode(err) == vine.CodeNotFound:
		return ""
	}
	return "action"
}
