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
