package chunking

import (
	"encoding/json"
	"testing"
)

// fuzzPaths are the file names a fuzz input is chunked as: every language.
var fuzzPaths = []string{"f.py", "f.go", "f.js", "f.ts", "f.tsx", "f.rs", "F.java", "f.md", "f.txt"}

// FuzzChunkFile: no input makes ChunkFile panic or fail, for any language;
// chunk line ranges stay inside the file, cover every non-blank line, and
// content, hashes and ids are well formed; the same input gives the same
// chunks.
func FuzzChunkFile(f *testing.F) {
	for _, s := range []string{pythonSrc, goSrc, tsSrc, jsSrc, rustSrc, javaSrc, idSrc,
		"def broken(:\n  return (\n", "class A:\n    def f(self): pass\n    def g(self): pass\n",
		"func (r *R) A() {}\nfunc (r *R) B() {}\n", "}}}{{{\n", "# h\n```\n# x\n", "\r\n\r\nx\r\n",
		"impl<T> X for Y<T> { fn a() {} }", "@A class B { @C m() {} }", "package p\nfunc f() {\n\tif x {\n"} {
		for i := range fuzzPaths {
			f.Add([]byte(s), uint8(i))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, which uint8) {
		path := fuzzPaths[int(which)%len(fuzzPaths)]
		chunks, skip, err := ChunkFile(path, data)
		if err != nil {
			t.Fatalf("error: %v", err)
		}
		if skip != nil {
			if len(chunks) != 0 {
				t.Fatalf("skip with chunks")
			}
			return
		}
		if msg := invariants(path, data, chunks); msg != "" {
			t.Fatalf("%s: %s\n%s", path, msg, dump(chunks))
		}
		again, _, _ := ChunkFile(path, data)
		a, _ := json.Marshal(chunks)
		b, _ := json.Marshal(again)
		if string(a) != string(b) {
			t.Fatalf("not deterministic")
		}
	})
}

// FuzzGitIgnore: no pattern or path makes the matcher panic, and a path
// below a matched directory is matched too.
func FuzzGitIgnore(f *testing.F) {
	f.Add("*.log\n!keep.log\n/build/\ndocs/**/x\n[a-", "docs/a/b/x")
	f.Add("**/**/a/**", "a/b/c")
	f.Fuzz(func(t *testing.T, patterns, path string) {
		g := ParseGitIgnore("", []byte(patterns))
		if g.Match(path, true) && g.Match(path+"/child", false) != true {
			t.Fatalf("child of ignored directory %q not ignored", path)
		}
		DefaultRules().Excluded(path, false)
	})
}

// FuzzSensitiveContent: no content makes the scanner panic.
func FuzzSensitiveContent(f *testing.F) {
	f.Add("password = \"x\"\n-----BEGIN PRIVATE KEY-----")
	f.Fuzz(func(t *testing.T, content string) {
		r := DefaultRules()
		r.SensitiveContent("a.py", []byte(content))
		r.SensitiveContent("a.yaml", []byte(content))
	})
}
