package memory

import (
	"fmt"
	"strings"
	"testing"
)

// words returns n distinct tokens w<start>..w<start+n-1> joined by spaces.
func words(start, n int) string {
	var b strings.Builder
	for i := start; i < start+n; i++ {
		fmt.Fprintf(&b, "w%d ", i)
	}
	return b.String()
}

// pair returns texts whose token sets share o tokens, with a and b tokens.
func pair(o, a, b int) (string, string) {
	return words(0, o) + words(1000, a-o), words(0, o) + words(2000, b-o)
}

func TestJaccard(t *testing.T) {
	a17, b17 := pair(17, 18, 19) // 17/20 = 0.85 exactly
	a34, b34 := pair(34, 36, 38) // 34/40 = 0.85 exactly
	a18, b18 := pair(18, 19, 19) // 18/20 = 0.9
	a6, b6 := pair(6, 6, 7)      // 6/7 ≈ 0.857: just above
	a11, b11 := pair(11, 12, 12) // 11/13 ≈ 0.846: just below
	tests := []struct {
		name string
		a, b string
		want float64
		dup  bool
	}{
		{"both empty", "", "", 0, false},
		{"empty vs text", "", "fix the bug", 0, false},
		{"text vs empty", "fix the bug", "", 0, false},
		{"only one-char tokens is empty", "a b c", "a b c", 0, false},
		{"identical", "Fix the auth bug", "fix THE auth bug!", 1, true},
		{"identical single token", "ok", "OK", 1, true},
		{"disjoint", "alpha beta", "gamma delta", 0, false},
		{"half", "alpha beta", "alpha gamma", 1.0 / 3, false},
		{"exactly 0.85 (17/20) is not a duplicate", a17, b17, 0.85, false},
		{"exactly 0.85 (34/40) is not a duplicate", a34, b34, 0.85, false},
		{"0.9 is a duplicate", a18, b18, 0.9, true},
		{"6/7 is a duplicate", a6, b6, 6.0 / 7, true},
		{"11/13 is not", a11, b11, 11.0 / 13, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x, y := Tokens(tt.a), Tokens(tt.b)
			if got := Jaccard(x, y); got != tt.want {
				t.Fatalf("Jaccard = %v, want %v", got, tt.want)
			}
			if got := Jaccard(y, x); got != tt.want {
				t.Fatalf("Jaccard (swapped) = %v, want %v", got, tt.want)
			}
			if got := IsDuplicate(x, y); got != tt.dup {
				t.Fatalf("IsDuplicate = %v, want %v", got, tt.dup)
			}
			if got := Jaccard(x, y) > DuplicateThreshold; got != tt.dup {
				t.Fatalf("Jaccard > DuplicateThreshold = %v, want %v", got, tt.dup)
			}
		})
	}
}

// The integer duplicate test, the minimum overlap and the float64
// comparison agree for every overlap and size up to 300.
func TestIsDupAgreesWithFloat(t *testing.T) {
	for a := 0; a <= 300; a++ {
		for b := 0; b <= 300; b++ {
			m := -1
			for o := 0; o <= min(a, b); o++ {
				var j float64
				if o > 0 {
					j = float64(o) / float64(a+b-o)
				}
				if got, want := isDup(o, a, b), j > DuplicateThreshold; got != want {
					t.Fatalf("isDup(%d,%d,%d) = %v, float says %v", o, a, b, got, want)
				}
				if isDup(o, a, b) && m < 0 {
					m = o
				}
			}
			if m >= 0 && minOverlap(a, b) != m {
				t.Fatalf("minOverlap(%d,%d) = %d, want %d", a, b, minOverlap(a, b), m)
			}
			if m < 0 && a > 0 && b > 0 && minOverlap(a, b) <= min(a, b) {
				t.Fatalf("minOverlap(%d,%d) = %d reachable but no duplicate", a, b, minOverlap(a, b))
			}
		}
	}
}
