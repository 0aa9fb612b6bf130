package chunking

import "testing"

func TestGitIgnoreMatch(t *testing.T) {
	g := ParseGitIgnore("", []byte(`# comment
*.log
!keep.log
/root-only.txt
build/
docs/**/*.tmp
**/generated
cache/**
a?c.md
[Tt]emp*
\#literal
trailing   
sub/dir
`))
	for _, tc := range []struct {
		path  string
		isDir bool
		want  bool
	}{
		{"app.log", false, true},
		{"deep/nested/app.log", false, true},
		{"keep.log", false, false}, // negated
		{"x/keep.log", false, false},
		{"root-only.txt", false, true},
		{"x/root-only.txt", false, false}, // anchored
		{"build", true, true},
		{"build", false, false}, // trailing slash: directories only
		{"x/build/out.o", false, true},
		{"docs/a.tmp", false, true}, // ** matches zero directories
		{"docs/x/y/a.tmp", false, true},
		{"other/a.tmp", false, false},
		{"generated", true, true},
		{"a/b/generated/x.go", false, true},
		{"cache/x", false, true},
		{"cache", true, false}, // "cache/**" matches what is inside
		{"abc.md", false, true},
		{"abbc.md", false, false},
		{"Temp1", false, true},
		{"temp", false, true},
		{"#literal", false, true},
		{"trailing", false, true},
		{"sub/dir", true, true},
		{"x/sub/dir", true, false},
		{"sub/dir/file.go", false, true},
		{"main.go", false, false},
	} {
		if got := g.Match(tc.path, tc.isDir); got != tc.want {
			t.Errorf("Match(%q, dir=%v) = %v, want %v", tc.path, tc.isDir, got, tc.want)
		}
	}
}

func TestGitIgnoreNestedAndNegation(t *testing.T) {
	g := ParseGitIgnore("", []byte("*.gen.go\nlogs/\n"))
	g.Add("pkg", []byte("!keep.gen.go\n/local.txt\nlogs/\n"))
	for _, tc := range []struct {
		path string
		want bool
	}{
		{"a.gen.go", true},
		{"pkg/a.gen.go", true},
		{"pkg/keep.gen.go", false}, // re-included by the deeper file
		{"keep.gen.go", true},      // the deeper file does not apply at the root
		{"pkg/local.txt", true},    // anchored to pkg/
		{"local.txt", false},
		{"pkg/sub/local.txt", false},
		{"logs/x.txt", true},
		{"pkg/logs/x.txt", true},
	} {
		if got := g.Match(tc.path, false); got != tc.want {
			t.Errorf("Match(%q) = %v, want %v", tc.path, got, tc.want)
		}
	}
	// Nothing under an ignored directory can be re-included.
	h := ParseGitIgnore("", []byte("out/\n!out/keep.txt\n"))
	if !h.Match("out/keep.txt", false) {
		t.Error("file re-included below an ignored directory")
	}
	var nilG *GitIgnore
	if nilG.Match("a", false) || nilG.Len() != 0 {
		t.Error("nil GitIgnore matches")
	}
	if g.Len() != 5 {
		t.Errorf("Len = %d", g.Len())
	}
}
