package powerfs

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// FS is one mounted power-loss filesystem.
type FS struct {
	server *fuse.Server
	root   *fs.LoopbackRoot
	mu     sync.Mutex
	dirty  map[*node]struct{}
}

// Mount mounts a power-loss filesystem over backing at mountpoint (both
// directories must exist; root or FUSE permissions needed).
func Mount(backing, mountpoint string) (*FS, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(backing, &st); err != nil {
		return nil, fmt.Errorf("powerfs backing %s: %w", backing, err)
	}
	p := &FS{dirty: map[*node]struct{}{}}
	p.root = &fs.LoopbackRoot{Path: backing, Dev: uint64(st.Dev), NewNode: func(r *fs.LoopbackRoot, _ *fs.Inode, _ string, _ *syscall.Stat_t) fs.InodeEmbedder {
		return &node{LoopbackNode: fs.LoopbackNode{RootData: r}, pfs: p}
	}}
	rootNode := p.root.NewNode(p.root, nil, "", &st)
	p.root.RootNode = rootNode
	zero := time.Duration(0)
	server, err := fs.Mount(mountpoint, rootNode, &fs.Options{
		AttrTimeout: &zero, EntryTimeout: &zero, NegativeTimeout: &zero,
		MountOptions: fuse.MountOptions{DirectMountStrict: true, FsName: "powerfs:" + backing, Name: "powerfs"},
	})
	if err != nil {
		return nil, fmt.Errorf("mount powerfs on %s: %w", mountpoint, err)
	}
	p.server = server
	return p, nil
}

// PowerLoss drops every write not yet fsynced and returns how many
// files lost data. Stop the processes using the filesystem first (as a
// power loss would).
func (p *FS) PowerLoss() int {
	p.mu.Lock()
	nodes := p.dirty
	p.dirty = map[*node]struct{}{}
	p.mu.Unlock()
	for n := range nodes {
		n.mu.Lock()
		n.data, n.lo, n.hi, n.resized = nil, 0, 0, false
		n.mu.Unlock()
	}
	return len(nodes)
}

// Unmount unmounts the filesystem (unsynced writes are dropped).
func (p *FS) Unmount() error {
	p.PowerLoss()
	return p.server.Unmount()
}

// node is a file or directory; a file written since its last fsync holds
// its whole content in data (nil: the backing file is the content).
type node struct {
	fs.LoopbackNode
	pfs     *FS
	mu      sync.Mutex
	data    []byte
	lo, hi  int64 // the written range since the last sync
	resized bool  // the size changed since the last sync
}

func (n *node) backingPath() string {
	return filepath.Join(n.RootData.Path, n.Path(nil))
}

// load makes data the file's content (n.mu held).
func (n *node) load() syscall.Errno {
	if n.data != nil {
		return 0
	}
	b, err := os.ReadFile(n.backingPath())
	if err != nil {
		return fs.ToErrno(err)
	}
	if b == nil {
		b = []byte{}
	}
	n.data, n.lo, n.hi = b, int64(len(b)), 0
	n.pfs.mu.Lock()
	n.pfs.dirty[n] = struct{}{}
	n.pfs.mu.Unlock()
	return 0
}

// resize sets the buffered size (n.mu held).
func (n *node) resize(size int64) syscall.Errno {
	if errno := n.load(); errno != 0 {
		return errno
	}
	if size <= int64(len(n.data)) {
		n.data = n.data[:size]
	} else {
		n.data = append(n.data, make([]byte, size-int64(len(n.data)))...)
	}
	n.resized = true
	return 0
}

// sync writes the buffered content to the backing file and fsyncs it
// (n.mu held).
func (n *node) sync(f *os.File) syscall.Errno {
	if n.data != nil {
		if n.hi > n.lo {
			if _, err := f.WriteAt(n.data[n.lo:n.hi], n.lo); err != nil {
				return fs.ToErrno(err)
			}
		}
		if err := f.Truncate(int64(len(n.data))); err != nil {
			return fs.ToErrno(err)
		}
		n.data, n.lo, n.hi, n.resized = nil, 0, 0, false
		n.pfs.mu.Lock()
		delete(n.pfs.dirty, n)
		n.pfs.mu.Unlock()
	}
	return fs.ToErrno(f.Sync())
}

var (
	_ fs.NodeOpener    = (*node)(nil)
	_ fs.NodeCreater   = (*node)(nil)
	_ fs.NodeGetattrer = (*node)(nil)
	_ fs.NodeSetattrer = (*node)(nil)
)

