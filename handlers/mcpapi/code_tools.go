package mcpapi

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trellis/trellis"
)

// ToolSearchChunks is the retrieval tool.
const ToolSearchChunks = "search_chunks"

// ToolExplainCode is the explain mode: retrieval, then an answer
// from a chat model with checked citations.
const ToolExplainCode = "explain_code"

// codeInstructions is appended to the server instructions when the service
// searches code memory.
const codeInstructions = `Code memory: search_chunks {query, k, filters} finds code chunks (functions, methods, classes, sections) of ingested repositories. Answer with chunk ids and their exact lines (CHUNK_ID, source path, lines). If nothing is found, say "not found" and run the suggested next search. explain_code {question} answers from the retrieved chunks through the configured chat model, citing [CITATION chunk_id]; citations not among the retrieved chunks are reported as invalid.`

// searchFilters are search_chunks' filters.
type searchFilters struct {
	PathPrefix string   `json:"path_prefix,omitempty"`
	FileType   string   `json:"file_type,omitempty"`
	ChunkType  string   `json:"chunk_type,omitempty"`
	Tags       []string `json:"tags,omitempty"`
	Repo       string   `json:"repo,omitempty"`
}

// searchArgs is search_chunks' input (query, k, filters).
type searchArgs struct {
	Query   string         `json:"query"`
	K       int            `json:"k,omitempty"`
	Filters *searchFilters `json:"filters,omitempty"`
	Content bool           `json:"content,omitempty"`
}

// explainArgs is explain_code's input.
type explainArgs struct {
	Question string         `json:"question"`
	K        int            `json:"k,omitempty"`
	Filters  *searchFilters `json:"filters,omitempty"`
}

// registerCodeTools adds search_chunks and explain_code.
func registerCodeTools(srv *mcp.Server, svc trellis.CodeService) {
	boundTool[searchArgs]{
		tool: &mcp.Tool{
			Name:  ToolSearchChunks,
			Title: "Search code chunks",
			Description: "Search the code memory (ingested repositories) for the chunks that answer a question: BM25 over code, names and paths, identifiers split (camelCase, snake_case) and stemmed. " +
				"Returns up to k chunks (default 8) with chunk_id, source_path, start_line, end_line, chunk_type, name, score and a snippet. " +
				"filters narrow the search: path_prefix (\"net/http\"), file_type (\".py\"), chunk_type (function, method, class, type, module, section, file), tags, repo. " +
				"CITATION RULE: answer by citing chunk ids and their lines. When nothing matches the result says not_found with suggestions: search again with one of them.",
			Annotations: &mcp.ToolAnnotations{Title: "Search code chunks", ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: jsonschema.Ptr(false)},
		},
		params: []param{
			{name: "query", desc: "What to find: a question, identifiers or words."},
			{name: "k", desc: "How many chunks to return (1-100, default 8).", refine: between(1, 100)},
			{name: "filters", desc: "Optional: path_prefix, file_type, chunk_type, tags (list), repo."},
			{name: "content", desc: "Also return each chunk's full content (default false: snippets only)."},
		},
		req: []string{"query"},
		call: func(ctx context.Context, _ *mcp.CallToolRequest, in *searchArgs) (*mcp.CallToolResult, error) {
			req := trellis.SearchRequest{Query: in.Query, TopK: in.K, Content: in.Content}
			if f := in.Filters; f != nil {
				req.PathPrefix, req.FileType, req.ChunkType, req.Repo = f.PathPrefix, f.FileType, f.ChunkType, f.Repo
				if len(f.Tags) > 1 {
					return nil, trellis.FieldError("filters.tags", "give at most one tag")
				}
				if len(f.Tags) == 1 {
					req.Tag = f.Tags[0]
				}
			}
			res, err := svc.Search(ctx, req)
			if err != nil {
				return nil, fmt.Errorf("search_chunks: %w", err)
			}
			return structured(renderSearch(res), res), nil
		},
	}.register(srv)
	boundTool[explainArgs]{
		tool: &mcp.Tool{
			Name:  ToolExplainCode,
			Title: "Explain code with citations",
			Description: "Answer a question about the ingested code: retrieves the chunks that answer it (as search_chunks does), asks the server's chat model to answer only from them citing [CITATION chunk_id], and checks every citation against the retrieved chunks (citations lists the valid ones, invalid_citations the others). " +
				"Without a configured chat model it returns the evidence (chunks with content) and the prompt it would send, and says what to configure.",
			Annotations: &mcp.ToolAnnotations{Title: "Explain code", ReadOnlyHint: true, OpenWorldHint: jsonschema.Ptr(true)},
		},
		params: []param{
			{name: "question", desc: "The question about the code."},
			{name: "k", desc: "How many chunks to retrieve (1-20, default 8).", refine: between(1, 20)},
			{name: "filters", desc: "Optional: path_prefix, file_type, chunk_type, tags (list), repo."},
		},
		req: []string{"question"},
		call: func(ctx context.Context, _ *mcp.CallToolRequest, in *explainArgs) (*mcp.CallToolResult, error) {
			req := trellis.ExplainRequest{Question: in.Question, TopK: in.K}
			if f := in.Filters; f != nil {
				req.PathPrefix, req.FileType, req.ChunkType, req.Repo = f.PathPrefix, f.FileType, f.ChunkType, f.Repo
				if len(f.Tags) > 1 {
					return nil, trellis.FieldError("filters.tags", "give at most one tag")
				}
				if len(f.Tags) == 1 {
					req.Tag = f.Tags[0]
				}
			}
			res, err := svc.Explain(ctx, req)
			if err != nil {
				return nil, fmt.Errorf("explain_code: %w", err)
			}
			return structured(renderExplain(res), res), nil
		},
	}.register(srv)
}

