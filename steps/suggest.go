package steps

import (
	"regexp"
	"sort"
	"strings"
)

var (
	quotedRE = regexp.MustCompile(`"[^"]*"`)
	numberRE = regexp.MustCompile(`\b\d+\b`)
)

// shape reduces a step text to the words that tell steps apart: quoted
// values become "…" and numbers N, so `I add 5 tasks to queue "jobs"` and
// `I add 2 tasks to queue "nightly"` have the same shape.
func shape(text string) []string {
	text = quotedRE.ReplaceAllString(StripKeyword(text), ` "…" `)
	text = numberRE.ReplaceAllString(text, " N ")
	return strings.Fields(strings.ToLower(text))
}

// Suggest returns up to n definitions closest to an undefined step text,
// closest first. The distance of two step shapes is the mean of their edit
// distance over words (replacing a word by a similar one, a typo, costs
// less than by another), relative to the longer shape, and of one minus
// the overlap of their word sets (Jaccard).
func Suggest(text string, n int) []Definition {
	return suggestAmong(Vocabulary(), text, n)
}

// suggestAmong is Suggest over some definitions.
func suggestAmong(defs []Definition, text string, n int) []Definition {
	want := shape(text)
	type scored struct {
		def  Definition
		dist float64
	}
	all := make([]scored, 0, len(defs))
	for _, d := range defs {
		got := shape(d.exampleText())
		dist := (wordDistance(want, got)/float64(max(len(want), len(got), 1)) + 1 - overlap(want, got)) / 2
		all = append(all, scored{d, dist})
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].dist < all[j].dist })
	out := make([]Definition, 0, n)
	for _, s := range all[:min(n, len(all))] {
		out = append(out, s.def)
	}
	return out
}

// overlap is the Jaccard index of two word lists' sets, a plural counting
// as its singular.
func overlap(a, b []string) float64 {
	set := func(words []string) map[string]bool {
		m := map[string]bool{}
		for _, w := range words {
			if len(w) > 3 {
				w = strings.TrimSuffix(w, "s")
			}
			m[w] = true
		}
		return m
	}
	sa, sb := set(a), set(b)
	both := 0
	for w := range sa {
		if sb[w] {
			both++
		}
	}
	union := len(sa) + len(sb) - both
	if union == 0 {
		return 1
	}
	return float64(both) / float64(union)
}

// wordDistance is the Levenshtein distance between two word lists, where
// a substitution costs the normalised character distance of the words.
func wordDistance(a, b []string) float64 {
	prev := make([]float64, len(b)+1)
	cur := make([]float64, len(b)+1)
	for j := range prev {
		prev[j] = float64(j)
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = float64(i)
		for j := 1; j <= len(b); j++ {
			sub := prev[j-1] + charRatio(a[i-1], b[j-1])
			cur[j] = min(prev[j]+1, cur[j-1]+1, sub)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// charRatio is the Levenshtein distance of two words over the longer
// length: 0 for equal words, 1 for unrelated ones.
func charRatio(a, b string) float64 {
	if a == b {
		return 0
	}
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return float64(prev[len(rb)]) / float64(max(len(ra), len(rb)))
}
