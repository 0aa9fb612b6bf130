package codememory_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/codememory"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/internal/servicetest"
)

const pyLib = `"""Text helpers."""
import textwrap


class TextWrapper:
    """Wraps paragraphs."""

    def wrap(self, text):
        """Split text into lines of at most width characters."""
        return textwrap.wrap(text)


def count_words(text):
    """Count the words in a text."""
    return len(text.split())
`

// TestIngestIncrementalAndSearch: ingest, search with citations, edit /
// add / delete / rename files and re-ingest: only differences become
// events; unchanged files cost nothing; replay rebuilds equal results.
func TestIngestIncrementalAndSearch(t *testing.T) {
	t.Parallel()
	svc, b := servicetest.Start(t)
	ctx := context.Background()
	root := t.TempDir()
	servicetest.WriteFiles(t, root, map[string]string{
		"lib/text.py":   pyLib,
		"docs/guide.md": "# Guide\n\nHow to wrap text.\n\n## Counting\n\nUse count_words to count words.\n",
		"notes.txt":     "plain notes about tokens\n",
		".env":          "SECRET=1\n",
		"keys/id_rsa":   "-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n-----END OPENSSH PRIVATE KEY-----\n",
		"bin.dat":       "\x00\x01\x02binary",
	})
	sum, err := codememory.Ingest(ctx, b.Store, codememory.IngestConfig{Root: root, Repo: "demo"})
	if err != nil {
		t.Fatal(err)
	}
	if sum.FilesNew != 3 || sum.ChunksAdded == 0 {
		t.Fatalf("first ingest = %+v", sum)
	}
	for _, sk := range sum.Skipped {
		if strings.Contains(sk.Path, ".env") {
			t.Fatalf(".env was read: %+v", sk)
		}
	}
	res, err := svc.Search(ctx, trellis.SearchRequest{Query: "split text into lines", Repo: "demo"})
	if err != nil {
		t.Fatal(err)
	}
	if res.NotFound || res.Results[0].Name != "TextWrapper.wrap" || res.Results[0].SourcePath != "lib/text.py" || !strings.HasPrefix(res.Results[0].ChunkID, "chunk_") {
		t.Fatalf("search = %+v", res)
	}
	wrapID := res.Results[0].ChunkID
	// Re-ingest with nothing changed: no events.
	again, err := codememory.Ingest(ctx, b.Store, codememory.IngestConfig{Root: root, Repo: "demo"})
	if err != nil || again.Events != 0 || again.Unchanged != 3 {
		t.Fatalf("unchanged re-ingest = %+v, %v", again, err)
	}
	// Edit (line shift above wrap keeps its id), add, delete, rename.
	time.Sleep(10 * time.Millisecond)
	servicetest.WriteFiles(t, root, map[string]string{
		"lib/text.py": strings.Replace(pyLib, "import textwrap\n", "import textwrap\nimport re\n", 1) + "\n\ndef shout(text):\n    return text.upper()\n",
		"lib/new.go":  "package lib\n\n// Reader reads.\ntype Reader struct{}\n\n// Read reads bytes.\nfunc (r *Reader) Read(p []byte) (int, error) { return 0, nil }\n",
	})
	os.Remove(filepath.Join(root, "notes.txt"))
	os.Rename(filepath.Join(root, "docs/guide.md"), filepath.Join(root, "docs/manual.md"))
	third, err := codememory.Ingest(ctx, b.Store, codememory.IngestConfig{Root: root, Repo: "demo"})
	if err != nil {
		t.Fatal(err)
	}
	if third.FilesChanged != 1 || third.FilesNew != 2 || third.FilesDeleted != 2 {
		t.Fatalf("incremental ingest = %+v", third)
	}
	res, _ = svc.Search(ctx, trellis.SearchRequest{Query: "split text into lines", Repo: "demo"})
	if res.Results[0].ChunkID != wrapID {
		t.Fatalf("unchanged method's chunk id moved: %s -> %s", wrapID, res.Results[0].ChunkID)
	}
	res, _ = svc.Search(ctx, trellis.SearchRequest{Query: "reads bytes", Repo: "demo", FileType: ".go"})
	if res.NotFound || res.Results[0].Name != "Reader.Read" {
		t.Fatalf("go search = %+v", res)
	}
	if res, _ = svc.Search(ctx, trellis.SearchRequest{Query: "plain notes about tokens", Repo: "demo"}); !res.NotFound && res.Results[0].SourcePath == "notes.txt" {
		t.Fatalf("deleted file still found: %+v", res)
	}
	// Filters and not-found suggestions.
	if res, _ = svc.Search(ctx, trellis.SearchRequest{Query: "count words", PathPrefix: "docs"}); res.NotFound || !strings.HasPrefix(res.Results[0].SourcePath, "docs/") {
		t.Fatalf("path prefix = %+v", res)
	}
	if res, _ = svc.Search(ctx, trellis.SearchRequest{Query: "count words", ChunkType: "function"}); res.NotFound || res.Results[0].Name != "count_words" {
		t.Fatalf("chunk type = %+v", res)
	}
	res, _ = svc.Search(ctx, trellis.SearchRequest{Query: "wrapx paragrafs"})
	if !res.NotFound || len(res.Suggestions) == 0 {
		t.Fatalf("not found = %+v", res)
	}
	full, err := svc.Chunk(ctx, wrapID)
	if err != nil || !strings.Contains(full.Content, "def wrap") {
		t.Fatalf("chunk show = %+v, %v", full, err)
	}
	// Replay rebuilds the index from the events: same answers.
	before, _ := svc.Search(ctx, trellis.SearchRequest{Query: "text", TopK: 20})
	if _, err := svc.Replay(ctx); err != nil {
		t.Fatal(err)
	}
	after, _ := svc.Search(ctx, trellis.SearchRequest{Query: "text", TopK: 20})
	if len(before.Results) != len(after.Results) {
		t.Fatalf("replay: %d results, then %d", len(before.Results), len(after.Results))
	}
	for i := range before.Results {
		if before.Results[i].ChunkID != after.Results[i].ChunkID {
			t.Fatalf("replay changed result %d", i)
		}
	}
	// Bad input.
	if _, err := codememory.Ingest(ctx, b.Store, codememory.IngestConfig{Root: filepath.Join(root, "missing")}); trellis.ErrorCode(err) != trellis.CodeInvalid {
		t.Fatalf("missing path: %v", err)
	}
	if _, err := svc.Chunk(ctx, "nope"); trellis.ErrorCode(err) != trellis.CodeInvalid {
		t.Fatalf("bad chunk id: %v", err)
	}
	if _, err := svc.Chunk(ctx, "chunk_0000000000000000"); trellis.ErrorCode(err) != trellis.CodeNotFound {
		t.Fatalf("unknown chunk id: %v", err)
	}
	if _, err := svc.Search(ctx, trellis.SearchRequest{Query: "x", TopK: 1000}); trellis.ErrorCode(err) != trellis.CodeInvalid {
		t.Fatalf("top-k 1000: %v", err)
	}
}

