package chunking

import (
	"crypto/sha256"
	"encoding/hex"
)

// Chunk types: the values of [Chunk.ChunkType].
const (
	// TypeFunction is a top-level (or namespace-level) function.
	TypeFunction = "function"
	// TypeMethod is a function defined inside a class, impl block or
	// interface, or a Go function with a receiver.
	TypeMethod = "method"
	// TypeClass is a class header: signature, docstring, fields and one
	// elided stub line per method (methods are chunks of their own).
	TypeClass = "class"
	// TypeType is a struct, interface, enum, trait, impl block or type alias.
	TypeType = "type"
	// TypeModule is module-level code between definitions (imports,
	// constants, top-level statements), or the header of a TypeScript
	// namespace or Rust mod block whose functions are chunks of their own.
	TypeModule = "module"
	// TypeSection is a Markdown section, from one ATX header to the next.
	TypeSection = "section"
	// TypeFile is a whole non-code text file, or a line window of one.
	TypeFile = "file"
)

// Size limits. A chunk holds at most MaxChunkLines lines and MaxChunkBytes
// bytes of content (a line longer than MaxChunkBytes, as in minified or
// generated code, is cut into several chunks that all report that line).
// Larger definitions are split at statement
// boundaries (parts share the definition's name and carry the "partial"
// tag); larger module code, sections and text files are split the same way
// or into line windows. Consecutive sibling definitions of the same kind
// that are each shorter than MinChunkLines and written on adjacent lines (no
// blank line between them, like a block of one-line methods or type
// aliases) are merged into one chunk (tag "merged", names joined by ", ").
// Code files larger than MaxParseBytes are not parsed: they fall back to
// line windows (tag "fallback").
const (
	// MaxChunkLines is the most lines one chunk holds.
	MaxChunkLines = 200
	// MaxChunkBytes is the most content bytes one chunk holds (16 KiB,
	// about 4,000 tokens).
	MaxChunkBytes = 16 * 1024
	// MinChunkLines: definitions shorter than this are tiny, and merge
	// with tiny neighbours on adjacent lines.
	MinChunkLines = 3
	// MaxParseBytes is the largest code file parsed with tree-sitter
	// (2 MiB); larger ones are cut into line windows.
	MaxParseBytes = 2 * 1024 * 1024
)

// Chunk is one unit of code memory: a citable, deterministic slice of a file.
// The JSON field names are those of the chunk manifest.
type Chunk struct {
	// ChunkID is "chunk_" + 16 hex digits; see [ChunkID].
	ChunkID string `json:"chunk_id"`
	// SourcePath is the repository-relative, slash-separated path.
	SourcePath string `json:"source_path"`
	// StartLine and EndLine are 1-based and inclusive.
	StartLine int `json:"start_line"`
	EndLine   int `json:"end_line"`
	// ChunkType is one of the Type* constants.
	ChunkType string `json:"chunk_type"`
	// Name is the qualified name ("TextWrapper.wrap", "Reader.Read",
	// "impl Display for Point"), the section header text, or for module
	// code and file chunks the file's base name.
	Name string `json:"name"`
	// Language is the value of [Language] for the file.
	Language string `json:"language"`
	// Tags are sorted: the language, and any of "test", "async",
	// "decorated", "exported", "partial", "merged", "parse_error",
	// "fallback", and for text files the file extension.
	Tags []string `json:"tags"`
	// ContentHash is the lowercase hex SHA-256 of Content.
	ContentHash string `json:"content_hash"`
	// Content is the chunk's text: its lines joined by "\n" (line endings
	// normalised, no trailing newline). For class chunks each method is
	// replaced by one stub line (its signature line followed by " ...").
	Content string `json:"content"`
}

// Skip reports a file that was not chunked, and why.
type Skip struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// ChunkID returns the chunk id for content found under qualifiedName in the
// file at relPath: "chunk_" followed by the first 16 hex digits of the
// SHA-256 of relPath, qualifiedName and content (each terminated by a NUL
// byte so that field boundaries cannot shift). It does not depend on line
// numbers, so the id survives edits elsewhere in the file.
func ChunkID(relPath, qualifiedName, content string) string {
	h := sha256.New()
	h.Write([]byte(relPath))
	h.Write([]byte{0})
	h.Write([]byte(qualifiedName))
	h.Write([]byte{0})
	h.Write([]byte(content))
	h.Write([]byte{0})
	return "chunk_" + hex.EncodeToString(h.Sum(nil))[:16]
}

// ContentHash returns the lowercase hex SHA-256 of content.
func ContentHash(content string) string {
	sum := sha256.Sum256([]byte(content))
	return hex.EncodeToString(sum[:])
}
