package memory

import (
	"slices"
	"sort"
	"unicode"
	"unicode/utf8"
)

// TokenSet is the set of distinct tokens of a text, as produced by [Tokens].
// It is immutable; the zero value is the empty set.
type TokenSet struct {
	toks []string // sorted, distinct
}

// Tokens returns the token set of text. The text is lowercased rune by rune
// (unicode.ToLower, no special casing and no normalisation) and split on
// every rune that is neither a Unicode letter (unicode.IsLetter) nor a
// Unicode decimal digit (unicode.IsDigit); punctuation, spaces, symbols,
// combining marks and invalid UTF-8 all separate tokens. Tokens of a single
// rune are dropped. Repeated tokens count once.
//
// For example "Fix the N+1 query in user_repo.go (v2)!" gives
// {fix, go, query, repo, the, user, v2}.
func Tokens(text string) TokenSet {
	var toks []string
	scanTokens(text, nil, func(tok []byte) { toks = append(toks, string(tok)) })
	slices.Sort(toks)
	toks = slices.Compact(toks)
	return TokenSet{toks: slices.Clip(toks)}
}

// Len returns the number of distinct tokens in s.
func (s TokenSet) Len() int { return len(s.toks) }

// Slice returns the tokens of s in ascending byte order, as a new slice.
func (s TokenSet) Slice() []string { return slices.Clone(s.toks) }

// Contains reports whether tok is one of the tokens of s.
func (s TokenSet) Contains(tok string) bool {
	i := sort.SearchStrings(s.toks, tok)
	return i < len(s.toks) && s.toks[i] == tok
}

// isAlnum reports whether r is a token rune: a Unicode letter or digit.
func isAlnum(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// scanTokens calls emit with each token of text, in order of appearance and
// with repetitions, and returns buf (the scratch buffer, reusable by the
// next call). The slice passed to emit is only valid during the call.
func scanTokens(text string, buf []byte, emit func(tok []byte)) []byte {
	buf = buf[:0]
	runes := 0
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			i++
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if ('a' <= c && c <= 'z') || ('0' <= c && c <= '9') {
				buf = append(buf, c)
				runes++
				continue
			}
		} else {
			r, size := utf8.DecodeRuneInString(text[i:])
			i += size
			r = unicode.ToLower(r)
			if isAlnum(r) {
				buf = utf8.AppendRune(buf, r)
				runes++
				continue
			}
		}
		if runes > 1 {
			emit(buf)
		}
		buf, runes = buf[:0], 0
	}
	if runes > 1 {
		emit(buf)
	}
	return buf[:0]
}
