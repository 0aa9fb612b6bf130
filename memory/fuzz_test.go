package memory

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func FuzzTokensJaccard(f *testing.F) {
	for _, s := range [][2]string{
		{"", ""},
		{"Fix the auth bug", "fix THE auth bug!"},
		{"日本語 テスト", "ΣΊΣΥΦΟΣ Straße"},
		{"ab\xffcd", "\u212Aey café\u0301"},
		{"a b c", "x"},
		{base18 + " ya", base18 + " yb"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, x, y string) {
		a, b := Tokens(x), Tokens(y)
		for _, ts := range []TokenSet{a, b} {
			toks := ts.Slice()
			if !slices.IsSorted(toks) || len(slices.Compact(slices.Clone(toks))) != len(toks) {
				t.Fatalf("tokens not sorted and distinct: %q", toks)
			}
			for _, tok := range toks {
				if utf8.RuneCountInString(tok) < 2 || !utf8.ValidString(tok) {
					t.Fatalf("bad token %q", tok)
				}
				for _, r := range tok {
					if !isAlnum(r) {
						t.Fatalf("token %q has separator %q", tok, r)
					}
				}
			}
		}
		if !slices.Equal(Tokens(strings.ToLower(x)).Slice(), a.Slice()) {
			t.Fatalf("Tokens not invariant under ToLower: %q", x)
		}
		jab, jba := Jaccard(a, b), Jaccard(b, a)
		if jab != jba {
			t.Fatalf("Jaccard not symmetric: %v vs %v", jab, jba)
		}
		if !(jab >= 0 && jab <= 1) {
			t.Fatalf("Jaccard out of range: %v", jab)
		}
		if IsDuplicate(a, b) != (jab > DuplicateThreshold) || IsDuplicate(a, b) != IsDuplicate(b, a) {
			t.Fatalf("IsDuplicate disagrees with Jaccard %v", jab)
		}
		if self := Jaccard(a, a); (a.Len() == 0 && self != 0) || (a.Len() > 0 && self != 1) {
			t.Fatalf("Jaccard(a, a) = %v for %d tokens", self, a.Len())
		}
		_ = Category("insight", x)
	})
}