// TestIngestBadFiles: unreadable files, symlink loops, huge files and
// invalid UTF-8 are reported and the ingest goes on with the rest.
func TestIngestBadFiles(t *testing.T) {
	t.Parallel()
	_, b := servicetest.Start(t)
	ctx := context.Background()
	root := t.TempDir()
	servicetest.WriteFiles(t, root, map[string]string{
		"ok.py":      "def ok():\n    return 1\n",
		"latin1.txt": "caf\xe9 au lait\n",
		"big.txt":    strings.Repeat("x", 2<<20),
	})
	os.Symlink(root, filepath.Join(root, "loop"))
	os.WriteFile(filepath.Join(root, "locked.py"), []byte("def x(): pass\n"), 0o000)
	sum, err := codememory.Ingest(ctx, b.Store, codememory.IngestConfig{Root: root, Repo: "bad"})
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]string{}
	for _, s := range sum.Skipped {
		reasons[s.Path] = s.Reason
	}
	if !strings.Contains(reasons["big.txt"], "too large") || !strings.Contains(reasons["loop"], "link") || reasons["latin1.txt"] == "" {
		t.Fatalf("skipped = %+v", sum.Skipped)
	}
	if os.Geteuid() != 0 && reasons["locked.py"] == "" {
		t.Fatalf("unreadable file not reported: %+v", sum.Skipped)
	}
	if sum.FilesNew < 1 {
		t.Fatalf("the readable file was not ingested: %+v", sum)
	}
}

