package events

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
)

// Code-memory event types: the last token of
// trellis.chunks.<repo>.<file>.<type>, where <file> is FileToken of the
// repo-relative path. Each file is an aggregate: its events are the chunk
// difference of each ingest that changed it, committed by file_indexed.
const (
	// ChunksAdded carries chunks (with their content) added to a file whose
	// difference does not fit the file_indexed event.
	ChunksAdded = "chunks_added"
	// FileIndexed commits an ingest of a file: its mtime, size, content
	// hash, full list of chunk ids, and the difference (chunks added,
	// chunk ids removed).
	FileIndexed = "file_indexed"
	// FileDeleted records a file gone from the repository; its chunks are
	// removed.
	FileDeleted = "file_deleted"
	// ChunksEmbedded records vectors an embedding model computed for
	// chunks (derived data, recorded so that a replay never calls the model
	// again). Its aggregate is one repository and model:
	// trellis.chunks.<repo>.<ModelToken>.chunks_embedded.
	ChunksEmbedded = "chunks_embedded"
)

// ChunksSchema is the current schema version of code-memory payloads.
const ChunksSchema = 1

// FileToken is the subject token of a file: 16 hex of SHA-256 of its
// repo-relative path.
func FileToken(path string) string {
	sum := sha256.Sum256([]byte(path))
	return "f" + hex.EncodeToString(sum[:8])
}

// ChunkSubject is the subject of a code-memory event.
func ChunkSubject(repo, path, typ string) string {
	return "trellis.chunks." + repo + "." + FileToken(path) + "." + typ
}

// FileFilter is the subject filter of one file's aggregate.
func FileFilter(repo, path string) string {
	return "trellis.chunks." + repo + "." + FileToken(path) + ".>"
}

// ModelToken is the subject token of an embedding model's vectors: "e" and
// 16 hex of SHA-256 of the model name (file tokens start with "f").
func ModelToken(model string) string {
	sum := sha256.Sum256([]byte(model))
	return "e" + hex.EncodeToString(sum[:8])
}

// EmbeddingSubject is the subject of a chunks_embedded event.
func EmbeddingSubject(repo, model string) string {
	return "trellis.chunks." + repo + "." + ModelToken(model) + "." + ChunksEmbedded
}

// RepoStateSubjects are the subjects whose last message per file tells the
// file's recorded state.
func RepoStateSubjects(repo string) []string {
	return []string{"trellis.chunks." + repo + ".*." + FileIndexed, "trellis.chunks." + repo + ".*." + FileDeleted}
}

// ChunkRecord is a chunk as the events carry it.
type ChunkRecord struct {
	ChunkID     string   `json:"chunk_id"`
	Repo        string   `json:"repo"`
	SourcePath  string   `json:"source_path"`
	StartLine   int      `json:"start_line"`
	EndLine     int      `json:"end_line"`
	ChunkType   string   `json:"chunk_type"`
	Name        string   `json:"name"`
	Language    string   `json:"language"`
	Tags        []string `json:"tags"`
	ContentHash string   `json:"content_hash"`
	Content     string   `json:"content"`
}

// ChunksAddedPayload is the payload of chunks_added. A file whose chunks
// do not fit one message is spread over several events; Part and Parts
// number them.
type ChunksAddedPayload struct {
	Path   string        `json:"path"`
	Part   int           `json:"part"`
	Parts  int           `json:"parts"`
	Chunks []ChunkRecord `json:"chunks"`
}

// FileIndexedPayload is the payload of file_indexed: the file's new state
// and, in the common case of a difference that fits one message, the
// difference itself (chunks added with their content, chunk ids removed),
// so a changed file costs one append. Larger differences send their added
// chunks ahead in chunks_added events.
type FileIndexedPayload struct {
	Path        string        `json:"path"`
	MTime       int64         `json:"mtime_unix_nano"`
	Size        int64         `json:"size"`
	ContentHash string        `json:"content_hash"`
	Language    string        `json:"language"`
	ChunkIDs    []string      `json:"chunk_ids"`
	Added       []ChunkRecord `json:"added,omitempty"`
	Removed     []string      `json:"removed,omitempty"`
}

