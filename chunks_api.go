package trellis

import (
	"context"
	"strings"
)

// CodeService searches the code memory built from ingested repositories
// (VectorGit and the ChunkManager).
type CodeService interface {
	// Search returns the chunks that best match a query (BM25 over content,
	// names and paths), or "not found" with suggestions for the next search.
	Search(ctx context.Context, req SearchRequest) (*SearchResult, error)
	// Chunk returns one chunk in full.
	Chunk(ctx context.Context, chunkID string) (*ChunkHit, error)
	// Explain retrieves the chunks that answer a question and asks the
	// configured chat model to answer from them with checked citations
	// (the explain mode); without a model it returns the evidence
	// and the prompt it would send.
	Explain(ctx context.Context, req ExplainRequest) (*ExplainResult, error)
}

// ExplainRequest is explain_code's input: a question and the search
// filters of the retrieval.
type ExplainRequest struct {
	Question   string `json:"question"`
	TopK       int    `json:"k,omitempty"`
	PathPrefix string `json:"path_prefix,omitempty"`
	FileType   string `json:"file_type,omitempty"`
	ChunkType  string `json:"chunk_type,omitempty"`
	Tag        string `json:"tag,omitempty"`
	Repo       string `json:"repo,omitempty"`
	Mode       string `json:"mode,omitempty"`
}

// Normalize fills defaults (8 chunks) and validates.
func (r *ExplainRequest) Normalize() error {
	if err := checkText("question", r.Question); err != nil {
		return err
	}
	if strings.TrimSpace(r.Question) == "" {
		return FieldError("question", "must not be empty")
	}
	if len(r.Question) > 1024 {
		return FieldError("question", "is %d bytes; at most 1024 allowed", len(r.Question))
	}
	if r.TopK == 0 {
		r.TopK = 8
	}
	if r.TopK < 0 || r.TopK > 20 {
		return FieldError("k", "must be between 1 and 20, got %d", r.TopK)
	}
	s := r.Search()
	return s.Normalize()
}

// Search is the retrieval an explain runs.
func (r ExplainRequest) Search() SearchRequest {
	return SearchRequest{Query: r.Question, TopK: r.TopK, PathPrefix: r.PathPrefix, FileType: r.FileType, ChunkType: r.ChunkType,
		Tag: r.Tag, Repo: r.Repo, Mode: r.Mode, Content: true}
}

// ExplainResult is the answer to an explain.
type ExplainResult struct {
	Question string `json:"question"`
	// Model is the chat model that answered ("" when none is configured).
	Model string `json:"model,omitempty"`
	// Answer is the model's answer.
	Answer string `json:"answer,omitempty"`
	// Citations are the cited chunk ids found among the evidence;
	// InvalidCitations those that are not (invented or from elsewhere).
	Citations        []string `json:"citations"`
	InvalidCitations []string `json:"invalid_citations"`
	// Evidence is the retrieved chunks, with their content.
	Evidence []ChunkHit `json:"evidence"`
	// NotFound: no chunk matched; Suggestions are next searches.
	NotFound    bool     `json:"not_found"`
	Suggestions []string `json:"suggestions,omitempty"`
	// Without a chat model: the prompt that would be sent, and what to
	// configure.
	System    string `json:"system_prompt,omitempty"`
	Prompt    string `json:"prompt,omitempty"`
	Configure string `json:"configure,omitempty"`
}

// SearchRequest is search_chunks' input.
type SearchRequest struct {
	Query      string `json:"query"`
	TopK       int    `json:"k,omitempty"`
	PathPrefix string `json:"path_prefix,omitempty"`
	FileType   string `json:"file_type,omitempty"`
	ChunkType  string `json:"chunk_type,omitempty"`
	Tag        string `json:"tag,omitempty"`
	Repo       string `json:"repo,omitempty"`
	Content    bool   `json:"content,omitempty"`
	// Mode chooses the retrieval: "lexical" (BM25 ranking alone), "hybrid"
	// (BM25 and vector search fused by Reciprocal Rank Fusion) or "" (hybrid
	// when chunk vectors are available, else lexical).
	Mode string `json:"mode,omitempty"`
}

// Search modes: the values of SearchRequest.Mode.
const (
	SearchLexical = "lexical"
	SearchHybrid  = "hybrid"
)

// Normalize fills defaults and validates.
func (r *SearchRequest) Normalize() error {
	if err := checkText("query", r.Query); err != nil {
		return err
	}
	if len(r.Query) > 1024 {
		return FieldError("query", "is %d bytes; at most 1024 allowed", len(r.Query))
	}
	if r.TopK == 0 {
		r.TopK = 8
	}
	if r.TopK < 0 || r.TopK > 100 {
		return FieldError("k", "must be between 1 and 100, got %d", r.TopK)
	}
	switch r.Mode {
	case "", SearchLexical, SearchHybrid:
	default:
		return FieldError("mode", "must be %q or %q, got %q", SearchLexical, SearchHybrid, r.Mode)
	}
	for _, f := range []struct{ name, v string }{{"path_prefix", r.PathPrefix}, {"file_type", r.FileType}, {"chunk_type", r.ChunkType}, {"tag", r.Tag}, {"repo", r.Repo}} {
		if err := checkItem(f.name, f.v); err != nil {
			return err
		}
	}
	return nil
}

// ChunkHit is one result: a citable chunk.
type ChunkHit struct {
	ChunkID    string   `json:"chunk_id"`
	Repo       string   `json:"repo"`
	SourcePath string   `json:"source_path"`
	StartLine  int      `json:"start_line"`
	EndLine    int      `json:"end_line"`
	ChunkType  string   `json:"chunk_type"`
	Name       string   `json:"name"`
	Language   string   `json:"language"`
	Tags       []string `json:"tags"`
	Score      float64  `json:"score"`
	Snippet    string   `json:"snippet"`
	Content    string   `json:"content,omitempty"`
}

// SearchResult is the answer to a search.
type SearchResult struct {
	Query       string     `json:"query"`
	Mode        string     `json:"mode,omitempty"`
	Results     []ChunkHit `json:"results"`
	NotFound    bool       `json:"not_found"`
	Suggestions []string   `json:"suggestions,omitempty"`
}
