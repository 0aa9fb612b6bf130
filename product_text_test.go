package trellis_test

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The product speaks for itself: no text a user can see (CLI help, MCP
// tool descriptions, HTTP errors, the dashboard, the README and docs)
// names the internal documents Trellis was designed from ("seed 003"),
// and nothing in the repository points to a path outside it. The check
// reads every source and documentation file except tests (which may hold
// hostile or outside paths on purpose) and third-party code.
func TestProductTextStandsAlone(t *testing.T) {
	t.Parallel()
	forbidden := []struct {
		re  *regexp.Regexp
		why string
	}{
		{regexp.MustCompile(`(?i)\bseeds? ?0[0-9][0-9]\b|\bthe seed's\b`), "names a design document users never see"},
		{regexp.MustCompile(`\.\./shared/|/work/shared\b`), "points outside the repository"},
	}
	exts := map[string]bool{".go": true, ".md": true, ".jsx": true, ".js": true, ".feature": true, ".html": true}
	var checked int
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "node_modules", "testdata", "testout":
				return filepath.SkipDir
			}
			return nil
		}
		if !exts[filepath.Ext(path)] || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		checked++
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
		for n := 1; sc.Scan(); n++ {
			for _, fb := range forbidden {
				if m := fb.re.FindString(sc.Text()); m != "" {
					t.Errorf("%s:%d: %q %s", path, n, m, fb.why)
				}
			}
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("checked only %d files: is the test running at the repository's root?", checked)
	}
}
