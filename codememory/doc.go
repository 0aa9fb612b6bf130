// Package codememory is the code memory domain: repositories ingested as
// chunks (functions, types, sections of documents), searched lexically
// (BM25) and, with an embedding model, by vectors fused with BM25 by
// Reciprocal Rank Fusion, and explained by a chat model citing the
// chunks it was given. Each file of a repository is an aggregate
// (trellis.chunks.<repo>.<file token>); Ingest decides each file's
// change through package command (checked appends on the file's
// aggregate, against the state it read).
//
// What it decides: which files of a tree are ingested (.gitignore, the
// chunking rules, size limits; the others are reported as skipped), the
// chunk difference of each changed file (chunks added, chunk ids
// removed), files gone from the tree, and which chunks still need
// vectors of the configured model (EmbedPending, or the background
// embedder of a server). Reads (search, chunk, explain) come from the
// search and vector index projections once they have applied everything
// ingested so far.
//
// Which events it appends, on TRELLIS_CHUNKS:
//   - trellis.chunks.<repo>.<file token>.<type>: chunks_added (chunks
//     that do not fit the commit), file_indexed (the commit of a file's
//     ingest) and file_deleted;
//   - trellis.chunks.<repo>.<model token>.chunks_embedded: the vectors a
//     model computed (recorded so a replay never calls the model again).
//
// The root package's trellis.CodeService interface is what the
// transports see of it (Service implements it); handlers.Service
// composes it with the other domains.
package codememory
