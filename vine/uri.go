package vine

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
)

// ResolveURI resolves the uri of a reference node to a file path. A relative
// uri resolves against baseDir (the directory of the parent file); an
// absolute path or a file:// URL is taken as is. The cleaned result must lie
// inside one of roots (the workspace roots the server was started with);
// other schemes, an empty uri, no roots, or an escape such as "../../etc"
// are errors of code CodeInvalid.
//
// The check is lexical: it does not touch the file system, so callers that
// must defend against symbolic links should resolve them (filepath.EvalSymlinks)
// and check the result again.
func ResolveURI(baseDir, uri string, roots []string) (string, error) {
	if strings.TrimSpace(uri) == "" {
		return "", errf(CodeInvalid, "empty vine uri")
	}
	if len(roots) == 0 {
		return "", errf(CodeInvalid, "cannot resolve %q: no workspace roots configured", uri)
	}
	p := uri
	if u, err := url.Parse(uri); err == nil && u.Scheme != "" && !isWindowsDrive(uri) {
		if u.Scheme != "file" {
			return "", errf(CodeInvalid, "cannot resolve %q: scheme %q is not supported (want a path or file:// url)", uri, u.Scheme)
		}
		if u.Host != "" && u.Host != "localhost" {
			return "", errf(CodeInvalid, "cannot resolve %q: remote host %q is not supported", uri, u.Host)
		}
		p = filepath.FromSlash(u.Path)
	}
	if !filepath.IsAbs(p) {
		base, err := filepath.Abs(baseDir)
		if err != nil {
			return "", &Error{Code: CodeInvalid, Msg: fmt.Sprintf("cannot resolve base directory %q", baseDir), Err: err}
		}
		p = filepath.Join(base, p)
	}
	p = filepath.Clean(p)
	for _, root := range roots {
		r, err := filepath.Abs(root)
		if err != nil {
			continue
		}
		if within(r, p) {
			return p, nil
		}
	}
	return "", errf(CodeInvalid, "vine uri %q resolves to %q, outside the workspace roots %s", uri, p, quoteList(roots))
}

// within reports whether path p is root or lies below it (both absolute and clean).
func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	if err != nil {
		return false
	}
	return rel == "." || rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// isWindowsDrive reports a uri like C:\x or C:/x, whose drive letter url.Parse
// would take for a scheme.
func isWindowsDrive(uri string) bool {
	return len(uri) >= 3 && uri[1] == ':' && (uri[2] == '\\' || uri[2] == '/') &&
		(uri[0] >= 'a' && uri[0] <= 'z' || uri[0] >= 'A' && uri[0] <= 'Z')
}
