package vine

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// mustParse parses text or fails the test.
func mustParse(t testing.TB, text string) Graph {
	t.Helper()
	g, err := Parse(text)
	if err != nil {
		t.Fatalf("Parse: %v\n%s", err, text)
	}
	return g
}

// mustValid parses and validates text or fails the test.
func mustValid(t testing.TB, text string) Graph {
	t.Helper()
	g := mustParse(t, text)
	if err := Validate(g); err != nil {
		t.Fatalf("Validate: %v\n%s", err, text)
	}
	return g
}

// vineText builds a file from block texts: "vine 1.2.0\n---\n" + blocks
// joined by "---".
func vineText(blocks ...string) string {
	return "vine 1.2.0\n---\n" + strings.Join(blocks, "\n---\n") + "\n"
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// fixtureInputs lists testdata/inputs/*.vine.
func fixtureInputs(t testing.TB) []string {
	t.Helper()
	files, err := filepath.Glob("testdata/inputs/*.vine")
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	return files
}

// invalidFixtures are the deliberately invalid inputs (see testdata/README.md)
// with the error each must produce.
var invalidFixtures = map[string]string{
	"repo-e2e-invalid-cycle.vine":   "cycle: a -> b -> c -> a",
	"repo-e2e-invalid-syntax.vine":  "invalid header at line 3",
	"repo-examples-10-sprites.vine": "cycle: root -> backend -> root",
}

// allValidFixtureTexts returns every valid .vine fixture (inputs and
// expansion cases) by path.
func allValidFixtureTexts(t testing.TB) map[string]string {
	t.Helper()
	out := map[string]string{}
	files := fixtureInputs(t)
	more, _ := filepath.Glob("testdata/expand/*/*.vine")
	for _, f := range append(files, more...) {
		if _, bad := invalidFixtures[filepath.Base(f)]; bad {
			continue
		}
		out[f] = readFile(t, f)
	}
	return out
}

func nodeIDs(nodes []Node) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.ID
	}
	return out
}

func summaryIDs(nodes []NodeSummary) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.ID
	}
	return out
}

// wantErr checks that err is non-nil, contains every substring, and has code.
func wantErr(t testing.TB, err error, code Code, subs ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("want error containing %q, got nil", subs)
	}
	for _, s := range subs {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not contain %q", err, s)
		}
	}
	if code != "" && ErrorCode(err) != code {
		t.Errorf("ErrorCode(%q) = %q, want %q", err, ErrorCode(err), code)
	}
}

func asValidation(t testing.TB, err error) *ValidationError {
	t.Helper()
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("error %v (%T) is not a *ValidationError", err, err)
	}
	return ve
}
