package vinegraph

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestSettledStampRefusesRacyFile: a file whose change time is not later
// than its modification time (written in the tick it was last stamped, or
// given a modification time ahead) is not trusted by its stamp; one changed
// (ctime) after its last write is, and its trust names its stamp.
func TestSettledStampRefusesRacyFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "g.vine")
	if err := os.WriteFile(p, []byte("text"), 0o644); err != nil {
		t.Fatal(err)
	}
	ahead := time.Now().Add(time.Hour)
	if err := os.Chtimes(p, ahead, ahead); err != nil {
		t.Fatal(err)
	}
	if tr, ok := settledStamp(p); ok {
		t.Fatalf("mtime ahead of ctime trusted: %+v", tr)
	}
	past := time.Now().Add(-time.Hour)
	if err := os.Chtimes(p, past, past); err != nil {
		t.Fatal(err)
	}
	tr, ok := settledStamp(p)
	if !ok || tr.stamp != stampOf(p) || tr.ctime <= tr.stamp.mtime {
		t.Fatalf("settled file not trusted: %+v %v", tr, ok)
	}
	if _, ok := settledStamp(filepath.Join(t.TempDir(), "missing.vine")); ok {
		t.Fatal("missing file trusted")
	}
}

// TestSettledByRefusesAnEditAfterThePlacing: the writer records its trust
// after the directory sync that follows the swap. An edit of the same size
// made in between, with the file's mtime set back to the written one (an
// in-place write, then touch -r or cp -p), keeps the stamp and leaves the
// ctime past the mtime: settledStamp alone would trust it, and the next
// claim would skip reading the file and overwrite the edit. settledBy
// refuses a ctime other than the one read right after the swap.
func TestSettledByRefusesAnEditAfterThePlacing(t *testing.T) {
	// Placed as the writer places it: written aside, then renamed in (the
	// rename moves the ctime past the mtime).
	dir := t.TempDir()
	p, tmp := filepath.Join(dir, "g.vine"), filepath.Join(dir, ".g.vine.tmp")
	if err := os.WriteFile(tmp, []byte("text"), 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(30 * time.Millisecond) // past the kernel's coarse clock tick
	if err := os.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
	written := stampOf(p)
	placed := ctimeOf(p)
	if tr, ok := settledBy(p, placed); !ok || tr.stamp != written {
		t.Fatalf("a file not changed since it was placed is not trusted: %+v %v", tr, ok)
	}
	// The edit comes after the placing, past the kernel's coarse clock
	// tick (its ctime must differ for the test to show anything: checked
	// below).
	time.Sleep(30 * time.Millisecond)
	if err := os.WriteFile(p, []byte("edit"), 0o644); err != nil {
		t.Fatal(err)
	}
	mtime := time.Unix(0, written.mtime)
	if err := os.Chtimes(p, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	if stampOf(p) != written {
		t.Fatalf("the edit changed the stamp (%+v against %+v): the test shows nothing", stampOf(p), written)
	}
	if tr, ok := settledStamp(p); !ok || tr.ctime == placed {
		t.Fatalf("settledStamp does not trust the edited file, or its ctime did not move (%+v, %v): the test shows nothing", tr, ok)
	}
	if tr, ok := settledBy(p, placed); ok {
		t.Fatalf("an edit after the placing is trusted: %+v", tr)
	}
}
