package codememory_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/codememory"
	"github.com/trellis/trellis/internal/servicetest"
)

const jarPy = `class CookieJar:
    """Stores cookies between requests."""

    def add_cookie_header(self, request):
        """Attach the stored cookies to an outgoing request."""
        cookies = self._cookies_for_request(request)
        if cookies:
            request.add_header("Cookie", "; ".join(cookies))
        if cookies:
            request.add_header("Cookie", "; ".join(cookies))
        return request
`

// TestSearchSnippetAndSuggestions: a snippet never repeats a line, and the
// suggestions of a search that finds nothing are words of the indexed code
// ("cookies"), never index stems ("cooki").
func TestSearchSnippetAndSuggestions(t *testing.T) {
	t.Parallel()
	svc, b := servicetest.Start(t)
	ctx := context.Background()
	root := t.TempDir()
	servicetest.WriteFiles(t, root, map[string]string{"jar.py": jarPy})
	if _, err := codememory.Ingest(ctx, b.Store, codememory.IngestConfig{Root: root, Repo: "demo"}); err != nil {
		t.Fatal(err)
	}
	res, err := svc.Search(ctx, trellis.SearchRequest{Query: "add header", Repo: "demo"})
	if err != nil || res.NotFound {
		t.Fatalf("search = %+v, %v", res, err)
	}
	for _, h := range res.Results {
		seen := map[string]bool{}
		for _, l := range strings.Split(h.Snippet, "\n") {
			if seen[l] {
				t.Fatalf("snippet of %s repeats %q:\n%s", h.Name, l, h.Snippet)
			}
			seen[l] = true
		}
	}
	res, err = svc.Search(ctx, trellis.SearchRequest{Query: "cokies reqests", Repo: "demo"})
	if err != nil || !res.NotFound || len(res.Suggestions) == 0 {
		t.Fatalf("not found = %+v, %v", res, err)
	}
	words := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(jarPy), func(r rune) bool { return !(r >= 'a' && r <= 'z') }) {
		words[w] = true
	}
	for _, s := range res.Suggestions {
		if s == "(drop the filters)" {
			continue
		}
		real := true
		for _, part := range strings.Split(s, ".") {
			real = real && (words[strings.ToLower(part)] || strings.Contains(jarPy, part))
		}
		if !real {
			t.Errorf("suggestion %q is not a word of the code (suggestions %v)", s, res.Suggestions)
		}
	}
	if !contains(res.Suggestions, "cookie") && !contains(res.Suggestions, "cookies") {
		t.Errorf("suggestions %v lack the word cookie(s)", res.Suggestions)
	}
	for _, s := range res.Suggestions {
		if s == "cooki" {
			t.Errorf("suggestion %q is an index stem", s)
		}
	}
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// The suggestions of a search that finds nothing are close to the words
// asked for: no one- or two-letter words ("d", "io", "go"), nothing two
// edits from a four-letter word ("mode" for "modl" is fine, "body" not).
func TestSearchSuggestionsAreNotNoise(t *testing.T) {
	t.Parallel()
	svc, b := servicetest.Start(t)
	ctx := context.Background()
	root := t.TempDir()
	servicetest.WriteFiles(t, root, map[string]string{"model.go": `package model

// Model holds the mode of a body of work.
func Model(d int, io string, ok bool, foo string) (mode string, body string, got bool) {
	go func() {}()
	return io, foo, ok
}
`})
	if _, err := codememory.Ingest(ctx, b.Store, codememory.IngestConfig{Root: root, Repo: "demo"}); err != nil {
		t.Fatal(err)
	}
	res, err := svc.Search(ctx, trellis.SearchRequest{Query: "modl", Repo: "demo"})
	if err != nil || !res.NotFound {
		t.Fatalf("search modl = %+v, %v", res, err)
	}
	for _, s := range res.Suggestions {
		switch {
		case s == "(drop the filters)":
		case len(s) < 3:
			t.Errorf("suggestion %q is too short to be a next search (all: %q)", s, res.Suggestions)
		case s == "body" || s == "foo" || s == "got":
			t.Errorf("suggestion %q is nowhere near %q (all: %q)", s, "modl", res.Suggestions)
		}
	}
	if !slices.Contains(res.Suggestions, "model") && !slices.Contains(res.Suggestions, "mode") {
		t.Errorf("suggestions for modl: %q; want model or mode", res.Suggestions)
	}
}
