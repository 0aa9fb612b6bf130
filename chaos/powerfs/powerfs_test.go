package powerfs

import (
	"os"
	"path/filepath"
	"testing"
)

func mount(t *testing.T) (*FS, string, string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount FUSE")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skipf("no /dev/fuse: %v", err)
	}
	backing, mnt := t.TempDir(), t.TempDir()
	p, err := Mount(backing, mnt)
	if err != nil {
		t.Skipf("cannot mount FUSE here: %v", err)
	}
	t.Cleanup(func() { _ = p.Unmount() })
	return p, backing, mnt
}

// TestPowerLossDropsUnsyncedWrites: what was fsynced survives a power
// loss; what was written after it (appended, overwritten, truncated) does
// not, while the file reads its unsynced content until then.
func TestPowerLossDropsUnsyncedWrites(t *testing.T) {
	p, backing, mnt := mount(t)
	path := filepath.Join(mnt, "dir", "a.blk")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("synced;")); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("lost")); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("S"), 0); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != "Synced;lost" {
		t.Errorf("before the power loss the file reads %q", got)
	}
	if st, _ := os.Stat(path); st.Size() != int64(len("Synced;lost")) {
		t.Errorf("size before the power loss: %d", st.Size())
	}
	if got, _ := os.ReadFile(filepath.Join(backing, "dir", "a.blk")); string(got) != "synced;" {
		t.Errorf("the backing file holds %q before any sync of the later writes", got)
	}
	f.Close() // closing persists nothing
	if n := p.PowerLoss(); n != 1 {
		t.Errorf("power loss dropped %d files' writes, want 1", n)
	}
	if got, _ := os.ReadFile(path); string(got) != "synced;" {
		t.Errorf("after the power loss the file reads %q, want the synced part", got)
	}
	// A truncate is lost too unless synced.
	if err := os.Truncate(path, 2); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != "sy" {
		t.Errorf("truncated file reads %q", got)
	}
	p.PowerLoss()
	if got, _ := os.ReadFile(path); string(got) != "synced;" {
		t.Errorf("after the power loss the truncated file reads %q", got)
	}
	// Renames reach the backing directory at once, with their content
	// still buffered until a sync.
	g, err := os.Create(filepath.Join(mnt, "tmp"))
	if err != nil {
		t.Fatal(err)
	}
	g.Write([]byte("meta"))
	g.Sync()
	g.Close()
	if err := os.Rename(filepath.Join(mnt, "tmp"), filepath.Join(mnt, "meta")); err != nil {
		t.Fatal(err)
	}
	p.PowerLoss()
	if got, _ := os.ReadFile(filepath.Join(mnt, "meta")); string(got) != "meta" {
		t.Errorf("a synced, renamed file reads %q", got)
	}
	// A file opened with O_SYNC writes through (as nats-server writes
	// its metadata files); one without loses its content.
	if err := os.WriteFile(filepath.Join(mnt, "plain"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	h, err := os.OpenFile(filepath.Join(mnt, "osync"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC|os.O_SYNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	h.Write([]byte("durable"))
	h.Close()
	p.PowerLoss()
	if got, _ := os.ReadFile(filepath.Join(mnt, "osync")); string(got) != "durable" {
		t.Errorf("an O_SYNC file reads %q after a power loss", got)
	}
	if got, _ := os.ReadFile(filepath.Join(mnt, "plain")); len(got) != 0 {
		t.Errorf("an unsynced new file reads %q after a power loss, want empty", got)
	}
}