// File-state headers: every file_indexed and file_deleted message carries
// the file's state in these headers, so an ingest reads the repository's
// state with a headers-only consumer, without the chunk contents.
const (
	HeaderFilePath  = "Trellis-File-Path"
	HeaderFileMTime = "Trellis-File-Mtime"
	HeaderFileSize  = "Trellis-File-Size"
	HeaderFileHash  = "Trellis-File-Hash"
	HeaderDeleted   = "Trellis-File-Deleted"
)

// FileStateFromHeaders reads a file's state from a file_indexed or
// file_deleted message's headers (chunk ids are in the payload).
func FileStateFromHeaders(h HeaderRecord) (FileState, error) {
	path := h.Header.Get(HeaderFilePath)
	if path == "" {
		return FileState{}, fmt.Errorf("message #%d on %s has no %s header", h.Seq, h.Subject, HeaderFilePath)
	}
	st := FileState{Path: path, Seq: h.Seq, Deleted: h.Header.Get(HeaderDeleted) == "true", ContentHash: h.Header.Get(HeaderFileHash)}
	st.MTime, _ = strconv.ParseInt(h.Header.Get(HeaderFileMTime), 10, 64)
	st.Size, _ = strconv.ParseInt(h.Header.Get(HeaderFileSize), 10, 64)
	return st, nil
}

// ChunkVector is one chunk's vector: little-endian float32s, base64.
type ChunkVector struct {
	ChunkID string `json:"chunk_id"`
	Vector  string `json:"vector"`
}

// ChunksEmbeddedPayload is the payload of chunks_embedded: vectors of one
// model, all of dimension Dims, each computed from the chunk's contextual
// text (embedding.ContextualText).
type ChunksEmbeddedPayload struct {
	Model   string        `json:"model"`
	Dims    int           `json:"dims"`
	Vectors []ChunkVector `json:"vectors"`
}

// EmbeddedMsgID is the message id of a chunks_embedded event: the same
// vectors of the same model are stored once (audit verify expects it).
func EmbeddedMsgID(model string, vs []ChunkVector) string {
	h := sha256.New()
	h.Write([]byte(model))
	for _, v := range vs {
		h.Write([]byte(v.ChunkID))
	}
	return "emb-" + hex.EncodeToString(h.Sum(nil))[:32]
}

// EncodeVector encodes a vector for ChunkVector.
func EncodeVector(v []float32) string {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return base64.StdEncoding.EncodeToString(b)
}

// DecodeVector decodes a ChunkVector's vector of dims values.
func DecodeVector(s string, dims int) ([]float32, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("vector: %w", err)
	}
	if len(b) != 4*dims {
		return nil, fmt.Errorf("vector: %d bytes, want %d for dimension %d", len(b), 4*dims, dims)
	}
	v := make([]float32, dims)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, nil
}

// FileDeletedPayload is the payload of file_deleted.
type FileDeletedPayload struct {
	Path     string   `json:"path"`
	ChunkIDs []string `json:"chunk_ids"`
}

// FileState is what the log says about a file.
type FileState struct {
	Path        string
	MTime       int64
	Size        int64
	ContentHash string
	ChunkIDs    []string
	Deleted     bool
	Seq         uint64
}

// DecodeFileState reads a file_indexed or file_deleted event.
func DecodeFileState(rec Recorded) (FileState, error) {
	switch rec.Type {
	case FileIndexed:
		var p FileIndexedPayload
		if err := rec.DecodePayload(&p); err != nil {
			return FileState{}, err
		}
		return FileState{Path: p.Path, MTime: p.MTime, Size: p.Size, ContentHash: p.ContentHash, ChunkIDs: p.ChunkIDs, Seq: rec.Seq}, nil
	case FileDeleted:
		var p FileDeletedPayload
		if err := rec.DecodePayload(&p); err != nil {
			return FileState{}, err
		}
		return FileState{Path: p.Path, Deleted: true, Seq: rec.Seq}, nil
	}
	return FileState{}, fmt.Errorf("event %s is not a file state", rec.Type)
}