// TestIngestLargeFileOneEvent: a file whose chunks do not fit one message
// is still one file_indexed event (its payload stored apart), so it can
// never be half recorded, and every chunk is searchable.
func TestIngestLargeFileOneEvent(t *testing.T) {
	t.Parallel()
	svc, b := servicetest.Start(t)
	ctx := context.Background()
	root := t.TempDir()
	var src strings.Builder
	for i := 0; i < 2500; i++ {
		fmt.Fprintf(&src, "def handler_%04d(request):\n    \"\"\"Handle request number %d of the big module.\"\"\"\n    value = request.get(%q)\n    return value * %d + len(request)\n\n\n", i, i, fmt.Sprint("key", i), i)
	}
	servicetest.WriteFiles(t, root, map[string]string{"big.py": src.String()})
	sum, err := codememory.Ingest(ctx, b.Store, codememory.IngestConfig{Root: root, Repo: "big"})
	if err != nil {
		t.Fatal(err)
	}
	if sum.FilesNew != 1 || sum.Events != 1 || sum.ChunksAdded < 100 {
		t.Fatalf("large file ingest = %+v", sum)
	}
	recs, _, err := b.Store.Load(ctx, events.StreamChunks, events.FileFilter("big", "big.py"))
	if err != nil || len(recs) != 1 || recs[0].Type != events.FileIndexed || recs[0].PayloadRef == nil {
		t.Fatalf("file events: %d, %v; want one file_indexed whose payload is stored apart", len(recs), err)
	}
	res, err := svc.Search(ctx, trellis.SearchRequest{Query: "handler_1234", Repo: "big"})
	if err != nil || res.NotFound || res.Results[0].Name != "handler_1234" {
		t.Fatalf("search in the large file = %+v, %v", res, err)
	}
}

// TestSearchIgnoresPartsWithoutTheirCommit: older ingests wrote a large
// file's chunks ahead as chunks_added parts, then its file_indexed commit.
// A part whose commit never came (a crash between) is not searchable; the
// parts a commit names are.
func TestSearchIgnoresPartsWithoutTheirCommit(t *testing.T) {
	t.Parallel()
	svc, b := servicetest.Start(t)
	ctx := context.Background()
	chunk := func(id, name, path string) events.ChunkRecord {
		return events.ChunkRecord{ChunkID: id, Repo: "old", SourcePath: path, StartLine: 1, EndLine: 2, ChunkType: "function",
			Name: name, Language: "python", Tags: []string{}, Content: "def " + name + "():\n    return 1\n"}
	}
	appendEvent := func(path, typ string, payload any) {
		t.Helper()
		e, err := events.NewEnvelope(time.Now(), typ, path, "ingest", events.ChunksSchema, payload)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.Store.Append(ctx, events.ChunkSubject("old", path, typ), e, events.Expect{None: true}, ""); err != nil {
			t.Fatal(err)
		}
	}
	appendEvent("crashed.py", events.ChunksAdded, events.ChunksAddedPayload{Path: "crashed.py", Part: 1, Parts: 2,
		Chunks: []events.ChunkRecord{chunk("chunk_00000000000000aa", "orphaned_part", "crashed.py")}})
	appendEvent("whole.py", events.ChunksAdded, events.ChunksAddedPayload{Path: "whole.py", Part: 1, Parts: 2,
		Chunks: []events.ChunkRecord{chunk("chunk_00000000000000bb", "committed_part", "whole.py")}})
	appendEvent("whole.py", events.FileIndexed, events.FileIndexedPayload{Path: "whole.py", ContentHash: "h", Language: "python",
		ChunkIDs: []string{"chunk_00000000000000bb"}})
	if res, err := svc.Search(ctx, trellis.SearchRequest{Query: "committed_part", Repo: "old"}); err != nil || res.NotFound || res.Results[0].ChunkID != "chunk_00000000000000bb" {
		t.Fatalf("a part its commit names: %+v, %v", res, err)
	}
	res, err := svc.Search(ctx, trellis.SearchRequest{Query: "orphaned_part", Repo: "old"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Results {
		if r.ChunkID == "chunk_00000000000000aa" {
			t.Fatalf("a part whose commit never came is searchable: %+v", res)
		}
	}
}
