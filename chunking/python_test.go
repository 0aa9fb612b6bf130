package chunking

import (
	"slices"
	"strings"
	"testing"
)

var pythonSrc = strings.TrimPrefix(`
"""Text wrapping and filling."""
import re
from typing import List

__all__ = ["TextWrapper", "wrap"]

_whitespace = "\t\n\x0b\x0c\r "


class TextWrapper:
    """Object for wrapping/filling text.

    The public interface consists of the wrap() and fill() methods.
    """

    width = 70
    expand_tabs = True

    def __init__(self, width=70):
        self.width = width
        self.chunks = []

    # Split the text into chunks.
    @staticmethod
    def _split(text):
        """Split text into words."""
        return text.split()

    def wrap(self, text):
        """Wrap a single paragraph of text."""
        lines = []
        for chunk in self._split(text):
            lines.append(chunk)
        return lines

    async def fetch(self, url):
        async with session() as s:
            return await s.get(url)

    class Options:
        """Nested options."""

        def validate(self):
            """Check the options."""
            return True


def wrap(text, width=70):
    """Wrap text into lines."""
    def helper(x):
        return x
    return TextWrapper(width=width).wrap(text)


# Cached doubling.
@functools.lru_cache(maxsize=None)
@trace
def cached(x):
    return x * 2


if __name__ == "__main__":
    print(wrap("hello world"))
`, "\n")

func TestPythonDefinitions(t *testing.T) {
	chunks := mustChunk(t, "lib/textwrap.py", pythonSrc)
	wantOrder := []string{
		"module textwrap.py",
		"class TextWrapper",
		"method TextWrapper.__init__",
		"method TextWrapper._split",
		"method TextWrapper.wrap",
		"method TextWrapper.fetch",
		"class TextWrapper.Options",
		"method TextWrapper.Options.validate",
		"function wrap",
		"function cached",
		"module textwrap.py",
	}
	if got := names(chunks); !slices.Equal(got, wantOrder) {
		t.Fatalf("chunks:\n%s\nwant %q", dump(chunks), wantOrder)
	}
	expect(t, chunks, []want{
		{typ: TypeClass, name: "TextWrapper", start: 10, end: 45, tags: []string{"python", "exported"}},
		{typ: TypeMethod, name: "TextWrapper.__init__", start: 19, end: 21, notTags: []string{"exported"}},
		// Leading comment and decorator belong to the method.
		{typ: TypeMethod, name: "TextWrapper._split", start: 23, end: 27, tags: []string{"decorated"}},
		{typ: TypeMethod, name: "TextWrapper.wrap", start: 29, end: 34, tags: []string{"exported"}, notTags: []string{"decorated", "async"}},
		{typ: TypeMethod, name: "TextWrapper.fetch", start: 36, end: 38, tags: []string{"async"}},
		{typ: TypeClass, name: "TextWrapper.Options", start: 40, end: 45},
		{typ: TypeMethod, name: "TextWrapper.Options.validate", start: 43, end: 45},
		// The nested helper stays inside its function.
		{typ: TypeFunction, name: "wrap", start: 48, end: 52},
		{typ: TypeFunction, name: "cached", start: 55, end: 59, tags: []string{"decorated"}},
	})
	mod := chunks[0]
	if mod.StartLine != 1 || mod.EndLine != 7 || !strings.Contains(mod.Content, "import re") {
		t.Errorf("module chunk: %v\n%s", mod, mod.Content)
	}
	last := chunks[len(chunks)-1]
	if last.StartLine != 62 || !strings.Contains(last.Content, `if __name__ == "__main__":`) {
		t.Errorf("trailing module chunk: %v", last)
	}
}

func TestPythonClassChunkHoldsHeaderNotMethods(t *testing.T) {
	chunks := mustChunk(t, "textwrap.py", pythonSrc)
	cls, _ := find(chunks, TypeClass, "TextWrapper")
	for _, s := range []string{
		"class TextWrapper:",
		"The public interface consists of the wrap() and fill() methods.", // docstring
		"    width = 70", // fields
		"    expand_tabs = True",
		"    def wrap(self, text): ...", // one stub line per method
		"    async def fetch(self, url): ...",
		"    class Options: ...",
	} {
		if !strings.Contains(cls.Content, s) {
			t.Errorf("class chunk lacks %q:\n%s", s, cls.Content)
		}
	}
	for _, s := range []string{"lines.append(chunk)", "self.chunks = []", "return True"} {
		if strings.Contains(cls.Content, s) {
			t.Errorf("class chunk repeats method body %q:\n%s", s, cls.Content)
		}
	}
	m, _ := find(chunks, TypeMethod, "TextWrapper.wrap")
	if !strings.Contains(m.Content, `"""Wrap a single paragraph of text."""`) {
		t.Errorf("method chunk lacks its docstring:\n%s", m.Content)
	}
}

func TestPythonMultilineSignatureStub(t *testing.T) {
	src := "class A:\n    def f(\n        self,\n        a,\n    ) -> int:\n        return a\n\n    def g(self):\n        pass\n"
	chunks := mustChunk(t, "a.py", src)
	cls, _ := find(chunks, TypeClass, "A")
	want := "class A:\n    def f(\n        self,\n        a,\n    ) -> int: ...\n    def g(self): ..."
	if cls.Content != want {
		t.Errorf("class content:\n%s\nwant:\n%s", cls.Content, want)
	}
}

func TestPythonSyntaxError(t *testing.T) {
	src := `import os


def good_one(a):
    return a + 1


def broken(:
    return (


class Survivor:
    def method(self):
        return 42


def good_two():
    return 2
`
	chunks := mustChunk(t, "broken.py", src)
	for _, c := range chunks {
		if !slices.Contains(c.Tags, "parse_error") {
			t.Errorf("chunk %v lacks parse_error tag", c)
		}
	}
	expect(t, chunks, []want{
		{typ: TypeFunction, name: "good_one", start: 4, end: 5},
	})
	var all strings.Builder
	for _, c := range chunks {
		all.WriteString(c.Content + "\n")
	}
	for _, s := range []string{"def broken(:", "return 42", "return 2"} {
		if !strings.Contains(all.String(), s) {
			t.Errorf("no chunk holds %q:\n%s", s, dump(chunks))
		}
	}
}

func TestPythonModuleOnly(t *testing.T) {
	src := "import sys\n\nprint(sys.argv)\nx = 1\n"
	chunks := mustChunk(t, "script.py", src)
	if len(chunks) != 1 || chunks[0].ChunkType != TypeModule || chunks[0].Name != "script.py" ||
		chunks[0].StartLine != 1 || chunks[0].EndLine != 4 {
		t.Fatalf("chunks:\n%s", dump(chunks))
	}
}

func TestPythonTestFileTag(t *testing.T) {
	src := "def test_wrap():\n    assert wrap('a') == ['a']\n    assert True\n"
	for path, isTest := range map[string]bool{"tests/test_wrap.py": true, "test_wrap.py": true, "wrap_test.py": true, "wrap.py": false} {
		chunks := mustChunk(t, path, src)
		if got := slices.Contains(chunks[0].Tags, "test"); got != isTest {
			t.Errorf("%s: test tag %v, want %v", path, got, isTest)
		}
	}
}
