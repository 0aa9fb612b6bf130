package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/codememory"
)

func (a *app) ingestCommand() *cobra.Command {
	var cfg codememory.IngestConfig
	var asJSON bool
	c := &cobra.Command{
		Use:   "ingest PATH",
		Short: "Ingest a repository into code memory: deterministic chunks as events, incremental",
		Long: `Walks PATH, chunks every file (tree-sitter for Python, Go, JavaScript, TypeScript/TSX, Rust and
Java; Markdown by section; other text as whole files) and appends, per changed file, the chunks added
and removed. Unchanged files cost no parsing and no events; deleted files are removed. Sensitive,
binary, oversized and unreadable files are skipped and listed.`,
		Example: "  trellis ingest . --repo trellis",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg.Root = args[0]
			if fi, err := os.Stderr.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 && !asJSON {
				cfg.Progress = a.progress("ingest")
			}
			s, err := a.openSession(cmd.Context())
			if err != nil {
				return err
			}
			defer s.close()
			sum, err := s.ingest(cmd.Context(), cfg)
			if cfg.Progress != nil {
				fmt.Fprintln(a.stderr)
			}
			if err == nil && s.embed != nil {
				// Vectors are recorded now, timed apart from the ingest; a
				// running server embeds in the background instead.
				sum.Embedding, err = s.embed(cmd.Context())
			}
			if sum != nil && (err == nil || asJSON) {
				if asJSON {
					_ = printJSON(a.stdout, sum)
				} else {
					for _, sk := range sum.Skipped {
						fmt.Fprintf(a.stderr, "skipped %s: %s\n", sk.Path, sk.Reason)
					}
					fmt.Fprintf(a.stdout, "ingested %s (repo %s) in %.2fs: %d files seen, %d skipped, %d new, %d changed, %d unchanged, %d deleted; %d chunks added, %d removed (%d events)\n",
						sum.Root, sum.Repo, sum.Seconds, sum.FilesSeen, sum.FilesSkipped, sum.FilesNew, sum.FilesChanged, sum.Unchanged,
						sum.FilesDeleted, sum.ChunksAdded, sum.ChunksRemoved, sum.Events)
					if e := sum.Embedding; e != nil {
						fmt.Fprintf(a.stdout, "embedded %d chunks with %s in %.2fs (%d events); %d of %d chunks have vectors\n",
							e.Embedded, e.Model, e.Seconds, e.Events, e.Vectors, e.Chunks)
					}
				}
			}
			return err
		},
	}
	c.Flags().StringVar(&cfg.Repo, "repo", "", "repository name (default: the directory's name)")
	c.Flags().BoolVar(&asJSON, "json", false, "print the summary as JSON")
	return c
}

// progress draws a one-line progress bar on stderr.
func (a *app) progress(what string) func(done, total int) {
	return func(done, total int) {
		if total == 0 {
			return
		}
		const width = 30
		n := done * width / total
		fmt.Fprintf(a.stderr, "\r%s [%s%s] %d/%d files", what, strings.Repeat("#", n), strings.Repeat(" ", width-n), done, total)
	}
}

func (a *app) queryCommand() *cobra.Command {
	var req trellis.SearchRequest
	var asJSON bool
	c := &cobra.Command{
		Use:     "query TEXT",
		Short:   "Search code memory; results cite chunk ids",
		Example: `  trellis query "append an event with an expected sequence" --top-k 5 --path-prefix events/ --file-type .go`,
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req.Query = strings.Join(args, " ")
			return a.call(cmd, asJSON, func(ctx context.Context, s *session) (any, error) {
				if err := a.models.unusedOnServer(s); err != nil {
					return nil, err
				}
				return s.code.Search(ctx, req)
			},
				func(v any) { a.printSearch(v.(*trellis.SearchResult), req.Content) })
		},
	}
	f := c.Flags()
	f.IntVar(&req.TopK, "top-k", 8, "results to return")
	f.StringVar(&req.PathPrefix, "path-prefix", "", "only chunks under this path")
	f.StringVar(&req.FileType, "file-type", "", "only files with this extension (.py)")
	f.StringVar(&req.ChunkType, "chunk-type", "", "function, method, class, type, module, section or file")
	f.StringVar(&req.Tag, "tag", "", "only chunks with this tag")
	f.StringVar(&req.Repo, "repo", "", "only this repository")
	f.BoolVar(&req.Content, "content", false, "include each chunk's full content")
	f.StringVar(&req.Mode, "mode", "", "lexical or hybrid (default: hybrid when an embedding model is configured and chunks have vectors)")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func (a *app) explainCommand() *cobra.Command {
	var req trellis.ExplainRequest
	var asJSON bool
	c := &cobra.Command{
		Use:   "explain QUESTION",
		Short: "Answer a question about ingested code from retrieved chunks, with checked citations (needs a chat model; otherwise prints the evidence)",
		Example: `  TRELLIS_CHAT_URL=http://localhost:11434/v1 TRELLIS_CHAT_MODEL=qwen2.5-coder trellis explain "how does error handling work?"
  trellis explain "how are tasks claimed?" --top-k 5 --path-prefix handlers/`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req.Question = strings.Join(args, " ")
			return a.call(cmd, asJSON, func(ctx context.Context, s *session) (any, error) {
				if err := a.models.unusedOnServer(s); err != nil {
					return nil, err
				}
				return s.code.Explain(ctx, req)
			},
				func(v any) { a.printExplain(v.(*trellis.ExplainResult)) })
		},
	}
	f := c.Flags()
	f.IntVar(&req.TopK, "top-k", 8, "chunks to retrieve (1-20)")
	f.StringVar(&req.PathPrefix, "path-prefix", "", "only chunks under this path")
	f.StringVar(&req.FileType, "file-type", "", "only files with this extension (.py)")
	f.StringVar(&req.ChunkType, "chunk-type", "", "function, method, class, type, module, section or file")
	f.StringVar(&req.Tag, "tag", "", "only chunks with this tag")
	f.StringVar(&req.Repo, "repo", "", "only this repository")
	f.StringVar(&req.Mode, "mode", "", "retrieval: lexical or hybrid")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