// Open opens the backing file; reads and writes go through the buffer.
func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	flags &^= syscall.O_APPEND | fuse.FMODE_EXEC | syscall.O_TRUNC
	f, err := os.OpenFile(n.backingPath(), int(flags)&^os.O_WRONLY|os.O_RDWR, 0)
	if err != nil {
		return nil, 0, fs.ToErrno(err)
	}
	return &handle{n: n, f: f, sync: flags&syscall.O_SYNC != 0 || flags&syscall.O_DSYNC != 0}, fuse.FOPEN_DIRECT_IO, 0
}

// Create creates the backing file (at once, like every directory
// change) and opens it.
func (n *node) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	ch, lf, _, errno := n.LoopbackNode.Create(ctx, name, flags&^syscall.O_TRUNC, mode, out)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	if r, ok := lf.(fs.FileReleaser); ok {
		r.Release(ctx)
	}
	child := ch.Operations().(*node)
	// The new inode is linked under n only once Create returns.
	f, err := os.OpenFile(filepath.Join(n.backingPath(), name), os.O_RDWR, 0)
	if err != nil {
		return nil, nil, 0, fs.ToErrno(err)
	}
	return ch, &handle{n: child, f: f, sync: flags&syscall.O_SYNC != 0 || flags&syscall.O_DSYNC != 0}, fuse.FOPEN_DIRECT_IO, 0
}

// Getattr reports the buffered size of a file written since its sync.
func (n *node) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	if errno := n.LoopbackNode.Getattr(ctx, nil, out); errno != 0 {
		return errno
	}
	n.mu.Lock()
	if n.data != nil {
		out.Size = uint64(len(n.data))
	}
	n.mu.Unlock()
	return 0
}

// Setattr buffers a size change; other attributes reach the backing file.
func (n *node) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if size, ok := in.GetSize(); ok {
		n.mu.Lock()
		errno := n.resize(int64(size))
		n.mu.Unlock()
		if errno != 0 {
			return errno
		}
		in.Valid &^= fuse.FATTR_SIZE
	}
	if errno := n.LoopbackNode.Setattr(ctx, nil, in, out); errno != 0 {
		return errno
	}
	return n.Getattr(ctx, nil, out)
}

// handle is an open file: its backing file and its node's buffer. A
// file opened with O_SYNC or O_DSYNC writes through (each write is
// synced before it returns).
type handle struct {
	n    *node
	f    *os.File
	sync bool
}

var (
	_ fs.FileReader   = (*handle)(nil)
	_ fs.FileWriter   = (*handle)(nil)
	_ fs.FileFsyncer  = (*handle)(nil)
	_ fs.FileFlusher  = (*handle)(nil)
	_ fs.FileReleaser = (*handle)(nil)
)

// Read reads the buffer if the file was written since its sync, else the
// backing file.
func (h *handle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	h.n.mu.Lock()
	defer h.n.mu.Unlock()
	if h.n.data != nil {
		if off >= int64(len(h.n.data)) {
			return fuse.ReadResultData(nil), 0
		}
		k := copy(dest, h.n.data[off:])
		return fuse.ReadResultData(dest[:k]), 0
	}
	k, err := h.f.ReadAt(dest, off)
	if err != nil && k == 0 && err.Error() != "EOF" {
		return nil, fs.ToErrno(err)
	}
	return fuse.ReadResultData(dest[:k]), 0
}

// Write writes into the buffer only.
func (h *handle) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	h.n.mu.Lock()
	defer h.n.mu.Unlock()
	if errno := h.n.load(); errno != 0 {
		return 0, errno
	}
	end := off + int64(len(data))
	if end > int64(len(h.n.data)) {
		h.n.data = append(h.n.data, make([]byte, end-int64(len(h.n.data)))...)
		h.n.resized = true
	}
	copy(h.n.data[off:], data)
	h.n.lo, h.n.hi = min(h.n.lo, off), max(h.n.hi, end)
	if h.sync {
		if errno := h.n.sync(h.f); errno != 0 {
			return 0, errno
		}
	}
	return uint32(len(data)), 0
}

// Fsync makes the file's buffered writes durable.
func (h *handle) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	h.n.mu.Lock()
	defer h.n.mu.Unlock()
	return h.n.sync(h.f)
}

// Flush (close) persists nothing: only fsync does.
func (h *handle) Flush(ctx context.Context) syscall.Errno { return 0 }

// Release closes the backing file.
func (h *handle) Release(ctx context.Context) syscall.Errno {
	return fs.ToErrno(h.f.Close())
}
