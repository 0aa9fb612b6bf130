package codememory

import (
	"context"
	"strings"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/command"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/explain"
	"github.com/trellis/trellis/projections"
)

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
	// One look at the log's end; both projections wait for it.
	last, err := s.store.LastSeq(ctx, events.StreamChunks)
	if err != nil {
		return nil, command.StoreError("search", err)
	}
	if err := s.waitProjection(ctx, s.searchRun, last); err != nil {
		return nil, err
	}
	filters := projections.Filters{PathPrefix: req.PathPrefix, FileType: req.FileType, ChunkType: req.ChunkType, Tag: req.Tag, Repo: req.Repo}
	mode := req.Mode
	if mode == "" {
		mode = trellis.SearchLexical
		if s.vectors != nil && s.vectors.Ready() {
			mode = trellis.SearchHybrid
		}
	}
	out.Mode = mode
	var hits []projections.Hit
	if mode == trellis.SearchHybrid {
		hits, err = s.hybrid(ctx, req.Query, req.TopK, filters, last)
	} else {
		hits, err = s.search.Query(req.Query, req.TopK, filters)
		if err != nil {
			err = trellis.Errorf(trellis.CodeInternal, "search: %w", err)
		}
	}
	if err != nil {
		return nil, err
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

// hybridDepth is how many results each side contributes to the fusion.
const hybridDepth = 50

// hybrid fuses the lexical ranking and the vector search by Reciprocal
// Rank Fusion (k = 60), both narrowed by the same filters. A question that
// names a chunk exactly (an identifier in it is the best lexical hit's
// name) keeps the lexical order: vectors do not know names.
func (s *Service) hybrid(ctx context.Context, text string, k int, f projections.Filters, last uint64) ([]projections.Hit, error) {
	emb := s.cfg.Embedder
	if emb == nil || s.vectors == nil {
		return nil, trellis.Errorf(trellis.CodeUnavailable, "hybrid search needs an embedding endpoint: set --embed-url and --embed-model (or TRELLIS_EMBED_URL, TRELLIS_EMBED_MODEL), or search with mode lexical")
	}
	lex, err := s.search.Rank(text, max(k, hybridDepth), f)
	if err != nil {
		return nil, trellis.Errorf(trellis.CodeInternal, "search: %w", err)
	}
	if len(lex) > 0 && projections.NamesChunk(text, lex[0].Name) {
		hits, err := s.search.Query(text, k, f)
		if err != nil {
			return nil, trellis.Errorf(trellis.CodeInternal, "search: %w", err)
		}
		return hits, nil
	}
	if err := s.waitProjection(ctx, s.vectorRun, last); err != nil {
		return nil, err
	}
	qv, err := emb.Embed(ctx, []string{text})
	if err != nil {
		return nil, providerError("embed the query", err)
	}
	if len(qv) != 1 {
		return nil, trellis.Errorf(trellis.CodeUnavailable, "embedding model %s returned %d vectors for one query", emb.Model(), len(qv))
	}
	vec, err := s.vectors.Search(qv[0], hybridDepth, f)
	if err != nil {
		return nil, trellis.Errorf(trellis.CodeUnavailable, "vector search: %w", err)
	}
	lexIDs := make([]string, len(lex))
	for i, h := range lex {
		lexIDs[i] = h.ChunkID
	}
	vecIDs := make([]string, len(vec))
	for i, v := range vec {
		vecIDs[i] = v.ChunkID
	}
	fused := projections.RRF(projections.RRFK, lexIDs, vecIDs)
	if len(fused) > k {
		fused = fused[:k]
	}
	ids := make([]string, len(fused))
	for i, fu := range fused {
		ids[i] = fu.ChunkID
	}
	full, err := s.search.Hits(ids)
	if err != nil {
		return nil, trellis.Errorf(trellis.CodeInternal, "search: %w", err)
	}
	out := make([]projections.Hit, 0, len(fused))
	for _, fu := range fused {
		h, ok := full[fu.ChunkID]
		if !ok {
			continue // removed since the vector was found
		}
		h.Score = fu.Score
		out = append(out, h)
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
	return s.waitProjection(ctx, s.searchRun, 0)
}

// noChatModel says what to configure for explain to answer.
const noChatModel = "no chat model is configured: to get an answer, give --chat-url and --chat-model (or TRELLIS_CHAT_URL and TRELLIS_CHAT_MODEL, key in TRELLIS_CHAT_KEY) of an OpenAI-compatible endpoint (Ollama, llama.cpp server, vLLM, OpenAI) to trellis serve when a server runs, else to this command; below is the evidence it would be given"

// Explain implements trellis.CodeService: retrieval, then the chat model
// with the explain instructions; the answer's [CITATION chunk_id] citations
// are checked against the retrieved chunks.
func (s *Service) Explain(ctx context.Context, req trellis.ExplainRequest) (*trellis.ExplainResult, error) {
	if err := req.Normalize(); err != nil {
		return nil, err
	}
	res, err := s.Search(ctx, req.Search())
	if err != nil {
		return nil, err
	}
	out := &trellis.ExplainResult{Question: req.Question, Citations: []string{}, InvalidCitations: []string{}, Evidence: res.Results,
		NotFound: res.NotFound, Suggestions: res.Suggestions}
	if res.NotFound {
		return out, nil
	}
	chunks := make([]explain.Chunk, len(res.Results))
	for i, h := range res.Results {
		chunks[i] = explain.Chunk{ChunkID: h.ChunkID, SourcePath: h.SourcePath, StartLine: h.StartLine, EndLine: h.EndLine,
			ChunkType: h.ChunkType, Name: h.Name, Content: h.Content}
	}
	user := explain.UserPrompt(req.Question, chunks)
	chat := s.cfg.Chat
	if chat == nil {
		out.System, out.Prompt, out.Configure = explain.SystemPrompt, user, noChatModel
		return out, nil
	}
	answer, err := chat.Complete(ctx, explain.SystemPrompt, user)
	if err != nil {
		return nil, providerError("explain: chat model "+chat.Model(), err)
	}
	out.Model, out.Answer = chat.Model(), answer
	out.Citations, out.InvalidCitations = explain.Check(answer, chunks)
	return out, nil
}
