package chunking

import "strings"

// source indexes the lines of a file. Lines are numbered from 0 internally;
// chunks report them from 1.
type source struct {
	data  []byte
	lines []string // without "\n" or a trailing "\r"
	cum   []int    // cum[i] = bytes of lines[:i], each counted with one "\n"
}

func newSource(data []byte) *source {
	s := &source{data: data}
	text := string(data)
	text = strings.TrimSuffix(text, "\n")
	if len(data) == 0 {
		s.lines = nil
	} else {
		s.lines = strings.Split(text, "\n")
	}
	s.cum = make([]int, len(s.lines)+1)
	for i, l := range s.lines {
		l = strings.TrimSuffix(l, "\r")
		s.lines[i] = l
		s.cum[i+1] = s.cum[i] + len(l) + 1
	}
	return s
}

// n returns the number of lines.
func (s *source) n() int { return len(s.lines) }

// bytes returns the content size of lines a..b (inclusive).
func (s *source) bytes(a, b int) int {
	if a > b {
		return 0
	}
	return s.cum[b+1] - s.cum[a] - 1
}

// fits reports whether lines a..b fit in one chunk.
func (s *source) fits(a, b int) bool {
	return b-a+1 <= MaxChunkLines && s.bytes(a, b) <= MaxChunkBytes
}

// blank reports whether line i holds only white space.
func (s *source) blank(i int) bool {
	return strings.TrimSpace(s.lines[i]) == ""
}

// allBlank reports whether lines a..b are all blank.
func (s *source) allBlank(a, b int) bool {
	for i := a; i <= b; i++ {
		if !s.blank(i) {
			return false
		}
	}
	return true
}

// trim narrows a..b to exclude leading and trailing blank lines; ok is false
// when nothing but blank lines remains.
func (s *source) trim(a, b int) (int, int, bool) {
	for a <= b && s.blank(a) {
		a++
	}
	for b >= a && s.blank(b) {
		b--
	}
	return a, b, a <= b
}

// text returns lines a..b joined by "\n".
func (s *source) text(a, b int) string {
	return strings.Join(s.lines[a:b+1], "\n")
}

// windows splits lines a..b into consecutive windows that each fit the size
// limits (a single over-long line is a window of its own).
func (s *source) windows(a, b int) [][2]int {
	var out [][2]int
	for a <= b {
		e := a
		for e+1 <= b && s.fits(a, e+1) {
			e++
		}
		out = append(out, [2]int{a, e})
		a = e + 1
	}
	return out
}

// softWindows is like windows, but ends a window after a blank line when
// one lies in its second half, so that paragraphs stay together.
func (s *source) softWindows(a, b int) [][2]int {
	var out [][2]int
	for a <= b {
		e := a
		for e+1 <= b && s.fits(a, e+1) {
			e++
		}
		if e < b {
			for k := e; k > a+(e-a)/2; k-- {
				if s.blank(k) {
					e = k
					break
				}
			}
		}
		out = append(out, [2]int{a, e})
		a = e + 1
	}
	return out
}
