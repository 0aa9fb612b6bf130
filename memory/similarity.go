package memory

// DuplicateThreshold is the Jaccard similarity two token sets must strictly
// exceed to be duplicates: 0.85 itself is not a duplicate.
const DuplicateThreshold = 0.85

// The threshold as the exact fraction thresholdNum/thresholdDen (17/20),
// used for all integer arithmetic on overlaps and sizes.
const (
	thresholdNum = 17
	thresholdDen = 20
)

// Jaccard returns |a∩b| / |a∪b|, in [0, 1]. It is 0 when either set is
// empty (in particular Jaccard of two empty sets is 0, not 1), so an empty
// text is never similar to anything, itself included.
func Jaccard(a, b TokenSet) float64 {
	o := intersectSorted(a.toks, b.toks)
	u := len(a.toks) + len(b.toks) - o
	if o == 0 || u == 0 {
		return 0
	}
	return float64(o) / float64(u)
}

// IsDuplicate reports whether a and b are duplicates: Jaccard(a, b) >
// DuplicateThreshold. It is computed exactly in integers (20·|a∩b| >
// 17·|a∪b|) and always agrees with the float64 comparison.
func IsDuplicate(a, b TokenSet) bool {
	return isDup(intersectSorted(a.toks, b.toks), len(a.toks), len(b.toks))
}

// intersectSorted counts the common elements of two sorted, distinct slices.
func intersectSorted[T string | uint32](a, b []T) int {
	i, j, o := 0, 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] < b[j]:
			i++
		case a[i] > b[j]:
			j++
		default:
			o++
			i++
			j++
		}
	}
	return o
}

// isDup reports whether sets of sizes a and b sharing o elements are
// duplicates: o/(a+b−o) > 17/20, that is 20·o > 17·(a+b−o). o = 0 is never
// a duplicate (which also covers empty sets).
func isDup(o, a, b int) bool {
	return o > 0 && thresholdDen*o > thresholdNum*(a+b-o)
}

// minOverlap returns the smallest overlap o for which sets of sizes a and b
// are duplicates: 20·o > 17·(a+b−o) ⇔ 37·o > 17·(a+b) ⇔
// o ≥ ⌊17·(a+b)/37⌋ + 1.
func minOverlap(a, b int) int {
	return thresholdNum*(a+b)/(thresholdNum+thresholdDen) + 1
}
