package handlers

import (
	"context"
	"strings"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/projections"
)

var _ trellis.CodeService = (*Service)(nil)

// SearchIndex returns the search projection.
func (s *Service) SearchIndex() *projections.Search { return s.search }

// Search implements trellis.CodeService. It waits until the index has
// applied everything ingested so far.
func (s *Service) Search(ctx context.Context, req trellis.SearchRequest) (*trellis.SearchResult, error) {
	if err := req.Normalize(); err != nil {
		return nil, err
	}
	out := &trellis.SearchResult{Query: req.Query, Results: []trellis.ChunkHit{}}
	if strings.TrimSpace(req.Query) == "" {
		return nil, trellis.FieldError("query", "must not be empty")
	}
	if err := s.searchCaughtUp(ctx); err != nil {
		return nil, err
	}
	hits, err := s.search.Query(req.Query, req.TopK, projections.Filters{PathPrefix: req.PathPrefix, FileType: req.FileType,
		ChunkType: req.ChunkType, Tag: req.Tag, Repo: req.Repo})
	if err != nil {
		return nil, trellis.Errorf(trellis.CodeInternal, "search: %w", err)
	}
	for _, h := range hits {
		out.Results = append(out.Results, chunkHit(h, req.Query, req.Content))
	}
	if len(out.Results) == 0 {
		out.NotFound = true
		if out.Suggestions, err = s.search.Suggest(req.Query, 8); err != nil {
			return nil, trellis.Errorf(trellis.CodeInternal, "suggest: %w", err)
		}
		if out.Suggestions == nil {
			out.Suggestions = []string{}
		}
		if req.PathPrefix != "" || req.FileType != "" || req.ChunkType != "" || req.Tag != "" || req.Repo != "" {
			out.Suggestions = append(out.Suggestions, "(drop the filters)")
		}
	}
	return out, nil
}

// Chunk implements trellis.CodeService.
func (s *Service) Chunk(ctx context.Context, chunkID string) (*trellis.ChunkHit, error) {
	if !strings.HasPrefix(chunkID, "chunk_") || len(chunkID) != len("chunk_")+16 {
		return nil, trellis.FieldError("chunk_id", "%q is not a chunk id (chunk_ and 16 hex digits)", chunkID)
	}
	if err := s.searchCaughtUp(ctx); err != nil {
		return nil, err
	}
	h, err := s.search.Chunk(chunkID)
	if err != nil {
		return nil, trellis.Errorf(trellis.CodeInternal, "chunk: %w", err)
	}
	if h == nil {
		return nil, trellis.Errorf(trellis.CodeNotFound, "no chunk %s", chunkID)
	}
	c := chunkHit(*h, "", true)
	return &c, nil
}

func chunkHit(h projections.Hit, query string, content bool) trellis.ChunkHit {
	c := trellis.ChunkHit{ChunkID: h.ChunkID, Repo: h.Repo, SourcePath: h.Path, StartLine: h.StartLine, EndLine: h.EndLine,
		ChunkType: h.ChunkType, Name: h.Name, Language: h.Language, Tags: h.Tags, Score: h.Score, Snippet: snippet(h.Content, query)}
	if content {
		c.Content = h.Content
	}
	return c
}

// snippet picks up to three distinct lines of content that contain a
// query word, else the first three distinct non-empty lines.
func snippet(content, query string) string {
	words := strings.Fields(strings.ToLower(query))
	var hit, first []string
	seen := map[string]bool{}
	for _, line := range strings.Split(content, "\n") {
		t := strings.TrimSpace(line)
		if t == "" || seen[t] {
			continue
		}
		seen[t] = true
		if len(t) > 200 {
			t = t[:200] + "..."
		}
		if len(first) < 3 {
			first = append(first, t)
		}
		low := strings.ToLower(t)
		for _, w := range words {
			if len(w) > 2 && strings.Contains(low, w) && len(hit) < 3 {
				hit = append(hit, t)
				break
			}
		}
	}
	if len(hit) > 0 {
		return strings.Join(hit, "\n")
	}
	return strings.Join(first, "\n")
}

// searchCaughtUp waits until the search index has applied everything
// ingested so far, up to SearchTimeout.
func (s *Service) searchCaughtUp(ctx context.Context) error {
	return s.waitProjection(ctx, s.searchRun, 0, s.cfg.SearchTimeout)
}
