package web_test

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/trellis/trellis/web"
)

// TestBuildIsCurrent: the embedded build was made from the sources in this
// tree. The build (vite.config.js) records a SHA-256 over the source files
// (path, NUL, content, NUL, in byte order of path); the same is computed
// here. A change to src/ (or to the build's configuration) without `make
// ui` fails, so the binary never ships a dashboard older than its source.
func TestBuildIsCurrent(t *testing.T) {
	t.Parallel()
	var paths []string
	for _, p := range []string{"index.html", "package.json", "package-lock.json", "vite.config.js", "src"} {
		err := filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			paths = append(paths, filepath.ToSlash(path))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(paths)
	h := sha256.New()
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		h.Write([]byte(p + "\x00"))
		h.Write(data)
		h.Write([]byte{0})
	}
	recorded, err := fs.ReadFile(web.Assets(), "source.sha256")
	if err != nil {
		t.Fatalf("the build records no source hash (%v): run make ui", err)
	}
	if got, want := hex.EncodeToString(h.Sum(nil)), strings.TrimSpace(string(recorded)); got != want {
		t.Fatalf("web/dist was built from other sources than web/src (hash %s, built from %s): run make ui and commit web/dist", got, want)
	}
}
