package memory

import "bytes"

// Fact categories.
const (
	CategoryBugFix       = "bug_fix"
	CategoryArchitecture = "architecture"
	CategorySecurity     = "security"
	CategoryPerformance  = "performance"
	CategoryPattern      = "pattern"
	CategoryDecision     = "decision"
	CategoryDiscovery    = "discovery"
	CategoryInsight      = "insight"
)

// Observation types. Only insight, decision and discovery observations are
// consolidated into facts; any other type is skipped.
const (
	TypeInsight   = "insight"
	TypeDecision  = "decision"
	TypeDiscovery = "discovery"
)

// keyword is one category keyword. A token matches it when the token starts
// with word, unless the token also starts with one of except, unless again
// it starts with one of rescue.
type keyword struct {
	word   []byte
	except [][]byte
	rescue [][]byte
}

type categoryRule struct {
	category string
	keywords []keyword
}

func kw(word string, except ...string) keyword {
	k := keyword{word: []byte(word)}
	for _, e := range except {
		k.except = append(k.except, []byte(e))
	}
	return k
}

// categoryRules are the keyword rules of Category, in priority order.
var categoryRules = []categoryRule{
	{CategoryBugFix, []keyword{kw("bug"), kw("fix", "fixtur"), kw("error"), kw("issue", "issued", "issuer")}},
	{CategoryArchitecture, []keyword{kw("architect"), kw("design", "designat"), kw("structure")}},
	{CategorySecurity, []keyword{kw("security"), kw("vulnerability"), {
		word:   []byte("auth"),
		except: [][]byte{[]byte("author")},
		rescue: [][]byte{[]byte("authoriz"), []byte("authoris")},
	}}},
	{CategoryPerformance, []keyword{kw("performance"), kw("latency"), kw("slow"), kw("throughput")}},
	{CategoryPattern, []keyword{kw("pattern")}},
}

func (k *keyword) matches(tok []byte) bool {
	if !bytes.HasPrefix(tok, k.word) {
		return false
	}
	for _, e := range k.except {
		if bytes.HasPrefix(tok, e) {
			for _, r := range k.rescue {
				if bytes.HasPrefix(tok, r) {
					return true
				}
			}
			return false
		}
	}
	return true
}

// Category infers the category of a fact made from an observation of type
// obsType with the given text.
//
// The type decides first: "decision" gives "decision" and "discovery" gives
// "discovery" (types are compared exactly, case-sensitively). Otherwise the
// text's tokens (see [Tokens]) are tried against these rules, in order; the
// first rule with a matching token wins:
//
//	bug, fix, error, issue                   → "bug_fix"
//	architect, design, structure             → "architecture"
//	security, vulnerability, auth            → "security"
//	performance, latency, slow, throughput   → "performance"
//	pattern                                  → "pattern"
//	(nothing)                                → "insight"
//
// A keyword matches a token that equals it or starts with it ("fixes",
// "authentication", "architecture", "slowdown"), never a keyword inside a
// word ("prefix" is not a fix, "debug" is not a bug, "hotfix" is not a fix).
// So "Fixed slow auth" is "bug_fix": the bug_fix rule comes first.
//
// Exceptions, for prefixes that are obviously other words:
//
//   - auth: tokens starting with "author" (author, authored, authors,
//     authorship) are not auth, except those starting with "authoriz" or
//     "authoris" (authorize, authorization, authorised), which are.
//   - fix: tokens starting with "fixtur" (fixture, fixtures) are not fixes.
//   - design: tokens starting with "designat" (designate, designated,
//     designation) are not design.
//   - issue: tokens starting with "issued" or "issuer" (a token issued by
//     an issuer) are not issues; "issues" still is.
func Category(obsType, text string) string {
	switch obsType {
	case TypeDecision:
		return CategoryDecision
	case TypeDiscovery:
		return CategoryDiscovery
	}
	best := len(categoryRules)
	var buf [64]byte
	scanTokens(text, buf[:0], func(tok []byte) {
		for i := 0; i < best; i++ {
			for k := range categoryRules[i].keywords {
				if categoryRules[i].keywords[k].matches(tok) {
					best = i
					return
				}
			}
		}
	})
	if best < len(categoryRules) {
		return categoryRules[best].category
	}
	return CategoryInsight
}
