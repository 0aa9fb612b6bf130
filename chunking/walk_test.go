package chunking

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

// recordingFS records every path opened.
type recordingFS struct {
	fs.FS
	opened []string
}

func (r *recordingFS) Open(name string) (fs.File, error) {
	r.opened = append(r.opened, name)
	return r.FS.Open(name)
}

func TestWalk(t *testing.T) {
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	mfs := fstest.MapFS{
		".gitignore":                  file("*.log\n/generated/\n"),
		"main.go":                     file("package main\n\nfunc main() {\n\tprintln()\n}\n"),
		"README.md":                   file("# Title\ntext\n"),
		"debug.log":                   file("noise"),
		".env":                        file("X=1"),
		".git/config":                 file("[core]"),
		"node_modules/x/index.js":     file("x"),
		"generated/api.go":            file("package generated"),
		"pkg/.gitignore":              file("!keep.log\nlocal.txt\n"),
		"pkg/keep.log":                file("kept"),
		"pkg/local.txt":               file("local"),
		"pkg/tokenize.py":             file("def tokenize(s):\n    return s.split()\n"),
		"pkg/settings.py":             file(fake("password = \"", "hunter22", "\"\n")),
		"img/logo.png":                file("\x89PNG"),
		"data/blob.bin.txt":           file("a\x00b"),
		".claude/CLAUDE.md":           file("instructions"),
		"config/github_token.txt":     file("t"),
		"certs/tls.key":               file("k"),
		"big.txt":                     file(strings.Repeat("x\n", 100)),
		"src/components/Button.tsx":   file("export const B = () => <b/>;\n"),
		"src/components/Button.css":   file(".b { color: red }\n"),
		"src/components/.DS_Store.db": file("x"),
	}
	rec := &recordingFS{FS: mfs}
	r := DefaultRules()
	r.MaxFileBytes = 150
	got := map[string]string{}
	err := r.Walk(rec, func(res FileResult) error {
		switch {
		case res.Skip != nil:
			got[res.Path] = "skip: " + res.Skip.Reason
		default:
			got[res.Path] = "chunks"
			for _, c := range res.Chunks {
				if c.SourcePath != res.Path {
					t.Errorf("chunk path %s in %s", c.SourcePath, res.Path)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	wantPrefix := map[string]string{
		".gitignore":                  "chunks",
		"main.go":                     "chunks",
		"README.md":                   "chunks",
		"debug.log":                   "skip: ignored by .gitignore",
		".env":                        "skip: secret file",
		".git/":                       "skip: secret or version-control directory",
		"node_modules/":               "skip: cache",
		"generated/":                  "skip: ignored by .gitignore",
		"pkg/.gitignore":              "chunks",
		"pkg/keep.log":                "chunks",
		"pkg/local.txt":               "skip: ignored by .gitignore",
		"pkg/tokenize.py":             "chunks",
		"pkg/settings.py":             "skip: sensitive content: credential assignment (password) at line 1",
		"img/logo.png":                "skip: binary file type",
		"data/blob.bin.txt":           "skip: binary content",
		".claude/":                    "skip: agent instruction directory",
		"config/github_token.txt":     "skip: configuration or data file named after a secret",
		"certs/tls.key":               "skip: secret file",
		"big.txt":                     "skip: file too large: 200 bytes",
		"src/components/Button.tsx":   "chunks",
		"src/components/Button.css":   "chunks",
		"src/components/.DS_Store.db": "skip: binary file type",
	}
	for p, w := range wantPrefix {
		if !strings.HasPrefix(got[p], w) {
			t.Errorf("%s: %q, want %q", p, got[p], w)
		}
	}
	for p := range got {
		if _, ok := wantPrefix[p]; !ok {
			t.Errorf("unexpected result for %s: %s", p, got[p])
		}
	}
	// Excluded files and directories are never opened.
	for _, p := range rec.opened {
		for _, never := range []string{".env", ".git", "node_modules", ".claude", "certs/tls.key", "config/github_token.txt", "debug.log", "generated", "img/logo.png", "big.txt"} {
			if p == never || strings.HasPrefix(p, never+"/") {
				t.Errorf("opened excluded %s", p)
			}
		}
	}
}

func TestWalkStopsOnError(t *testing.T) {
	stop := errors.New("stop")
	mfs := fstest.MapFS{"a.go": {Data: []byte("package a\n")}, "b.go": {Data: []byte("package b\n")}}
	n := 0
	err := DefaultRules().Walk(mfs, func(FileResult) error { n++; return stop })
	if !errors.Is(err, stop) || n != 1 {
		t.Errorf("err %v after %d files", err, n)
	}
}

func TestWalkSkipsSymlinks(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "secret.go")
	if err := os.WriteFile(outside, []byte("package s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a.go"), []byte("package a\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "link.go")); err != nil {
		t.Skip("symlinks unsupported:", err)
	}
	var seen []string
	err := DefaultRules().Walk(os.DirFS(dir), func(r FileResult) error {
		if r.Skip != nil {
			seen = append(seen, r.Path+": "+r.Skip.Reason)
		} else {
			seen = append(seen, r.Path)
		}
		return nil
	})
	if err != nil || !slices.Equal(seen, []string{"a.go", "link.go: not a regular file"}) {
		t.Errorf("seen %q err %v", seen, err)
	}
}
