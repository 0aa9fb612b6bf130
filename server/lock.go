package server

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// ErrLocked reports a data directory held by another process.
var ErrLocked = errors.New("data directory is locked by another process")

// dirLock is an exclusive advisory lock on <data>/trellis.lock.
type dirLock struct{ f *os.File }

// lockDataDir takes the data directory's lock without waiting.
func lockDataDir(dir string) (*dirLock, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create data dir %s: %w", dir, err)
	}
	path := filepath.Join(dir, "trellis.lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		pid, _ := os.ReadFile(path)
		_ = f.Close()
		holder := strings.TrimSpace(string(pid))
		if holder == "" {
			holder = "unknown"
		}
		return nil, fmt.Errorf("%w: %s (held by pid %s)", ErrLocked, dir, holder)
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return &dirLock{f: f}, nil
}

func (l *dirLock) release() {
	if l == nil || l.f == nil {
		return
	}
	_ = l.f.Truncate(0)
	_ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	_ = l.f.Close()
	l.f = nil
}