// printExplain writes an explain answer, its checked citations and the
// evidence.
func (a *app) printExplain(r *trellis.ExplainResult) {
	if r.NotFound {
		fmt.Fprintf(a.stdout, "not found: no chunk matches %q.\n", r.Question)
		if len(r.Suggestions) > 0 {
			fmt.Fprintf(a.stdout, "Next search: try %s\n", strings.Join(r.Suggestions, ", "))
		}
		return
	}
	if r.Model == "" {
		fmt.Fprintf(a.stdout, "%s.\n\nEvidence (%d chunks):\n\n", r.Configure, len(r.Evidence))
		for i, h := range r.Evidence {
			fmt.Fprintf(a.stdout, "[%d] CHUNK_ID: %s\n    Source: %s (lines %d-%d)\n    Type: %s (%s)\n\n%s\n\n", i+1, h.ChunkID, h.SourcePath, h.StartLine, h.EndLine, h.ChunkType, h.Name, h.Content)
		}
		return
	}
	fmt.Fprintf(a.stdout, "%s\n\n", strings.TrimSpace(r.Answer))
	fmt.Fprintf(a.stdout, "Model: %s. Citations checked against the %d retrieved chunks: %d valid", r.Model, len(r.Evidence), len(r.Citations))
	if len(r.InvalidCitations) > 0 {
		fmt.Fprintf(a.stdout, ", %d INVALID (not among the retrieved chunks): %s", len(r.InvalidCitations), strings.Join(r.InvalidCitations, ", "))
	}
	fmt.Fprintln(a.stdout, ".")
	byID := map[string]trellis.ChunkHit{}
	for _, h := range r.Evidence {
		byID[h.ChunkID] = h
	}
	for _, id := range r.Citations {
		h := byID[id]
		fmt.Fprintf(a.stdout, "  %s  %s (lines %d-%d) %s\n", id, h.SourcePath, h.StartLine, h.EndLine, h.Name)
	}
}

// printSearch writes results in the citation format.
func (a *app) printSearch(r *trellis.SearchResult, content bool) {
	if r.NotFound {
		fmt.Fprintf(a.stdout, "not found: no chunk matches %q.\n", r.Query)
		if len(r.Suggestions) > 0 {
			fmt.Fprintf(a.stdout, "Next search: try %s\n", strings.Join(r.Suggestions, ", "))
		}
		return
	}
	fmt.Fprintf(a.stdout, "Found %d chunks matching '%s':\n\n", len(r.Results), r.Query)
	for i, h := range r.Results {
		fmt.Fprintf(a.stdout, "[%d] CHUNK_ID: %s\n", i+1, h.ChunkID)
		fmt.Fprintf(a.stdout, "    Source: %s (lines %d-%d)\n", h.SourcePath, h.StartLine, h.EndLine)
		fmt.Fprintf(a.stdout, "    Type: %s (%s)\n", h.ChunkType, h.Name)
		fmt.Fprintf(a.stdout, "    Snippet: ...%s\n\n", strings.ReplaceAll(h.Snippet, "\n", "\n        "))
		if content {
			fmt.Fprintf(a.stdout, "%s\n\n", h.Content)
		}
	}
	fmt.Fprintln(a.stdout, "CITATION RULE: Always reference chunks by ID in your answer.")
	fmt.Fprintln(a.stdout, "Use `trellis chunk show CHUNK_ID` only if you need full context beyond these snippets.")
}

func (a *app) chunkCommand() *cobra.Command {
	c := &cobra.Command{Use: "chunk", Short: "Chunks of code memory"}
	var asJSON bool
	show := &cobra.Command{
		Use:     "show CHUNK_ID",
		Short:   "Print one chunk in full",
		Example: "  trellis chunk show chunk_0123456789abcdef",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.call(cmd, asJSON, func(ctx context.Context, s *session) (any, error) { return s.code.Chunk(ctx, args[0]) },
				func(v any) {
					h := v.(*trellis.ChunkHit)
					fmt.Fprintf(a.stdout, "CHUNK_ID: %s\nSource: %s (lines %d-%d)\nType: %s (%s)\nLanguage: %s\n\n%s\n",
						h.ChunkID, h.SourcePath, h.StartLine, h.EndLine, h.ChunkType, h.Name, h.Language, h.Content)
				})
		},
	}
	show.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	c.AddCommand(show)
	return c
}
