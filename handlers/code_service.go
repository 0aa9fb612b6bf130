package handlers

import (
	"context"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/codememory"
	"github.com/trellis/trellis/embedding"
	"github.com/trellis/trellis/projections"
)

var _ trellis.CodeService = (*Service)(nil)

// Code returns the code memory domain.
func (s *Service) Code() *codememory.Service { return s.code }

// SearchIndex returns the search projection.
func (s *Service) SearchIndex() *projections.Search { return s.code.SearchIndex() }

// Search implements trellis.CodeService.
func (s *Service) Search(ctx context.Context, req trellis.SearchRequest) (*trellis.SearchResult, error) {
	return s.code.Search(ctx, req)
}

// Chunk implements trellis.CodeService.
func (s *Service) Chunk(ctx context.Context, chunkID string) (*trellis.ChunkHit, error) {
	return s.code.Chunk(ctx, chunkID)
}

// Explain implements trellis.CodeService.
func (s *Service) Explain(ctx context.Context, req trellis.ExplainRequest) (*trellis.ExplainResult, error) {
	return s.code.Explain(ctx, req)
}

// EmbedPending embeds the chunks not embedded yet (see codememory.Service).
func (s *Service) EmbedPending(ctx context.Context) (*codememory.EmbedSummary, error) {
	return s.code.EmbedPending(ctx)
}

// VectorSearch searches the vector projection alone (see codememory.Service).
func (s *Service) VectorSearch(vec []float32, n int, f projections.Filters) ([]projections.Scored, error) {
	return s.code.VectorSearch(vec, n, f)
}

// Embedder returns the configured embedder, or nil.
func (s *Service) Embedder() embedding.Embedder { return s.code.Embedder() }
