package chunking

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// TestPathologicalInputs: deep nesting, one huge line, huge files and
// many definitions chunk quickly and within the invariants.
func TestPathologicalInputs(t *testing.T) {
	cases := map[string]string{
		"deep.py":     "x = " + strings.Repeat("(", 20000) + strings.Repeat(")", 20000) + "\n",
		"deep.js":     strings.Repeat("function f() {\n", 3000) + strings.Repeat("}\n", 3000),
		"deepcls.py":  nestedPythonClasses(40),
		"minified.js": strings.Repeat("function a(){return 1};", 20000) + "\n",
		"unclosed.go": "package p\nfunc f() {\n" + strings.Repeat("\tif x {\n", 2000),
		"many.go":     "package p\n\n" + strings.Repeat("func f() {\n\tprintln()\n}\n\n", 3000),
		"gen.go":      "package p\n\nvar data = []byte{" + strings.Repeat("0x1f, ", 20000) + "}\n",
		"line.txt":    strings.Repeat("wörd ", 10000) + "\n",
		"line.md":     "# T\n" + strings.Repeat("ü", 40000) + "\n",
	}
	for path, src := range cases {
		start := time.Now()
		chunks := mustChunk(t, path, src)
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("%s took %v", path, d)
		}
		if len(chunks) == 0 {
			t.Errorf("%s: no chunks", path)
		}
	}
}

func nestedPythonClasses(depth int) string {
	var b strings.Builder
	for i := 0; i < depth; i++ {
		ind := strings.Repeat("    ", i)
		b.WriteString(ind + "class C:\n" + ind + "    def m(self):\n" + ind + "        return 1\n")
	}
	return b.String()
}

func TestOversizedPythonFunctionSplitsAtStatements(t *testing.T) {
	var b strings.Builder
	b.WriteString("def big(x):\n    \"\"\"Doc.\"\"\"\n")
	for i := 0; i < 150; i++ {
		b.WriteString("    if x == 1:\n        x += 1\n        print(x)\n")
	}
	b.WriteString("    return x\n")
	src := b.String()
	chunks := mustChunk(t, "big.py", src)
	if len(chunks) < 3 {
		t.Fatalf("not split:\n%s", dump(chunks))
	}
	lines := strings.Split(src, "\n")
	next := 1
	for _, c := range chunks {
		if c.Name != "big" || c.ChunkType != TypeFunction || !slices.Contains(c.Tags, "partial") {
			t.Errorf("part %v", c)
		}
		if c.StartLine != next {
			t.Errorf("part %v does not follow line %d", c, next-1)
		}
		if first := lines[c.StartLine-1]; c.StartLine > 1 && !strings.HasPrefix(first, "    if ") && !strings.HasPrefix(first, "    return") {
			t.Errorf("part %v starts mid-statement: %q", c, first)
		}
		next = c.EndLine + 1
	}
	if !strings.HasPrefix(chunks[0].Content, "def big(x):\n    \"\"\"Doc.\"\"\"") {
		t.Errorf("first part lacks the signature:\n%s", chunks[0].Content)
	}
}

func TestOversizedClassHeaderSplits(t *testing.T) {
	var b strings.Builder
	b.WriteString("class Many:\n    \"\"\"Many methods.\"\"\"\n")
	for i := 0; i < 300; i++ {
		b.WriteString("\n    def m" + strings.Repeat("x", i%7) + "(self):\n        return 1\n")
	}
	chunks := mustChunk(t, "many.py", b.String())
	var headers, methods int
	for _, c := range chunks {
		switch c.ChunkType {
		case TypeClass:
			headers++
			if !slices.Contains(c.Tags, "partial") || strings.Count(c.Content, "\n")+1 > MaxChunkLines {
				t.Errorf("header part %v", c)
			}
		case TypeMethod:
			methods++
		}
	}
	if headers < 2 || methods != 300 {
		t.Errorf("headers %d methods %d", headers, methods)
	}
}

func TestUnparsableFallsBackToWindows(t *testing.T) {
	src := strings.Repeat("def f():\n    return 1\n\n", MaxParseBytes/20)
	chunks := mustChunk(t, "huge.py", src)
	for _, c := range chunks {
		if c.ChunkType != TypeFile || !slices.Contains(c.Tags, "fallback") {
			t.Fatalf("chunk %v", c)
		}
	}
}
