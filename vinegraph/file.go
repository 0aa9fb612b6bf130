package vinegraph

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/trellis/trellis/projections"
)

// fileRead is what a command read of a .vine file: whether it existed,
// and the identity of the file read (inode, size, modification time),
// taken before and after reading it. A rewrite happens only if the file
// still is exactly that one (compare and swap).
type fileRead struct {
	exists bool
	hash   string
	stamp  fileStamp
}

// fileStamp identifies a version of a file: an editor's save (a new file
// renamed over it, or a rewrite in place) changes it.
type fileStamp struct {
	ino, size uint64
	mtime     int64
}

// stampOf returns the stamp of path, or the zero stamp (matching nothing
// read) when it cannot be taken.
func stampOf(path string) fileStamp {
	info, err := os.Lstat(path)
	if err != nil {
		return fileStamp{}
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return fileStamp{}
	}
	return fileStamp{ino: st.Ino, size: uint64(info.Size()), mtime: info.ModTime().UnixNano()}
}

// fileTrust is a stamp of a file this process wrote, with the file's
// change time (ctime), taken once the file was in place: a later command
// that finds the file with this very stamp and change time takes it for
// the text written without reading it. Taken only when the ctime is later
// than the mtime (settledStamp), i.e. the file system's clock had moved
// past the tick of the last write when the file was put in place: any
// later write in place then gets an mtime of that later tick or after, so
// an edit of the same size in the same tick as the write (the racily
// clean case) cannot keep the stamp. Any change of content, mode or
// times also moves the ctime, which must be equal too.
type fileTrust struct {
	stamp fileStamp
	ctime int64
}

// settledStamp returns the stamp and trust of path when its ctime is
// later than its mtime, else the zero trust (ok false).
//
// The writer takes it after the directory sync that follows the swap; an
// edit made between the swap and then would be trusted with its own ctime,
// so the writer asks settledBy: the ctime must still be the one read
// right after the swap.
func settledStamp(path string) (fileTrust, bool) {
	info, err := os.Lstat(path)
	if err != nil {
		return fileTrust{}, false
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return fileTrust{}, false
	}
	t := fileTrust{stamp: fileStamp{ino: st.Ino, size: uint64(info.Size()), mtime: info.ModTime().UnixNano()}, ctime: st.Ctim.Nano()}
	if t.ctime <= t.stamp.mtime {
		return fileTrust{}, false
	}
	return t, true
}

// settledBy is settledStamp for a file this process put in place, whose
// ctime right after the swap was placed: a ctime that moved since is
// someone else's change, not trusted. (Compared with the file's own ctime,
// not the process's clock: the kernel stamps with a coarser clock that
// may lag it by several milliseconds.)
func settledBy(path string, placed int64) (fileTrust, bool) {
	t, ok := settledStamp(path)
	if !ok || placed == 0 || t.ctime != placed {
		return fileTrust{}, false
	}
	return t, true
}

// ctimeOf returns path's change time in Unix nanoseconds (0 when it cannot
// be read).
func ctimeOf(path string) int64 {
	info, err := os.Lstat(path)
	if err != nil {
		return 0
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return 0
	}
	return st.Ctim.Nano()
}

// errFileChanged reports a rewrite skipped because the file changed since
// it was read (a person saved it meanwhile): the next command merges it.
var errFileChanged = errors.New("the file changed since it was read")

