package chunking

import (
	"slices"
	"strings"
	"testing"
)

func TestMarkdownSections(t *testing.T) {
	src := strings.Join([]string{
		"Intro before any header.", // 1
		"",                         // 2
		"# Trellis",                // 3
		"Workflow engine.",         // 4
		"",                         // 5
		"## Install ##",            // 6
		"Run make.",                // 7
		"```sh",                    // 8
		"# not a header",           // 9
		"make test",                // 10
		"```",                      // 11
		"",                         // 12
		"   ### Usage",             // 13
		"#hashtag is text",         // 14
		"####### seven is text",    // 15
		"## C# notes",              // 16
		"",                         // 17
	}, "\n")
	chunks := mustChunk(t, "docs/README.md", src)
	wantOrder := []string{"section README.md", "section Trellis", "section Install", "section Usage", "section C# notes"}
	if got := names(chunks); !slices.Equal(got, wantOrder) {
		t.Fatalf("chunks:\n%s\nwant %q", dump(chunks), wantOrder)
	}
	expect(t, chunks, []want{
		{typ: TypeSection, name: "README.md", start: 1, end: 1, tags: []string{"markdown"}},
		{typ: TypeSection, name: "Trellis", start: 3, end: 4},
		{typ: TypeSection, name: "Install", start: 6, end: 11},
		{typ: TypeSection, name: "Usage", start: 13, end: 15},
		{typ: TypeSection, name: "C# notes", start: 16, end: 16},
	})
}

func TestMarkdownWithoutHeaders(t *testing.T) {
	chunks := mustChunk(t, "NOTES.markdown", "just some notes\n\nmore notes\n")
	if len(chunks) != 1 || chunks[0].ChunkType != TypeSection || chunks[0].Name != "NOTES.markdown" ||
		chunks[0].StartLine != 1 || chunks[0].EndLine != 3 {
		t.Fatalf("chunks:\n%s", dump(chunks))
	}
}

func TestMarkdownLargeSectionSplits(t *testing.T) {
	var b strings.Builder
	b.WriteString("# Big\n")
	for i := 0; i < 3*MaxChunkLines; i++ {
		b.WriteString("line of text\n")
		if i%10 == 9 {
			b.WriteString("\n")
		}
	}
	chunks := mustChunk(t, "big.md", b.String())
	if len(chunks) < 3 {
		t.Fatalf("want the section split, got:\n%s", dump(chunks))
	}
	for _, c := range chunks {
		if c.Name != "Big" || !slices.Contains(c.Tags, "partial") || c.EndLine-c.StartLine+1 > MaxChunkLines {
			t.Errorf("part %v", c)
		}
	}
}
