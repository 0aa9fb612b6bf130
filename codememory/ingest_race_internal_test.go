package codememory

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/trellis/trellis/chunking"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
)

// indexedChunks folds a repository's file events the way the search
// projection does (added and removed chunk ids), so orphans show.
func indexedChunks(t *testing.T, store *events.Store, repo string) []string {
	t.Helper()
	set := map[string]bool{}
	err := store.Read(context.Background(), events.StreamChunks, "trellis.chunks."+repo+".>", 0, func(r events.Recorded) error {
		switch r.Type {
		case events.FileIndexed:
			var p events.FileIndexedPayload
			if err := r.DecodePayload(&p); err != nil {
				return err
			}
			for _, c := range p.Added {
				set[c.ChunkID] = true
			}
			for _, id := range p.Removed {
				delete(set, id)
			}
		case events.FileDeleted:
			var p events.FileDeletedPayload
			if err := r.DecodePayload(&p); err != nil {
				return err
			}
			for _, id := range p.ChunkIDs {
				delete(set, id)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for id := range set {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// An ingest that read a file's state before another ingest changed the
// file decides again against the newer state instead of appending its
// stale difference (which left the other ingest's chunks orphaned in the
// index: never removed, never listed).
func TestIngestDecidesAgainstTheStateItExpects(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	ctx := context.Background()
	root := t.TempDir()
	file := filepath.Join(root, "m.py")
	write := func(body string) {
		t.Helper()
		if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		// Distinct mtimes even on coarse clocks.
		now := time.Now().Add(time.Duration(len(body)) * time.Millisecond)
		if err := os.Chtimes(file, now, now); err != nil {
			t.Fatal(err)
		}
	}
	cfg := IngestConfig{Root: root, Repo: "race"}
	write("def one():\n    return 1\n\n\ndef shared():\n    return 0\n")
	if _, err := Ingest(ctx, b.Store, cfg); err != nil {
		t.Fatal(err)
	}
	// Ingest A reads the state now ...
	var stale events.FileState
	if err := b.Store.LastHeadersPerSubject(ctx, events.StreamChunks, events.RepoStateSubjects("race"), func(h events.HeaderRecord) error {
		st, err := events.FileStateFromHeaders(h)
		stale = st
		return err
	}); err != nil {
		t.Fatal(err)
	}
	// ... ingest B changes the file and records it ...
	write("def two():\n    return 2\n\n\ndef shared():\n    return 0\n")
	if _, err := Ingest(ctx, b.Store, cfg); err != nil {
		t.Fatal(err)
	}
	// ... and A records a third version from its stale state.
	write("def three():\n    return 3\n\n\ndef shared():\n    return 0\n")
	info, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	r := chunking.DefaultRules()
	cfg.Rules, cfg.MaxFileBytes = &r, 1<<20
	if _, err := ingestFile(ctx, b.Store, cfg, walkedFile{abs: file, rel: "m.py", info: info}, stale); err != nil {
		t.Fatalf("ingest from a stale state: %v", err)
	}
	content, _ := os.ReadFile(file)
	chunks, _, err := chunking.ChunkFile("m.py", content)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, c := range chunks {
		want = append(want, c.ChunkID)
	}
	sort.Strings(want)
	if got := indexedChunks(t, b.Store, "race"); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("indexed chunks %v; want exactly the file's current %v (no orphans)", got, want)
	}
}
