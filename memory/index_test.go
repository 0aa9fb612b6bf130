package memory

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// The size and prefix bounds are exact: derived by enumeration over all
// overlaps, they match the closed forms in index.go, and for every size the
// strict bound is used (a = 20 needs 18 shared tokens, so its prefix is 3).
func TestFilterBounds(t *testing.T) {
	for a := 1; a <= 400; a++ {
		// Least overlap any duplicate of a set of size a needs, over all b.
		alpha := -1
		lo, hi := -1, -1
		for b := 1; b <= 2*a+2; b++ {
			for o := 0; o <= min(a, b); o++ {
				if isDup(o, a, b) {
					if alpha < 0 || o < alpha {
						alpha = o
					}
					if lo < 0 {
						lo = b
					}
					hi = b
					break
				}
			}
		}
		if gl, gh := sizeBounds(a); gl != lo || gh != hi {
			t.Fatalf("sizeBounds(%d) = %d..%d, want %d..%d", a, gl, gh, lo, hi)
		}
		if p := prefixLen(a); p != a-alpha+1 {
			t.Fatalf("prefixLen(%d) = %d, want a-α+1 = %d", a, p, a-alpha+1)
		}
	}
	if prefixLen(20) != 3 || prefixLen(0) != 0 || prefixLen(1) != 1 {
		t.Fatalf("prefixLen(20,0,1) = %d,%d,%d", prefixLen(20), prefixLen(0), prefixLen(1))
	}
}

// randomSets draws n sets of 0..maxLen tokens from a vocabulary of v tokens,
// many of them near copies of earlier sets.
func randomSets(r *rand.Rand, n, v, maxLen int) [][]uint32 {
	sets := make([][]uint32, n)
	for i := range sets {
		var s []uint32
		if i > 0 && r.IntN(2) == 0 {
			s = slices.Clone(sets[r.IntN(i)])
			for e := r.IntN(3); e > 0; e-- {
				if len(s) > 0 && r.IntN(2) == 0 {
					s = slices.Delete(s, 0, 1)
				} else {
					s = append(s, uint32(r.IntN(v)))
				}
			}
		} else {
			for k := r.IntN(maxLen + 1); k > 0; k-- {
				s = append(s, uint32(r.IntN(v)))
			}
		}
		slices.Sort(s)
		sets[i] = slices.Compact(s)
	}
	return sets
}

func TestCoreVisitFindsExactlyTheDuplicates(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, v := range []int{5, 25, 200} {
		sets := randomSets(r, 1500, v, 45)
		var c core
		for i, s := range sets {
			got := map[int32]int{}
			c.visit(s, func(h int32, o int) { got[h] = o })
			for j := 0; j < i; j++ {
				o := intersectSorted(s, sets[j])
				dup := isDup(o, len(s), len(sets[j]))
				if g, ok := got[int32(j)]; ok != dup || (ok && g != o) {
					t.Fatalf("v=%d: set %d vs %d: visit=%v (o=%d), brute force dup=%v (o=%d)", v, i, j, ok, g, dup, o)
				}
			}
			c.add(s, i)
		}
	}
}

// Index under random adds, updates and removals agrees with brute force.
func TestIndexOperations(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	g := newTextGen(5, baseWords[:40], 0, 22, 0.5)
	var corpus []TokenSet
	for range 50 {
		corpus = append(corpus, Tokens(g.next()))
	}
	ix := NewIndex(corpus[:25]) // the order is only partly known in advance
	type entry struct {
		id  string
		ts  TokenSet
		seq int
	}
	var live []entry // in creation order
	seq := 0
	for step := range 4000 {
		switch op := r.IntN(10); {
		case op < 5 || len(live) == 0:
			id := fmt.Sprintf("f%d", step)
			ts := Tokens(g.next())
			ix.Add(id, ts)
			live = append(live, entry{id, ts, seq})
			seq++
		case op < 7:
			k := r.IntN(len(live))
			ix.Remove(live[k].id)
			live = slices.Delete(live, k, k+1)
		case op < 8:
			k := r.IntN(len(live))
			live[k].ts = Tokens(g.next() + " newtok" + fmt.Sprint(step))
			ix.Update(live[k].id, live[k].ts)
		default:
			k := r.IntN(len(live))
			live[k].ts = Tokens(g.next())
			ix.Add(live[k].id, live[k].ts) // Add of a known id updates
		}
		if ix.Len() != len(live) {
			t.Fatalf("step %d: Len = %d, want %d", step, ix.Len(), len(live))
		}
		q := Tokens(g.next())
		var want []string
		bestID, bestJ := "", 0.0
		for _, e := range live {
			j := Jaccard(q, e.ts)
			if j > DuplicateThreshold {
				want = append(want, e.id)
			}
			if j > bestJ {
				bestID, bestJ = e.id, j
			}
		}
		if got := ix.Duplicates(q); !slices.Equal(got, want) {
			t.Fatalf("step %d: Duplicates = %v, want %v", step, got, want)
		}
		id, sim, ok := ix.Best(q)
		if ok != (bestJ > DuplicateThreshold) || (ok && (id != bestID || sim != bestJ)) {
			t.Fatalf("step %d: Best = %q %v %v, want %q %v", step, id, sim, ok, bestID, bestJ)
		}
	}
	if ix.Remove("nope") {
		t.Fatal("Remove of an unknown id reported true")
	}
}

// Best breaks similarity ties by creation order, and Update keeps an
// entry's position.
func TestIndexTies(t *testing.T) {
	ix := NewIndex(nil)
	ix.Add("a", Tokens("alpha beta gamma delta epsilon zeta eta theta"))
	ix.Add("b", Tokens("alpha beta gamma delta epsilon zeta eta theta"))
	q := Tokens("Alpha beta gamma delta epsilon zeta eta theta!")
	if id, sim, ok := ix.Best(q); !ok || id != "a" || sim != 1 {
		t.Fatalf("Best = %q %v %v, want a 1 true", id, sim, ok)
	}
	ix.Update("a", Tokens("alpha beta gamma delta epsilon zeta eta theta"))
	if id, _, _ := ix.Best(q); id != "a" {
		t.Fatalf("after Update, Best = %q, want a (position kept)", id)
	}
	ix.Remove("a")
	ix.Add("a", Tokens("alpha beta gamma delta epsilon zeta eta theta"))
	if id, _, _ := ix.Best(q); id != "b" {
		t.Fatalf("after Remove+Add, Best = %q, want b", id)
	}
	if got := ix.Duplicates(q); !slices.Equal(got, []string{"b", "a"}) {
		t.Fatalf("Duplicates = %v", got)
	}
	if _, _, ok := ix.Best(Tokens("")); ok {
		t.Fatal("empty text found a duplicate")
	}
}
