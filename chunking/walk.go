package chunking

import (
	"io/fs"
	"path"
	"slices"
	"strconv"
)

// FileResult is what [Rules.Walk] reports for one file, or for one
// excluded directory (whose Path then ends in "/"): its chunks, or why it
// was skipped.
type FileResult struct {
	Path   string
	Chunks []Chunk
	Skip   *Skip
}

// Walk chunks the repository held by fsys (for example os.DirFS(root)),
// calling fn for every file in lexical order, and once for every excluded
// directory, which is not entered. Excluded files are never opened;
// symbolic links and other non-regular files are skipped, as are files
// larger than r.MaxFileBytes and files whose content [Rules.SensitiveContent]
// rejects. Every .gitignore met is added to (a copy of) r.GitIgnore before
// the rest of its directory is considered. Walk stops at the first error fn
// returns and returns it; unreadable files and directories are reported as
// skipped.
func (r Rules) Walk(fsys fs.FS, fn func(FileResult) error) error {
	ign := &GitIgnore{}
	if r.GitIgnore != nil {
		ign.rules = slices.Clone(r.GitIgnore.rules)
	}
	r.GitIgnore = ign
	skip := func(p, reason string) error {
		return fn(FileResult{Path: p, Skip: &Skip{Path: p, Reason: reason}})
	}
	return fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == "." {
				return err
			}
			if d != nil && d.IsDir() {
				if e := skip(p+"/", "unreadable directory: "+err.Error()); e != nil {
					return e
				}
				return fs.SkipDir
			}
			return skip(p, "unreadable: "+err.Error())
		}
		if d.IsDir() {
			if p != "." {
				if ex, why := r.Excluded(p, true); ex {
					if e := skip(p+"/", why); e != nil {
						return e
					}
					return fs.SkipDir
				}
			}
			gi := path.Join(p, ".gitignore")
			if ex, _ := r.Excluded(gi, false); !ex {
				if data, err := fs.ReadFile(fsys, gi); err == nil {
					dir := p
					if dir == "." {
						dir = ""
					}
					ign.Add(dir, data)
				}
			}
			return nil
		}
		if ex, why := r.Excluded(p, false); ex {
			return skip(p, why)
		}
		if !d.Type().IsRegular() {
			return skip(p, "not a regular file")
		}
		if Language(p) == "" {
			return skip(p, "binary file type "+path.Ext(p))
		}
		if r.MaxFileBytes > 0 {
			info, err := d.Info()
			if err != nil {
				return skip(p, "unreadable: "+err.Error())
			}
			if info.Size() > r.MaxFileBytes {
				return skip(p, "file too large: "+strconv.FormatInt(info.Size(), 10)+" bytes")
			}
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return skip(p, "unreadable: "+err.Error())
		}
		if bad, why := r.SensitiveContent(p, data); bad {
			return skip(p, "sensitive content: "+why)
		}
		chunks, s, err := ChunkFile(p, data)
		if err != nil {
			return skip(p, err.Error())
		}
		return fn(FileResult{Path: p, Chunks: chunks, Skip: s})
	})
}
