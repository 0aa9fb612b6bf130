package projections

import (
	"math"
	"testing"
)

func TestRRF(t *testing.T) {
	t.Parallel()
	// a: lexical 1st, vector absent; b: lexical 2nd, vector 1st; c: vector 2nd.
	got := RRF(60, []string{"a", "b"}, []string{"b", "c"})
	want := []Fused{{"b", 1.0/62 + 1.0/61}, {"a", 1.0 / 61}, {"c", 1.0 / 62}}
	if len(got) != len(want) {
		t.Fatalf("RRF = %v", got)
	}
	for i := range want {
		if got[i].ChunkID != want[i].ChunkID || math.Abs(got[i].Score-want[i].Score) > 1e-12 {
			t.Fatalf("RRF[%d] = %v, want %v (all %v)", i, got[i], want[i], got)
		}
	}
	// Ties break by id; a duplicate within one list counts once.
	tie := RRF(60, []string{"y", "y"}, []string{"x"})
	if tie[0].ChunkID != "x" || tie[1].ChunkID != "y" || tie[1].Score != 1.0/61 {
		t.Fatalf("tie = %v", tie)
	}
	if len(RRF(60)) != 0 {
		t.Fatal("no lists should fuse to nothing")
	}
}
