package trellis_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every relative link in the README and docs/ names a file that exists
// and, with a #fragment, a heading in it: moving a section cannot leave a
// reader at a dead end.
func TestDocsLinksResolve(t *testing.T) {
	t.Parallel()
	files := []string{"README.md"}
	err := filepath.WalkDir("docs", func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 15 {
		t.Fatalf("found %d documentation files; docs/ should hold a guide per capability and the references", len(files))
	}
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	anchors := map[string]map[string]bool{}
	anchorsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		a := map[string]bool{}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		fence := false
		for _, line := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(line, "```") {
				fence = !fence
			}
			if !fence && strings.HasPrefix(line, "#") {
				a[slug(strings.TrimLeft(line, "# "))] = true
			}
		}
		anchors[path] = a
		return a
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(data), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, frag, _ := strings.Cut(target, "#")
			if path == "" {
				path = f
			} else {
				path = filepath.Join(filepath.Dir(f), path)
			}
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s: link %q: %v", f, target, err)
				continue
			}
			if frag != "" && strings.HasSuffix(path, ".md") && !anchorsOf(path)[frag] {
				t.Errorf("%s: link %q: no heading #%s in %s", f, target, frag, path)
			}
		}
	}
}

// slug is GitHub's anchor for a heading.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || ('a' <= r && r <= 'z') || ('0' <= r && r <= '9') || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}
