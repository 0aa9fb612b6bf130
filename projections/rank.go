package projections

import (
	"strings"
	"unicode"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search/query"
)

// rankParams are the lexical ranking's weights.
type rankParams struct {
	content, doc, name, path, exact float64
	test, module                    float64
	window                          int
}

// rank is the ranking in use: BM25 over content, plus the doc comment
// (×1.5), the name (×0.75), the path (×0.5) and an exact-name match (×5)
// as damped extras; tests ×0.25 unless the question is about tests; module
// glue ×0.7. The weights were chosen on the tuning half of the search
// evaluation (bench/testdata/searcheval) only.
var rank = rankParams{content: 1, doc: 1.5, name: 0.75, path: 0.5, exact: 5, test: 0.25, module: 0.7, window: 20}

// questionWords are words of a question that say nothing about the code
// it asks for ("where is X implemented", "the function that ..."). They
// are dropped from the query only; the index keeps them.
var questionWords = map[string]bool{
	"implement": true, "implemented": true, "implements": true, "implementation": true, "implementing": true,
	"defined": true, "definition": true, "code": true,
}

// queryText drops question words from text.
func queryText(text string) string {
	fields := strings.Fields(text)
	kept := fields[:0:0]
	for _, f := range fields {
		w := strings.ToLower(strings.Trim(f, "?!.,;:'\"()"))
		if !questionWords[w] {
			kept = append(kept, f)
		}
	}
	if len(kept) == 0 {
		return text
	}
	return strings.Join(kept, " ")
}

// identifiers are the words of text that look like code names: camelCase
// (NewServer, addLevelName; an acronym such as URL alone is not), with an
// underscore or a dot (json.loads), or any word of a query of at most two
// words. Each is returned with its last
// dotted part ("http.Get" gives "http.Get" and "Get").
func identifiers(text string) []string {
	words := strings.Fields(text)
	var out []string
	for _, w := range words {
		w = strings.Trim(w, "?!,;:'\"()`")
		w = strings.TrimSuffix(strings.TrimSuffix(w, "()"), ".")
		if w == "" {
			continue
		}
		inner := false
		prev := rune(0)
		for _, r := range w {
			if unicode.IsUpper(r) && unicode.IsLower(prev) {
				inner = true
			}
			prev = r
		}
		if !(inner || strings.ContainsAny(w, "_.") || len(words) <= 2) {
			continue
		}
		out = append(out, w)
		if i := strings.LastIndexByte(w, '.'); i >= 0 && i+1 < len(w) {
			out = append(out, w[i+1:])
		}
	}
	return out
}

func (p rankParams) query(text string) query.Query {
	var qs []query.Query
	words := queryText(text)
	field := func(f string, boost float64) {
		if boost <= 0 {
			return
		}
		m := bleve.NewMatchQuery(words)
		m.SetField(f)
		m.SetBoost(boost)
		qs = append(qs, m)
	}
	field("content", p.content)
	field("doc", p.doc)
	field("name_text", p.name)
	field("path_text", p.path)
	if p.exact > 0 {
		var exact []query.Query
		for _, id := range identifiers(text) {
			t := bleve.NewTermQuery(id)
			t.SetField("names")
			exact = append(exact, t)
		}
		if len(exact) > 0 {
			d := bleve.NewDisjunctionQuery(exact...)
			d.SetBoost(p.exact)
			qs = append(qs, d)
		}
	}
	// Content decides which chunks match and carries the BM25 score;
	// the other fields only add to it, damped by the share of them that
	// match, so that one shared word in a name cannot outweigh a body
	// that matches the whole question. (A plain disjunction of the fields
	// would multiply the sum by the share of fields matched: a name match
	// then doubles a chunk's score.)
	return query.NewBooleanQuery(qs[:1], qs[1:], nil)
}

// aboutTests reports whether a question asks about tests.
func aboutTests(text string) bool {
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) }) {
		if strings.HasPrefix(w, "test") || w == "benchmark" || w == "benchmarks" || w == "fuzz" {
			return true
		}
	}
	return false
}

// weight scales a chunk's BM25 score by what kind of code it is: tests
// count less unless the question is about tests; module-level glue counts
// less.
func (p rankParams) weight(h Hit, text string) float64 {
	w := 1.0
	if !aboutTests(text) {
		for _, t := range h.Tags {
			if t == "test" {
				w *= p.test
			}
		}
	}
	switch h.ChunkType {
	case "module", "file":
		w *= p.module
	}
	return w
}
