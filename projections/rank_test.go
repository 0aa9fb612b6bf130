package projections

import (
	"reflect"
	"testing"
)

func TestIdentifiers(t *testing.T) {
	t.Parallel()
	for q, want := range map[string][]string{
		"where is http.Get implemented":        {"http.Get", "Get"},
		"httptest NewServer":                   {"httptest", "NewServer"},
		"json.loads":                           {"json.loads", "loads"},
		"Logger.With adds attributes to every": {"Logger.With", "With"},
		"send the browser to a different URL":  nil,
		"read the `add_header()` helper":       {"add_header"},
	} {
		if got := identifiers(q); !reflect.DeepEqual(got, want) {
			t.Errorf("identifiers(%q) = %v, want %v", q, got, want)
		}
	}
}

func TestQueryTextAndTests(t *testing.T) {
	t.Parallel()
	if got := queryText("where is the code that parses headers implemented?"); got != "where is the that parses headers" {
		t.Errorf("queryText = %q", got)
	}
	if got := queryText("implementation"); got != "implementation" {
		t.Errorf("a question of filler words only must be kept: %q", got)
	}
	testHit := Hit{Tags: []string{"go", "test"}, ChunkType: "function"}
	if w := rank.weight(testHit, "set a timeout on the client"); w != rank.test {
		t.Errorf("test chunk weight = %v, want %v", w, rank.test)
	}
	if w := rank.weight(testHit, "tests of the client timeout"); w != 1 {
		t.Errorf("a question about tests must not demote them: %v", w)
	}
	if w := rank.weight(Hit{ChunkType: "module"}, "x"); w != rank.module {
		t.Errorf("module weight = %v", w)
	}
	if !NamesChunk("where is Writer.Flush", "Writer.Flush") || !NamesChunk("httptest NewServer", "NewServer") ||
		!NamesChunk("discardHandler.Enabled", "discardHandler.Enabled, discardHandler.Handle") || NamesChunk("flush the writer", "Writer.Flush") {
		t.Error("NamesChunk")
	}
}
