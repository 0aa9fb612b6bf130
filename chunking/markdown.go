package chunking

import (
	"regexp"
	"slices"
	"strings"
)

// atxHeader matches an ATX header line: up to three spaces, one to six '#',
// then white space or the end of the line.
var atxHeader = regexp.MustCompile(`^ {0,3}(#{1,6})(?:[ \t]+(.*))?$`)

// fenceOpen matches the opening line of a fenced code block.
var fenceOpen = regexp.MustCompile("^ {0,3}(`{3,}|~{3,})")

// headerText returns the text of an ATX header line, without the opening
// and optional closing '#' sequences, and whether the line is a header.
func headerText(line string) (string, bool) {
	m := atxHeader.FindStringSubmatch(line)
	if m == nil {
		return "", false
	}
	t := strings.TrimSpace(m[2])
	// An optional closing sequence of '#' preceded by a space.
	if trimmed := strings.TrimRight(t, "#"); trimmed != t {
		if trimmed == "" {
			t = ""
		} else if strings.HasSuffix(trimmed, " ") || strings.HasSuffix(trimmed, "\t") {
			t = strings.TrimSpace(trimmed)
		}
	}
	return t, true
}

// chunkMarkdown cuts a Markdown file into sections, one per ATX header (the
// lines before the first header are a section named after the file; a file
// without headers is one section). Headers inside fenced code blocks do not
// count. Sections too large for one chunk are cut into line windows.
func chunkMarkdown(p string, src *source, base []string) []Chunk {
	type section struct {
		start int
		name  string
	}
	var secs []section
	fence := ""
	for i, line := range src.lines {
		if fence != "" {
			t := strings.TrimSpace(line)
			if strings.HasPrefix(t, fence) && strings.Trim(t, fence[:1]) == "" {
				fence = ""
			}
			continue
		}
		if m := fenceOpen.FindStringSubmatch(line); m != nil {
			// A backtick fence's info string may not contain backticks.
			if m[1][0] != '`' || !strings.Contains(line[len(m[0]):], "`") {
				fence = m[1]
				continue
			}
		}
		if t, ok := headerText(line); ok {
			secs = append(secs, section{start: i, name: t})
		}
	}
	if len(secs) == 0 || secs[0].start > 0 {
		secs = append([]section{{start: 0, name: fileName(p)}}, secs...)
	}
	var out []Chunk
	for k, sec := range secs {
		end := src.n() - 1
		if k+1 < len(secs) {
			end = secs[k+1].start - 1
		}
		a, b, ok := src.trim(sec.start, end)
		if !ok {
			continue
		}
		ws := src.softWindows(a, b)
		for _, w := range ws {
			s, e, ok := src.trim(w[0], w[1])
			if !ok {
				continue
			}
			tags := slices.Clone(base)
			if len(ws) > 1 {
				tags = append(tags, "partial")
			}
			out = append(out, Chunk{SourcePath: p, StartLine: s + 1, EndLine: e + 1, ChunkType: TypeSection,
				Name: sec.name, Language: LangMarkdown, Tags: normTags(tags), Content: src.text(s, e)})
		}
	}
	return out
}