// renderExplain writes an explain result as text.
func renderExplain(r *trellis.ExplainResult) string {
	var b strings.Builder
	if r.NotFound {
		fmt.Fprintf(&b, "not found: no chunk matches %q.", r.Question)
		if len(r.Suggestions) > 0 {
			fmt.Fprintf(&b, " Next search: try %s.", strings.Join(r.Suggestions, ", "))
		}
		return b.String()
	}
	if r.Model == "" {
		fmt.Fprintf(&b, "%s.\n\n", r.Configure)
	} else {
		fmt.Fprintf(&b, "%s\n\nCitations checked against the %d retrieved chunks: valid %v", strings.TrimSpace(r.Answer), len(r.Evidence), r.Citations)
		if len(r.InvalidCitations) > 0 {
			fmt.Fprintf(&b, "; INVALID (not among the retrieved chunks) %v", r.InvalidCitations)
		}
		b.WriteString(".\n\nEvidence:\n")
	}
	for i, h := range r.Evidence {
		fmt.Fprintf(&b, "[%d] CHUNK_ID: %s\n    Source: %s (lines %d-%d)\n    Type: %s (%s)\n", i+1, h.ChunkID, h.SourcePath, h.StartLine, h.EndLine, h.ChunkType, h.Name)
		if r.Model == "" {
			fmt.Fprintf(&b, "%s\n", h.Content)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// renderSearch writes results in the citation format.
func renderSearch(r *trellis.SearchResult) string {
	var b strings.Builder
	if r.NotFound {
		fmt.Fprintf(&b, "not found: no chunk matches %q.", r.Query)
		if len(r.Suggestions) > 0 {
			fmt.Fprintf(&b, " Next search: try %s.", strings.Join(r.Suggestions, ", "))
		}
		return b.String()
	}
	fmt.Fprintf(&b, "Found %d chunks matching '%s':\n\n", len(r.Results), r.Query)
	for i, h := range r.Results {
		fmt.Fprintf(&b, "[%d] CHUNK_ID: %s\n    Source: %s (lines %d-%d)\n    Type: %s (%s)\n    Snippet: ...%s\n\n",
			i+1, h.ChunkID, h.SourcePath, h.StartLine, h.EndLine, h.ChunkType, h.Name, strings.ReplaceAll(h.Snippet, "\n", "\n        "))
	}
	b.WriteString("CITATION RULE: Always reference chunks by ID in your answer.")
	return b.String()
}
