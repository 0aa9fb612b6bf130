package chunking

import (
	"slices"
	"strings"
	"testing"
)

func TestTextFileOneChunk(t *testing.T) {
	src := "name: trellis\nreplicas: 3\n"
	chunks := mustChunk(t, "deploy/app.yaml", src)
	if len(chunks) != 1 {
		t.Fatalf("chunks:\n%s", dump(chunks))
	}
	c := chunks[0]
	if c.ChunkType != TypeFile || c.Name != "app.yaml" || c.Language != LangText || c.StartLine != 1 || c.EndLine != 2 ||
		!slices.Equal(c.Tags, []string{"text", "yaml"}) || c.Content != "name: trellis\nreplicas: 3" {
		t.Fatalf("chunk %v %q", c, c.Content)
	}
}

func TestTextFileLargeSplitsIntoWindows(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 1000; i++ {
		b.WriteString("row,")
		b.WriteString(strings.Repeat("x", i%50))
		b.WriteString("\n")
	}
	chunks := mustChunk(t, "data/rows.csv", b.String())
	if len(chunks) < 5 {
		t.Fatalf("want windows, got %d", len(chunks))
	}
	next := 1
	for _, c := range chunks {
		if c.StartLine != next || c.EndLine-c.StartLine+1 > MaxChunkLines || len(c.Content) > MaxChunkBytes {
			t.Fatalf("window %v (want start %d)", c, next)
		}
		if !slices.Contains(c.Tags, "partial") || c.ChunkType != TypeFile {
			t.Errorf("window %v", c)
		}
		next = c.EndLine + 1
	}
	if next != 1001 {
		t.Errorf("windows end at %d", next-1)
	}
}

func TestBinaryAndEmptySkipped(t *testing.T) {
	for _, tc := range []struct {
		path    string
		content []byte
		reason  string
	}{
		{"img/logo.png", []byte("\x89PNG\r\n"), "binary file type .png"},
		{"data/blob.dat", []byte("abc\x00def"), "NUL byte at offset 3"},
		{"notes.txt", []byte("caf\xe9 latin-1"), "invalid UTF-8"},
		{"main.go", []byte("package main\x00"), "NUL byte"},
		{"empty.py", nil, "empty file"},
		{"blank.md", []byte(" \n\t\n"), "empty file"},
	} {
		chunks, skip, err := ChunkFile(tc.path, tc.content)
		if err != nil || len(chunks) != 0 || skip == nil || !strings.Contains(skip.Reason, tc.reason) || skip.Path != tc.path {
			t.Errorf("%s: chunks %d skip %+v err %v; want reason %q", tc.path, len(chunks), skip, err, tc.reason)
		}
	}
}

func TestInvalidPaths(t *testing.T) {
	for _, p := range []string{"", "/etc/passwd", "../outside.go", ".", `C:\x.go`} {
		if _, _, err := ChunkFile(p, []byte("x")); err == nil {
			t.Errorf("ChunkFile(%q): no error", p)
		}
	}
	chunks, _, err := ChunkFile(`pkg\sub\..\a.go`, []byte("package a\n"))
	if err != nil || chunks[0].SourcePath != "pkg/a.go" {
		t.Errorf("path not normalised: %v %v", chunks, err)
	}
}

func TestLanguage(t *testing.T) {
	for path, want := range map[string]string{
		"a.py": LangPython, "a.pyi": LangPython, "x/y.go": LangGo, "a.js": LangJavaScript, "a.mjs": LangJavaScript,
		"a.jsx": LangJavaScript, "a.ts": LangTypeScript, "a.tsx": LangTSX, "a.rs": LangRust, "A.java": LangJava,
		"README.md": LangMarkdown, "Makefile": LangText, "a.yaml": LangText, "A.PY": LangPython,
		"logo.PNG": "", "lib.so": "", "a.pyc": "",
	} {
		if got := Language(path); got != want {
			t.Errorf("Language(%q) = %q, want %q", path, got, want)
		}
	}
}

func TestCRLFNormalised(t *testing.T) {
	lf := "def f():\n    return 1\n"
	crlf := strings.ReplaceAll(lf, "\n", "\r\n")
	a := mustChunk(t, "a.py", lf)
	b := mustChunk(t, "a.py", crlf)
	if a[0].ChunkID != b[0].ChunkID || a[0].Content != b[0].Content {
		t.Errorf("CRLF changes chunks: %v %v", a, b)
	}
}

func TestLongLineCutIntoPieces(t *testing.T) {
	line := strings.Repeat("wörd, ", 8000) // 56,000 bytes on one line
	chunks := mustChunk(t, "min.js", "var a = 1;\n"+line+"\n")
	var joined strings.Builder
	pieces := 0
	for _, c := range chunks {
		if c.StartLine == 2 {
			pieces++
			joined.WriteString(c.Content)
			if len(c.Content) > MaxChunkBytes || !slices.Contains(c.Tags, "partial") {
				t.Errorf("piece %v: %d bytes", c, len(c.Content))
			}
		}
	}
	if pieces < 4 || joined.String() != line {
		t.Errorf("%d pieces; rejoined equal: %v", pieces, joined.String() == line)
	}
}