// writeFileCAS replaces path with data only if path still holds what was
// read (want). The new file keeps the old one's mode and owner (0644 for a
// new file), is synced, and the directory is synced after the rename.
// The swap is an atomic exchange (renameat2 RENAME_EXCHANGE): what it
// displaced is checked, and if someone saved the file between the check
// and the exchange, their content is swapped back and errFileChanged
// returned, so a concurrent save is never lost. It returns the stamp of
// the file it wrote, taken before the file was put in place (a save right
// after the swap is not taken for this write), and the file's ctime read
// right after it was put in place (see settledBy; a new file's is moved
// again when its temporary name is removed, so it is never trusted).
func writeFileCAS(path string, data []byte, want fileRead) (fileStamp, int64, error) {
	dir := filepath.Dir(path)
	now := stampOf(path)
	if want.exists && (want.stamp == fileStamp{} || now != want.stamp) || !want.exists && now != (fileStamp{}) {
		return fileStamp{}, 0, errFileChanged
	}
	mode, uid, gid := os.FileMode(0o644), -1, -1
	if info, err := os.Stat(path); err == nil {
		mode = info.Mode().Perm()
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			uid, gid = int(st.Uid), int(st.Gid)
		}
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return fileStamp{}, 0, fmt.Errorf("write %s: %w", path, err)
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return fileStamp{}, 0, fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Chmod(mode); err != nil {
		_ = tmp.Close()
		return fileStamp{}, 0, fmt.Errorf("chmod %s: %w", path, err)
	}
	if uid >= 0 && (uid != os.Getuid() || gid != os.Getgid()) {
		_ = tmp.Chown(uid, gid) // best effort: only root may give a file away
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return fileStamp{}, 0, fmt.Errorf("sync %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fileStamp{}, 0, fmt.Errorf("close %s: %w", path, err)
	}
	written := stampOf(tmp.Name())
	if !want.exists {
		// Nothing to displace: link fails if someone created it meanwhile.
		if err := os.Link(tmp.Name(), path); err != nil {
			if errors.Is(err, os.ErrExist) {
				return fileStamp{}, 0, errFileChanged
			}
			return fileStamp{}, 0, fmt.Errorf("create %s: %w", path, err)
		}
		placed := ctimeOf(path)
		return written, placed, projections.SyncDir(dir)
	}
	if err := unix.Renameat2(unix.AT_FDCWD, tmp.Name(), unix.AT_FDCWD, path, unix.RENAME_EXCHANGE); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return fileStamp{}, 0, errFileChanged // removed since the check
		}
		if !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOSYS) {
			return fileStamp{}, 0, fmt.Errorf("replace %s: %w", path, err)
		}
		// A file system without exchange: a plain rename (the window
		// between the check above and here stays open).
		if err := os.Rename(tmp.Name(), path); err != nil {
			return fileStamp{}, 0, fmt.Errorf("rename %s: %w", path, err)
		}
		placed := ctimeOf(path)
		return written, placed, projections.SyncDir(dir)
	}
	placed := ctimeOf(path)
	if stampOf(tmp.Name()) != want.stamp {
		// Saved by someone between the check and the exchange: put their
		// content back; the next command merges it.
		if err := unix.Renameat2(unix.AT_FDCWD, tmp.Name(), unix.AT_FDCWD, path, unix.RENAME_EXCHANGE); err != nil {
			return fileStamp{}, 0, fmt.Errorf("restore %s: %w", path, err)
		}
		_ = projections.SyncDir(dir)
		return fileStamp{}, 0, errFileChanged
	}
	return written, placed, projections.SyncDir(dir)
}

// fileMemory remembers, per graph, the text this process last wrote to
// its file (the base of a three-way merge of a hand edit) with its hash
// and the file's stamp after that write, the hash of a text being written
// now (its rename may land while a command reads the file), the hashes of
// the last texts it wrote (a command that read the file while the writer
// replaced it twice holds one of them: a state of the log, not a hand
// edit), and the hash of the last hand-edited text merged (judged once).
type fileMemory struct {
	mu sync.Mutex
	m  map[string]fileMem
}

type fileMem struct {
	written     string
	writtenHash string
	stamp       fileStamp
	writing     string
	writingText string
	recent      []string
	judged      string
	trust       fileTrust // set when the file written (stamp) was found settled (see fileTrust)
}

// recentWrites bounds fileMem.recent.
const recentWrites = 16

// knows reports whether a file text of hash h is one this process wrote,
// is writing, or has merged already.
func (m fileMem) knows(h string) bool {
	return h != "" && (h == m.writtenHash || h == m.writing || h == m.judged || slices.Contains(m.recent, h))
}

func newFileMemory() *fileMemory { return &fileMemory{m: map[string]fileMem{}} }

func (f *fileMemory) get(graphID string) fileMem {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.m[graphID]
}

func (f *fileMemory) update(graphID string, fn func(*fileMem)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.m[graphID]; !ok && len(f.m) >= maxFileMemory {
		for k := range f.m { // bounded: forget any one
			delete(f.m, k)
			break
		}
	}
	m := f.m[graphID]
	fn(&m)
	f.m[graphID] = m
}

// wrote records text (of hash h) as the base of the next merge; stamp is
// the file's stamp when this process wrote it (zero when it only read it).
// A text that is a state of the log (written from it, or imported) is
// remembered among the recent ones; a merged hand edit is not.
func (f *fileMemory) wrote(graphID, text, h string, stamp fileStamp, logState bool) {
	f.update(graphID, func(m *fileMem) {
		m.written, m.writtenHash, m.stamp = text, h, stamp
		m.trust = fileTrust{}
		if !logState {
			return
		}
		m.recent = append(m.recent, h)
		if len(m.recent) > recentWrites {
			m.recent = slices.Delete(m.recent, 0, len(m.recent)-recentWrites)
		}
	})
}

// settled records trust (see fileTrust) of the file written with text of
// hash h and stamp, if that still is what the memory holds.
func (f *fileMemory) settled(graphID, h string, stamp fileStamp, trust fileTrust) {
	f.update(graphID, func(m *fileMem) {
		if m.writtenHash == h && m.stamp == stamp && trust.stamp == stamp {
			m.trust = trust
		}
	})
}

func (f *fileMemory) judged(graphID, hash string) {
	f.update(graphID, func(m *fileMem) { m.judged = hash })
}

// maxFileMemory bounds the graphs fileMemory keeps.
const maxFileMemory = 1024
