package memory

import (
	"slices"
	"testing"
)

func TestTokens(t *testing.T) {
	tests := []struct {
		name, text string
		want       []string
	}{
		{"empty", "", nil},
		{"only separators", " \t\n.,;:!?-_/()[]{}", nil},
		{"lowercase", "Fix The BUG", []string{"bug", "fix", "the"}},
		{"punctuation splits", "user_repo.go:42 (v2)!", []string{"42", "go", "repo", "user", "v2"}},
		{"hyphen and apostrophe split", "read-only isn't", []string{"isn", "only", "read"}},
		{"digits are alphanumeric", "retry 3 times in 250ms, http2 404", []string{"250ms", "404", "http2", "in", "retry", "times"}},
		{"one-character tokens dropped", "a b c I x1 go", []string{"go", "x1"}},
		{"one rune, several bytes, dropped", "é ß 中 ok", []string{"ok"}},
		{"duplicates count once", "cache Cache CACHE cache.", []string{"cache"}},
		{"unicode letters", "Ünïcödé naïve café", []string{"café", "naïve", "ünïcödé"}},
		{"unicode lowercase", "ΣΊΣΥΦΟΣ Straße", []string{"straße", "σίσυφοσ"}},
		{"non-latin scripts", "日本語 テスト проверка", []string{"проверка", "テスト", "日本語"}},
		{"unicode digits", "٣٤ ٥", []string{"٣٤"}},
		{"symbols and emoji split", "fast🚀path ±5 a→b", []string{"fast", "path"}},
		{"combining mark splits (no normalisation)", "cafe\u0301s", []string{"cafe"}},
		{"invalid utf-8 splits", "ab\xffcd", []string{"ab", "cd"}},
		{"kelvin sign lowercases to k", "\u212Aey", []string{"key"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := Tokens(tt.text)
			if got := ts.Slice(); !slices.Equal(got, tt.want) {
				t.Fatalf("Tokens(%q) = %q, want %q", tt.text, got, tt.want)
			}
			if ts.Len() != len(tt.want) {
				t.Fatalf("Len = %d, want %d", ts.Len(), len(tt.want))
			}
			for _, w := range tt.want {
				if !ts.Contains(w) {
					t.Fatalf("Contains(%q) = false", w)
				}
			}
		})
	}
	if (TokenSet{}).Len() != 0 || (TokenSet{}).Contains("") {
		t.Fatal("zero TokenSet is not empty")
	}
}

func TestTokenSetSliceIsACopy(t *testing.T) {
	ts := Tokens("alpha beta")
	s := ts.Slice()
	s[0] = "zzz"
	if !ts.Contains("alpha") {
		t.Fatal("Slice exposed the internal slice")
	}
}
