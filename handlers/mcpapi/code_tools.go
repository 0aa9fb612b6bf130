package mcpapi

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trellis/trellis"
)

// ToolSearchChunks is seed 003's retrieval tool.
const ToolSearchChunks = "search_chunks"

// codeInstructions is appended to the server instructions when the service
// searches code memory.
const codeInstructions = `Code memory: search_chunks {query, k, filters} finds code chunks (functions, methods, classes, sections) of ingested repositories. Answer with chunk ids and their exact lines (CHUNK_ID, source path, lines). If nothing is found, say "not found" and run the suggested next search.`

// searchFilters are search_chunks' filters.
type searchFilters struct {
	PathPrefix string   `json:"path_prefix,omitempty"`
	FileType   string   `json:"file_type,omitempty"`
	ChunkType  string   `json:"chunk_type,omitempty"`
	Tags       []string `json:"tags,omitempty"`
	Repo       string   `json:"repo,omitempty"`
}

// searchArgs is search_chunks' input (seed 003: query, k, filters).
type searchArgs struct {
	Query   string         `json:"query"`
	K       int            `json:"k,omitempty"`
	Filters *searchFilters `json:"filters,omitempty"`
	Content bool           `json:"content,omitempty"`
}

// registerCodeTools adds search_chunks.
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
}

// renderSearch writes results in seed 003's citation format.
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
