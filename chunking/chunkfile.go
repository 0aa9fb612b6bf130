package chunking

import (
	"bytes"
	"errors"
	"path"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ChunkFile splits the content of the file at relPath (repository-relative,
// slash-separated) into chunks. It is pure: it reads no files and applies no
// exclusion rules (see [Rules] for those; callers should check
// [Rules.Excluded] before reading a file and [Rules.SensitiveContent] before
// chunking it).
//
// Code (Python, Go, JavaScript, TypeScript, TSX, Rust, Java) is parsed with
// tree-sitter: one chunk per function, method, class and type, and module
// chunks for the code between them. Markdown is cut into sections at ATX
// headers. Other text files are one chunk, or line windows when large.
//
// A binary file (a known binary extension, a NUL byte or invalid UTF-8) or
// an empty file yields no chunks and a Skip saying why. A code file that
// cannot be parsed falls back to line windows; ChunkFile never panics on
// any content. The error is non-nil only for an invalid relPath.
//
// Chunks come sorted by start line (an enclosing class before its
// methods), and the same input always yields the same chunks. ChunkFile is
// safe for concurrent use.
func ChunkFile(relPath string, content []byte) ([]Chunk, *Skip, error) {
	p, err := cleanPath(relPath)
	if err != nil {
		return nil, nil, err
	}
	lang := Language(p)
	if lang == "" {
		return nil, &Skip{Path: p, Reason: "binary file type " + strings.ToLower(path.Ext(p))}, nil
	}
	if reason := binaryReason(content); reason != "" {
		return nil, &Skip{Path: p, Reason: reason}, nil
	}
	if len(bytes.TrimSpace(content)) == 0 {
		return nil, &Skip{Path: p, Reason: "empty file"}, nil
	}
	src := newSource(content)
	base := []string{lang}
	if IsTestPath(p) {
		base = append(base, "test")
	}
	var chunks []Chunk
	switch {
	case isCode(lang):
		var ok bool
		chunks, ok = chunkCode(p, lang, content, src, base)
		if !ok {
			chunks = chunkWindows(p, lang, TypeFile, src, append(base, "fallback"))
		}
	case lang == LangMarkdown:
		chunks = chunkMarkdown(p, src, base)
	default:
		if ext := strings.TrimPrefix(strings.ToLower(path.Ext(p)), "."); ext != "" && ext != lang {
			base = append(base, ext)
		}
		chunks = chunkWindows(p, lang, TypeFile, src, base)
	}
	return finish(chunks), nil, nil
}

// splitLine cuts a chunk of one over-long line (minified or generated
// code) into pieces of at most MaxChunkBytes, each on that line, cut after
// a space, comma or semicolon where one is near the limit and always on a
// UTF-8 boundary.
func splitLine(c Chunk) []Chunk {
	var out []Chunk
	rest := c.Content
	for rest != "" {
		n := len(rest)
		if n > MaxChunkBytes {
			n = MaxChunkBytes
			if i := strings.LastIndexAny(rest[n-1024:n], " ,;"); i >= 0 {
				n = n - 1024 + i + 1
			}
			for n > 0 && !utf8.RuneStart(rest[n]) {
				n--
			}
			if n == 0 {
				n = MaxChunkBytes
			}
		}
		part := c
		part.Content = rest[:n]
		part.Tags = normTags(append(slices.Clone(c.Tags), "partial"))
		out = append(out, part)
		rest = rest[n:]
	}
	return out
}

// cleanPath normalises a repository-relative path, rejecting empty,
// absolute and escaping ones.
func cleanPath(p string) (string, error) {
	p = strings.ReplaceAll(p, "\\", "/")
	if p == "" {
		return "", errors.New("chunking: empty path")
	}
	if strings.HasPrefix(p, "/") || (len(p) >= 2 && p[1] == ':') {
		return "", errors.New("chunking: path must be repository-relative: " + strconv.Quote(p))
	}
	p = path.Clean(p)
	if p == "." || p == ".." || strings.HasPrefix(p, "../") {
		return "", errors.New("chunking: path must name a file inside the repository: " + strconv.Quote(p))
	}
	return p, nil
}

// binaryReason returns why content is not text, or "".
func binaryReason(content []byte) string {
	if i := bytes.IndexByte(content, 0); i >= 0 {
		return "binary content: NUL byte at offset " + strconv.Itoa(i)
	}
	if !utf8.Valid(content) {
		return "binary content: invalid UTF-8"
	}
	return ""
}

// fileName returns the base name of a slash-separated path.
func fileName(p string) string { return path.Base(p) }

// chunkWindows chunks a file as a whole, or in windows of lines (cut at
// blank lines where possible) when it is too large.
func chunkWindows(p, lang, kind string, src *source, tags []string) []Chunk {
	a, b, ok := src.trim(0, src.n()-1)
	if !ok {
		return nil
	}
	ws := src.softWindows(a, b)
	var out []Chunk
	for _, w := range ws {
		s, e, ok := src.trim(w[0], w[1])
		if !ok {
			continue
		}
		t := tags
		if len(ws) > 1 {
			t = append(slices.Clone(tags), "partial")
		}
		out = append(out, Chunk{SourcePath: p, StartLine: s + 1, EndLine: e + 1, ChunkType: kind,
			Name: fileName(p), Language: lang, Tags: normTags(slices.Clone(t)), Content: src.text(s, e)})
	}
	return out
}

// finish sorts chunks and fills in their hashes and ids. Chunks with the
// same name and content in one file get ids from "name#2", "name#3" ... in
// file order, so ids stay unique.
func finish(chunks []Chunk) []Chunk {
	var out []Chunk
	for _, c := range chunks {
		if len(c.Content) > MaxChunkBytes && c.StartLine == c.EndLine {
			out = append(out, splitLine(c)...)
		} else {
			out = append(out, c)
		}
	}
	chunks = out
	slices.SortStableFunc(chunks, func(x, y Chunk) int {
		if x.StartLine != y.StartLine {
			return x.StartLine - y.StartLine
		}
		if x.EndLine != y.EndLine {
			return y.EndLine - x.EndLine
		}
		return strings.Compare(x.Name, y.Name)
	})
	seen := map[string]int{}
	for i := range chunks {
		ch := &chunks[i]
		ch.ContentHash = ContentHash(ch.Content)
		key := ch.Name + "\x00" + ch.ContentHash
		seen[key]++
		q := ch.Name
		if n := seen[key]; n > 1 {
			q += "#" + strconv.Itoa(n)
		}
		ch.ChunkID = ChunkID(ch.SourcePath, q, ch.Content)
		if ch.Tags == nil {
			ch.Tags = []string{}
		}
	}
	return chunks
}
