package chunking

import (
	"path"
	"strings"
)

// GitIgnore matches paths against .gitignore patterns. It supports the
// common forms of gitignore(5): blank lines and "#" comments, "!" negation
// (the last matching pattern wins), a trailing "/" (directories only), a
// leading or inner "/" (anchored to the .gitignore's directory; otherwise
// the pattern matches a name at any depth), "*", "?", "[...]" classes
// (including "[!...]"), "\" escapes, and "**" as a whole segment ("**/x",
// "x/**", "a/**/b"). As in git, nothing below an ignored directory can be
// re-included. The zero value and nil ignore nothing.
type GitIgnore struct {
	rules []ignoreRule
}

// ignoreRule is one compiled pattern.
type ignoreRule struct {
	base     []string // directory of the .gitignore, nil for the root
	segs     []string // pattern segments
	negate   bool
	dirOnly  bool
	anchored bool // matched against the whole path below base, else against the base name
}

// ParseGitIgnore compiles the .gitignore file data found in dir (the
// repository-relative directory holding it, "" or "." for the root).
func ParseGitIgnore(dir string, data []byte) *GitIgnore {
	g := &GitIgnore{}
	g.Add(dir, data)
	return g
}

// Add appends the patterns of the .gitignore data found in dir. Patterns
// added later take precedence, so add a parent directory's file before its
// subdirectories' files.
func (g *GitIgnore) Add(dir string, data []byte) {
	dir = strings.Trim(path.Clean("/"+strings.ReplaceAll(dir, "\\", "/")), "/")
	for _, line := range strings.Split(string(data), "\n") {
		if r, ok := compileIgnore(dir, line); ok {
			g.rules = append(g.rules, r)
		}
	}
}

// Len returns the number of patterns.
func (g *GitIgnore) Len() int {
	if g == nil {
		return 0
	}
	return len(g.rules)
}

func compileIgnore(base, line string) (ignoreRule, bool) {
	line = strings.TrimSuffix(line, "\r")
	// Trailing spaces are ignored unless escaped.
	for strings.HasSuffix(line, " ") && !strings.HasSuffix(line, "\\ ") {
		line = line[:len(line)-1]
	}
	if line == "" || strings.HasPrefix(line, "#") {
		return ignoreRule{}, false
	}
	r := ignoreRule{}
	if base != "" {
		r.base = strings.Split(base, "/")
	}
	if strings.HasPrefix(line, "!") {
		r.negate = true
		line = line[1:]
	} else if strings.HasPrefix(line, "\\!") || strings.HasPrefix(line, "\\#") {
		line = line[1:]
	}
	if strings.HasSuffix(line, "/") {
		r.dirOnly = true
		line = strings.TrimRight(line, "/")
	}
	if line == "" {
		return ignoreRule{}, false
	}
	if strings.Contains(line, "/") {
		r.anchored = true
		line = strings.TrimPrefix(line, "/")
	}
	for _, s := range strings.Split(line, "/") {
		if s == "" {
			continue // "a//b"
		}
		if s == "**" && len(r.segs) > 0 && r.segs[len(r.segs)-1] == "**" {
			continue // "**/**" is "**"
		}
		if s != "**" {
			// gitignore's [!x] is path.Match's [^x].
			s = strings.ReplaceAll(s, "[!", "[^")
		}
		r.segs = append(r.segs, s)
	}
	if len(r.segs) == 0 {
		return ignoreRule{}, false
	}
	return r, true
}

// Match reports whether relPath (slash-separated, relative to the
// repository root) is ignored. isDir tells whether it names a directory. A
// path below an ignored directory is ignored.
func (g *GitIgnore) Match(relPath string, isDir bool) bool {
	if g == nil || len(g.rules) == 0 {
		return false
	}
	p := strings.Trim(path.Clean("/"+strings.ReplaceAll(relPath, "\\", "/")), "/")
	if p == "" {
		return false
	}
	segs := strings.Split(p, "/")
	for i := 1; i < len(segs); i++ {
		if g.matchOne(segs[:i], true) {
			return true
		}
	}
	return g.matchOne(segs, isDir)
}

// matchOne applies the rules to one path, ignoring its parents; the last
// matching rule decides.
func (g *GitIgnore) matchOne(segs []string, isDir bool) bool {
	ignored := false
	for i := range g.rules {
		r := &g.rules[i]
		if r.dirOnly && !isDir {
			continue
		}
		rel := segs
		if len(r.base) > 0 {
			if len(segs) <= len(r.base) || !equalSegs(segs[:len(r.base)], r.base) {
				continue
			}
			rel = segs[len(r.base):]
		}
		var ok bool
		if r.anchored {
			ok = matchSegs(r.segs, rel)
		} else {
			ok = globMatch(r.segs[0], rel[len(rel)-1])
		}
		if ok {
			ignored = !r.negate
		}
	}
	return ignored
}

func equalSegs(a, b []string) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// matchSegs matches path segments against pattern segments, where "**"
// matches any number of segments (at least one when it ends the pattern).
func matchSegs(pat, segs []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			rest := pat[1:]
			if len(rest) == 0 {
				return len(segs) > 0
			}
			for k := 0; k <= len(segs); k++ {
				if matchSegs(rest, segs[k:]) {
					return true
				}
			}
			return false
		}
		if len(segs) == 0 || !globMatch(pat[0], segs[0]) {
			return false
		}
		pat, segs = pat[1:], segs[1:]
	}
	return len(segs) == 0
}

// globMatch matches one path segment against a glob; a malformed pattern
// matches nothing.
func globMatch(pattern, name string) bool {
	ok, err := path.Match(pattern, name)
	return ok && err == nil
}
