package chunking

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

var goSrc = strings.TrimPrefix(`
// Package strs provides a string reader.
package strs

import (
	"errors"
	"io"
)

// ErrEmpty is returned for empty input.
var ErrEmpty = errors.New("empty")

// Reader reads from a string.
type Reader[T any] struct {
	s string
	i int
}

// NewReader returns a Reader for s.
func NewReader(s string) *Reader[byte] {
	return &Reader[byte]{s: s}
}

// Read implements io.Reader.
func (r *Reader[T]) Read(p []byte) (int, error) {
	if r.i >= len(r.s) {
		return 0, io.EOF
	}
	n := copy(p, r.s[r.i:])
	r.i += n
	return n, nil
}

func (r Reader[T]) len() int {
	return len(r.s) - r.i
}

type byName []string

func (s byName) Len() int           { return len(s) }
func (s byName) Less(i, j int) bool { return s[i] < s[j] }
func (s byName) Swap(i, j int)      { s[i], s[j] = s[j], s[i] }

type (
	Mode  int
	Alias = string
)

const maxLen = 10
`, "\n")

func TestGoDefinitions(t *testing.T) {
	chunks := mustChunk(t, "strs/reader.go", goSrc)
	wantOrder := []string{
		"module reader.go",
		"type Reader",
		"function NewReader",
		"method Reader.Read",
		"method Reader.len",
		"type byName",
		"method byName.Len, byName.Less, byName.Swap",
		"type Mode, Alias",
		"module reader.go",
	}
	if got := names(chunks); !slices.Equal(got, wantOrder) {
		t.Fatalf("chunks:\n%s\nwant %q", dump(chunks), wantOrder)
	}
	expect(t, chunks, []want{
		{typ: TypeModule, name: "reader.go", start: 1, end: 10, tags: []string{"go"}},
		{typ: TypeType, name: "Reader", start: 12, end: 16, tags: []string{"exported"}},
		{typ: TypeFunction, name: "NewReader", start: 18, end: 21, tags: []string{"exported"}},
		{typ: TypeMethod, name: "Reader.Read", start: 23, end: 31, tags: []string{"exported"}},
		{typ: TypeMethod, name: "Reader.len", start: 33, end: 35, notTags: []string{"exported"}},
		{typ: TypeType, name: "byName", start: 37, end: 37},
		{typ: TypeMethod, name: "byName.Len, byName.Less, byName.Swap", start: 39, end: 41, tags: []string{"merged", "exported"}},
		{typ: TypeType, name: "Mode, Alias", start: 43, end: 46},
	})
	if last := chunks[len(chunks)-1]; last.StartLine != 48 || last.Content != "const maxLen = 10" {
		t.Errorf("last module chunk %v", last)
	}
	read, _ := find(chunks, TypeMethod, "Reader.Read")
	if !strings.HasPrefix(read.Content, "// Read implements io.Reader.\nfunc (r *Reader[T]) Read(") {
		t.Errorf("method chunk should start with its doc comment:\n%s", read.Content)
	}
}

func TestGoTestFile(t *testing.T) {
	src := "package strs\n\nimport \"testing\"\n\nfunc TestRead(t *testing.T) {\n\tt.Log(1)\n\tt.Log(2)\n}\n"
	chunks := mustChunk(t, "strs/reader_test.go", src)
	expect(t, chunks, []want{{typ: TypeFunction, name: "TestRead", start: 5, end: 8, tags: []string{"test", "go", "exported"}}})
}

func TestGoSyntaxError(t *testing.T) {
	src := "package p\n\nfunc ok() int {\n\treturn 1\n}\n\nfunc bad( {\n\tfor {\n}\n\nfunc alsoOK() {\n\tprintln()\n}\n"
	chunks := mustChunk(t, "p/bad.go", src)
	for _, c := range chunks {
		if !slices.Contains(c.Tags, "parse_error") {
			t.Errorf("%v lacks parse_error", c)
		}
	}
	expect(t, chunks, []want{{typ: TypeFunction, name: "ok", start: 3, end: 5}})
}

// TestGoLargeFileSplitsAtStatements chunks net/http/server.go: every
// chunk within the limits (bar single over-long lines), and the oversized
// functions split into parts that begin at statement boundaries.
func TestGoLargeFileSplitsAtStatements(t *testing.T) {
	data := readServerGo(t)
	chunks := mustChunk(t, "net/http/server.go", string(data))
	src := newSource(data)
	parts := 0
	for _, c := range chunks {
		if n := c.EndLine - c.StartLine + 1; n > MaxChunkLines && c.ChunkType != TypeClass {
			t.Errorf("%v has %d lines", c, n)
		}
		if len(c.Content) > MaxChunkBytes && c.EndLine > c.StartLine {
			t.Errorf("%v has %d bytes", c, len(c.Content))
		}
		if slices.Contains(c.Tags, "partial") && c.ChunkType == TypeMethod {
			parts++
			first := strings.TrimSpace(src.lines[c.StartLine-1])
			if first == "}" || first == ")" || first == "" {
				t.Errorf("part %v starts mid-statement: %q", c, first)
			}
		}
	}
	if parts < 2 {
		t.Errorf("expected oversized methods split into parts, got %d parts", parts)
	}
	if _, ok := find(chunks, TypeMethod, "Server.ListenAndServe"); !ok {
		t.Errorf("no Server.ListenAndServe chunk")
	}
	if _, ok := find(chunks, TypeType, "Server"); !ok {
		t.Errorf("no Server type chunk")
	}
}

func readServerGo(tb testing.TB) []byte {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join(runtime.GOROOT(), "src", "net", "http", "server.go"))
	if err != nil {
		tb.Skipf("GOROOT source not available: %v", err)
	}
	return data
}
