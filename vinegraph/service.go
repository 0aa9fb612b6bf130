package vinegraph

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/command"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/projections"
	"github.com/trellis/trellis/vine"
)

// Service is the VINE domain as the transports see it: the command
// handler for changes, the frontier projection for reads.
type Service struct {
	handler     *Handler
	frontiers   *projections.Frontiers
	frontierRun *projections.Runner
	readTimeout time.Duration
}

var _ trellis.VineService = (*Service)(nil)

// New builds the VINE domain on store. Its frontier projection runs once
// the caller starts Runner (handlers.Service starts it with the others).
func New(store *events.Store, cfg Config) *Service {
	if cfg.ReadTimeout <= 0 {
		cfg.ReadTimeout = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Service{handler: NewHandler(store, cfg), frontiers: projections.NewFrontiers(cfg.Dir), readTimeout: cfg.ReadTimeout}
	s.frontierRun = projections.NewRunner(store, s.frontiers, cfg.Logger)
	return s
}

// Close waits for the .vine files being written (see Handler.Close).
func (s *Service) Close() { s.handler.Close() }

// Handler returns the VINE command handler.
func (s *Service) Handler() *Handler { return s.handler }

// Frontiers returns the frontier projection.
func (s *Service) Frontiers() *projections.Frontiers { return s.frontiers }

// Runner returns the frontier projection's runner.
func (s *Service) Runner() *projections.Runner { return s.frontierRun }

// catchUp waits until the frontier projection has applied seq (0:
// everything the VINE stream holds now).
func (s *Service) catchUp(ctx context.Context, seq uint64) error {
	return command.StoreError("projection "+s.frontiers.Name()+" catch-up", s.frontierRun.Await(ctx, seq, s.readTimeout))
}

// VineNext implements trellis.VineService: the file is reconciled with the
// log, then the frontier is read from the frontier projection once it has
// applied the graph's latest event.
func (s *Service) VineNext(ctx context.Context, req trellis.VineFileRequest) (*trellis.VineFrontier, error) {
	_, id, seq, err := s.handler.Graph(ctx, req.File)
	if err != nil {
		return nil, err
	}
	if err := s.catchUp(ctx, seq); err != nil {
		return nil, err
	}
	fr, ok := s.frontiers.Frontier(id)
	if !ok {
		return nil, trellis.Errorf(trellis.CodeInternal, "frontier projection lacks graph %s", id)
	}
	return &trellis.VineFrontier{GraphID: id, Frontier: fr}, nil
}

// VineRead implements trellis.VineService.
func (s *Service) VineRead(ctx context.Context, req trellis.VineReadRequest) (*trellis.VineReadResult, error) {
	if strings.TrimSpace(req.Action) == "" {
		return nil, trellis.FieldError("action", "must not be empty: one of summary, list, task, context, descendants, search, refs, validate")
	}
	g, id, _, err := s.handler.Graph(ctx, req.File)
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
	return s.handler.Write(ctx, req)
}

// VineClaim implements trellis.VineService.
func (s *Service) VineClaim(ctx context.Context, req trellis.VineClaimRequest) (*trellis.VineClaimResult, error) {
	return s.handler.Claim(ctx, req)
}

// VineExpand implements trellis.VineService.
func (s *Service) VineExpand(ctx context.Context, req trellis.VineExpandRequest) (*trellis.VineWriteResult, error) {
	return s.handler.Expand(ctx, req)
}

// VineImport implements trellis.VineService.
func (s *Service) VineImport(ctx context.Context, req trellis.VineFileRequest) (*trellis.VineGraphInfo, error) {
	return s.handler.Import(ctx, req)
}

// VineExport implements trellis.VineService.
func (s *Service) VineExport(ctx context.Context, req trellis.VineExportRequest) (*trellis.VineExportResult, error) {
	return s.handler.Export(ctx, req)
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
