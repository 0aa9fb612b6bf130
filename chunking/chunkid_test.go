package chunking

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestChunkIDFormatAndInputs(t *testing.T) {
	id := ChunkID("a.py", "f", "def f(): pass")
	if !idPattern.MatchString(id) {
		t.Fatalf("id %q", id)
	}
	if id != ChunkID("a.py", "f", "def f(): pass") {
		t.Error("not deterministic")
	}
	for _, other := range []string{
		ChunkID("b.py", "f", "def f(): pass"),
		ChunkID("a.py", "g", "def f(): pass"),
		ChunkID("a.py", "f", "def f(): pass "),
		ChunkID("a.pyf", "", "def f(): pass"), // field boundaries do not shift
	} {
		if other == id {
			t.Errorf("id does not depend on every input")
		}
	}
}

const idSrc = `import os


def alpha(x):
    """Alpha."""
    return x + 1


class Beta:
    def gamma(self):
        return 2
`

// TestChunkIDsSurviveLineShifts: inserting code above a definition moves
// its lines but not its id; changing its content changes the id.
func TestChunkIDsSurviveLineShifts(t *testing.T) {
	before := mustChunk(t, "pkg/m.py", idSrc)
	shifted := strings.Replace(idSrc, "import os\n", "import os\nimport sys\n\n\ndef new_helper():\n    return 0\n", 1)
	after := mustChunk(t, "pkg/m.py", shifted)
	for _, name := range []string{"alpha", "Beta", "Beta.gamma"} {
		b, _ := findName(before, name)
		a, _ := findName(after, name)
		if b.ChunkID == "" || a.ChunkID != b.ChunkID {
			t.Errorf("%s: id %s -> %s", name, b.ChunkID, a.ChunkID)
		}
		if a.StartLine != b.StartLine+5 {
			t.Errorf("%s: start %d -> %d, want shifted by 5", name, b.StartLine, a.StartLine)
		}
	}
	changed := mustChunk(t, "pkg/m.py", strings.Replace(idSrc, "return x + 1", "return x + 2", 1))
	b, _ := findName(before, "alpha")
	c, _ := findName(changed, "alpha")
	if b.ChunkID == c.ChunkID || b.ContentHash == c.ContentHash {
		t.Errorf("changed content kept id %s", c.ChunkID)
	}
	g1, _ := findName(before, "Beta.gamma")
	g2, _ := findName(changed, "Beta.gamma")
	if g1.ChunkID != g2.ChunkID {
		t.Errorf("unchanged method changed id")
	}
	// The same content in another file has another id.
	other := mustChunk(t, "pkg/n.py", idSrc)
	o, _ := findName(other, "alpha")
	if o.ChunkID == b.ChunkID {
		t.Errorf("id independent of path")
	}
}

func TestChunkFileDeterministic(t *testing.T) {
	for path, src := range map[string]string{"a.py": pythonSrc, "a.go": goSrc, "a.ts": tsSrc, "a.rs": rustSrc, "A.java": javaSrc, "a.jsx": jsSrc} {
		a := mustChunk(t, path, src)
		b := mustChunk(t, path, src)
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if string(ja) != string(jb) {
			t.Errorf("%s: two runs differ", path)
		}
	}
}

func TestDuplicateChunksGetDistinctIDs(t *testing.T) {
	src := "x = 1\n\n\ndef f():\n    return 1\n\n\nx = 1\n\n\ndef g():\n    return 2\n\n\nx = 1\n"
	chunks := mustChunk(t, "dup.py", src)
	var mods []Chunk
	for _, c := range chunks {
		if c.ChunkType == TypeModule {
			mods = append(mods, c)
		}
	}
	if len(mods) != 3 || mods[0].ChunkID != ChunkID("dup.py", "dup.py", "x = 1") ||
		mods[1].ChunkID != ChunkID("dup.py", "dup.py#2", "x = 1") || mods[2].ChunkID != ChunkID("dup.py", "dup.py#3", "x = 1") {
		t.Errorf("module chunks:\n%s", dump(mods))
	}
}

func TestChunkJSONFieldNames(t *testing.T) {
	chunks := mustChunk(t, "a.py", "def f():\n    return 1\n")
	data, err := json.Marshal(chunks[0])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"chunk_id", "source_path", "start_line", "end_line", "chunk_type", "name", "language", "tags", "content_hash", "content"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON lacks %q: %s", k, data)
		}
	}
	if len(m) != 10 {
		t.Errorf("JSON has extra fields: %s", data)
	}
}

func findName(chunks []Chunk, name string) (Chunk, bool) {
	for _, c := range chunks {
		if c.Name == name {
			return c, true
		}
	}
	return Chunk{}, false
}
