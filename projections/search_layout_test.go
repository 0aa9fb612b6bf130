package projections

import (
	"testing"

	"github.com/blevesearch/bleve/v2"
)

// TestSearchRebuildsOldLayout: an index built by an older layout (no
// mapping version) is dropped on open, so the runner replays the log into
// the current layout instead of searching stale fields and scoring.
func TestSearchRebuildsOldLayout(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := NewSearch(dir)
	old, err := bleve.New(s.indexPath(), bleve.NewIndexMapping())
	if err != nil {
		t.Fatal(err)
	}
	if err := old.SetInternal([]byte(lastSeqKey), []byte("42")); err != nil {
		t.Fatal(err)
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	seq, err := s.Load()
	if err != nil || seq != 0 {
		t.Fatalf("load of an old layout = %d, %v; want 0 (rebuild)", seq, err)
	}
	if err := s.Save(7); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	again := NewSearch(dir)
	if seq, err := again.Load(); err != nil || seq != 7 {
		t.Fatalf("load of the current layout = %d, %v; want 7", seq, err)
	}
	_ = again.Close()
}
