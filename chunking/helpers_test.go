package chunking

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var idPattern = regexp.MustCompile(`^chunk_[0-9a-f]{16}$`)

// want describes an expected chunk; tags lists tags it must have and
// notTags tags it must not have.
type want struct {
	typ, name  string
	start, end int
	tags       []string
	notTags    []string
}

// mustChunk chunks src as path, failing on an error or skip, and checks the
// invariants every result must hold.
func mustChunk(t *testing.T, path, src string) []Chunk {
	t.Helper()
	chunks, skip, err := ChunkFile(path, []byte(src))
	if err != nil {
		t.Fatalf("ChunkFile(%s): %v", path, err)
	}
	if skip != nil {
		t.Fatalf("ChunkFile(%s) skipped: %s", path, skip.Reason)
	}
	if msg := invariants(path, []byte(src), chunks); msg != "" {
		t.Fatalf("%s: %s\n%s", path, msg, dump(chunks))
	}
	return chunks
}

// invariants returns a description of the first broken invariant, or "":
// ids, hashes and tags well formed, ids unique, line ranges inside the file,
// content equal to the lines it claims (class chunks aside, whose methods
// are stubs), and every non-blank line covered by some chunk.
func invariants(path string, data []byte, chunks []Chunk) string {
	src := newSource(data)
	covered := make([]bool, src.n())
	ids := map[string]bool{}
	p, _ := cleanPath(path)
	for _, c := range chunks {
		switch {
		case !idPattern.MatchString(c.ChunkID):
			return "bad id " + c.ChunkID
		case ids[c.ChunkID]:
			return "duplicate id " + c.String()
		case c.StartLine < 1 || c.EndLine < c.StartLine || c.EndLine > src.n():
			return "line range outside the file: " + c.String()
		case c.SourcePath != p:
			return "source path " + c.SourcePath
		case c.Language != Language(p):
			return "language " + c.Language
		case !slices.IsSorted(c.Tags):
			return "unsorted tags " + c.String()
		case !slices.Contains(c.Tags, c.Language):
			return "language tag missing " + c.String()
		case c.Content == "":
			return "empty content " + c.String()
		}
		sum := sha256.Sum256([]byte(c.Content))
		if c.ContentHash != hex.EncodeToString(sum[:]) {
			return "content hash " + c.String()
		}
		ids[c.ChunkID] = true
		lines := src.text(c.StartLine-1, c.EndLine-1)
		stubbed := (c.ChunkType == TypeClass || c.ChunkType == TypeType || c.ChunkType == TypeModule) && strings.Contains(c.Content, " ...")
		cutLine := c.StartLine == c.EndLine && len(lines) > MaxChunkBytes && slices.Contains(c.Tags, "partial")
		switch {
		case cutLine:
			if !strings.Contains(lines, c.Content) {
				return "piece of a long line not in the line " + c.String()
			}
		case !stubbed && c.Content != lines:
			return "content differs from lines " + c.String() + "\n" + c.Content
		}
		if !stubbed && (len(c.Content) > MaxChunkBytes || c.EndLine-c.StartLine+1 > MaxChunkLines) {
			return "chunk over the size limits " + c.String()
		}
		for i := c.StartLine - 1; i < c.EndLine; i++ {
			covered[i] = true
		}
	}
	for i := range covered {
		if !covered[i] && !src.blank(i) {
			return "line " + strconv.Itoa(i+1) + " not covered: " + src.lines[i]
		}
	}
	return ""
}

func dump(chunks []Chunk) string {
	var sb strings.Builder
	for _, c := range chunks {
		sb.WriteString(c.String())
		sb.WriteByte('\n')
	}
	return sb.String()
}

// find returns the chunk of the given type and name.
func find(chunks []Chunk, typ, name string) (Chunk, bool) {
	for _, c := range chunks {
		if c.ChunkType == typ && c.Name == name {
			return c, true
		}
	}
	return Chunk{}, false
}

// expect checks that every wanted chunk is present with its line range and
// tags.
func expect(t *testing.T, chunks []Chunk, wants []want) {
	t.Helper()
	for _, w := range wants {
		c, ok := find(chunks, w.typ, w.name)
		if !ok {
			t.Errorf("no %s %q in\n%s", w.typ, w.name, dump(chunks))
			continue
		}
		if w.start != 0 && (c.StartLine != w.start || c.EndLine != w.end) {
			t.Errorf("%s %q: lines %d-%d, want %d-%d", w.typ, w.name, c.StartLine, c.EndLine, w.start, w.end)
		}
		for _, tag := range w.tags {
			if !slices.Contains(c.Tags, tag) {
				t.Errorf("%s %q: tags %v lack %q", w.typ, w.name, c.Tags, tag)
			}
		}
		for _, tag := range w.notTags {
			if slices.Contains(c.Tags, tag) {
				t.Errorf("%s %q: tags %v have %q", w.typ, w.name, c.Tags, tag)
			}
		}
	}
}

// names returns "type name" for each chunk, in order.
func names(chunks []Chunk) []string {
	out := make([]string, len(chunks))
	for i, c := range chunks {
		out[i] = c.ChunkType + " " + c.Name
	}
	return out
}
