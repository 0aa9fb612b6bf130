package server

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/trellis/trellis"
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
		return nil, lockedError(dir, strings.TrimSpace(string(pid)))
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return &dirLock{f: f}, nil
}

// lockedError is the unavailable error of a held data directory: it names
// the holder's pid (from the lock file) and, when the holder is a server
// that recorded itself in serve.json, where it listens.
func lockedError(dir, pid string) error {
	if pid == "" {
		pid = "unknown (it has not written its pid yet)"
	}
	holder := "pid " + pid
	if info, err := ReadInfo(dir); err == nil && info != nil && strconv.Itoa(info.PID) == pid {
		holder += fmt.Sprintf(", a trellis server started %s listening on %s", info.StartedAt.Format(time.RFC3339), info.NATSURL)
		if info.HTTPURL != "" {
			holder += " and " + info.HTTPURL
		}
	}
	return &trellis.Error{Code: trellis.CodeUnavailable, Err: ErrLocked,
		Message: fmt.Sprintf("data directory %s is locked by another process: %s", dir, holder)}
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
