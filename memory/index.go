package memory

import (
	"cmp"
	"slices"
)

// Candidate generation: size and prefix filtering.
//
// Write t = 17/20 for the threshold, a = |A|, b = |B|, o = |A∩B|, and
// J = o/(a+b−o). A and B are duplicates iff J > t (strict).
//
// Size filter. o ≤ min(a, b) and |A∪B| ≥ max(a, b), so J ≤ min(a,b)/max(a,b)
// and J > t forces min(a,b)/max(a,b) > t, that is 17·max(a,b) < 20·min(a,b):
// t·a < b < a/t. In integers, for a probe of size a the only sizes that can
// match are lo ≤ b ≤ hi with lo = ⌊17a/20⌋+1 (the least b with 20b > 17a) and
// hi = ⌊(20a−1)/17⌋ (the greatest b with 17b < 20a); see sizeBounds.
//
// Prefix filter. J > t means o > t·|A∪B| ≥ t·a, so o ≥ α(a) = ⌊17a/20⌋+1 (the
// least integer strictly above t·a; for the non-strict J ≥ t it would be
// ⌈t·a⌉, which differs exactly when t·a is an integer, e.g. a = 20: ⌈17⌉ = 17
// but the strict bound needs 18). Likewise o ≥ α(b). Fix one total order on
// all tokens and sort every set by it. Let w be the first (in that order)
// token of A∩B. All o common tokens are at or after w in A, so w is at
// position ≤ a−o+1 ≤ a−α(a)+1 of A; symmetrically at position ≤ b−α(b)+1 of
// B. So with p(n) = n − α(n) + 1 = n − ⌊17n/20⌋ (see prefixLen), any
// duplicate pair shares a token that lies in the first p(a) tokens of A and
// in the first p(b) tokens of B. The index therefore keeps, for each token,
// the postings of the sets that have it in their own prefix, and a probe
// scans only the postings of the tokens of its own prefix; surviving
// candidates are size-filtered and confirmed by an exact overlap count
// (with early exit once the remaining tokens cannot reach minOverlap(a, b),
// the least o with 37·o > 17·(a+b)). No pair is missed, so results are
// exactly those of the all-pairs definition; the filters only save work.
//
// Any fixed total order is correct; rarest-first (ascending document
// frequency) makes prefixes consist of rare tokens and postings short.
// Tokens first seen after the order was fixed get ranks after every known
// token, which leaves the order of every set already indexed unchanged.
// Empty sets have an empty prefix and are never candidates, which is right:
// they are never duplicates.

// prefixLen returns p(n) = n − ⌊17n/20⌋, the probing/indexing prefix length
// of a set of n tokens (0 for n = 0).
func prefixLen(n int) int { return n - thresholdNum*n/thresholdDen }

// sizeBounds returns the inclusive range of sizes b that can be duplicates
// of a set of size a ≥ 1.
func sizeBounds(a int) (lo, hi int) {
	return thresholdNum*a/thresholdDen + 1, (thresholdDen*a - 1) / thresholdNum
}

// overlapAtLeast returns |x∩y| for sorted distinct x and y if it is at least
// need, or −1 as soon as that is impossible.
func overlapAtLeast(x, y []uint32, need int) int {
	i, j, o := 0, 0, 0
	for i < len(x) && j < len(y) {
		if o+min(len(x)-i, len(y)-j) < need {
			return -1
		}
		switch {
		case x[i] < y[j]:
			i++
		case x[i] > y[j]:
			j++
		default:
			o++
			i++
			j++
		}
	}
	if o < need {
		return -1
	}
	return o
}

// core is the inverted index over rank-encoded token sets (sorted []uint32
// of token ranks). Entries are addressed by handle; seq is the entry's
// position in creation order, used to break similarity ties.
type core struct {
	sets     [][]uint32
	seq      []int
	alive    []bool
	stamp    []uint32 // per handle: the last query that saw it
	postings [][]int32
	free     []int32
	query    uint32
	live     int
}

// newCore returns a core sized for vocab token ranks and n entries.
func newCore(vocab, n int) *core {
	return &core{
		sets:     make([][]uint32, 0, n),
		seq:      make([]int, 0, n),
		alive:    make([]bool, 0, n),
		stamp:    make([]uint32, 0, n),
		postings: make([][]int32, vocab),
	}
}

// add indexes set (which the index then owns) under creation position seq
// and returns its handle.
func (c *core) add(set []uint32, seq int) int32 {
	var h int32
	if n := len(c.free); n > 0 {
		h = c.free[n-1]
		c.free = c.free[:n-1]
		c.sets[h], c.seq[h], c.alive[h] = set, seq, true
	} else {
		h = int32(len(c.sets))
		c.sets = append(c.sets, set)
		c.seq = append(c.seq, seq)
		c.alive = append(c.alive, true)
		c.stamp = append(c.stamp, 0)
	}
	c.live++
	for _, r := range set[:prefixLen(len(set))] {
		if int(r) >= len(c.postings) {
			c.postings = append(c.postings, make([][]int32, int(r)+1-len(c.postings))...)
		}
		c.postings[r] = append(c.postings[r], h)
	}
	return h
}

// remove drops handle h from the index; the handle may be reused.
func (c *core) remove(h int32) {
	set := c.sets[h]
	for _, r := range set[:prefixLen(len(set))] {
		list := c.postings[r]
		if i := slices.Index(list, h); i >= 0 {
			list[i] = list[len(list)-1]
			c.postings[r] = list[:len(list)-1]
		}
	}
	c.sets[h], c.alive[h] = nil, false
	c.free = append(c.free, h)
	c.live--
}

// visit calls fn(h, o) for every indexed set that is a duplicate of set,
// with o the size of their intersection. The order of calls is unspecified.
// fn must not modify the index.
func (c *core) visit(set []uint32, fn func(h int32, o int)) {
	a := len(set)
	if a == 0 {
		return
	}
	c.query++
	if c.query == 0 {
		clear(c.stamp)
		c.query = 1
	}
	lo, hi := sizeBounds(a)
	for _, r := range set[:prefixLen(a)] {
		if int(r) >= len(c.postings) {
			continue
		}
		for _, h := range c.postings[r] {
			if c.stamp[h] == c.query {
				continue
			}
			c.stamp[h] = c.query
			other := c.sets[h]
			b := len(other)
			if b < lo || b > hi {
				continue
			}
			if o := overlapAtLeast(set, other, minOverlap(a, b)); o >= 0 {
				fn(h, o)
			}
		}
	}
}

// best returns the handle of the indexed set most similar to set among its
// duplicates (ties to the smallest seq), with the overlap and union sizes,
// or h = −1 when set has no duplicate.
func (c *core) best(set []uint32) (h int32, o, u int) {
	h = -1
	c.visit(set, func(k int32, ko int) {
		ku := len(set) + len(c.sets[k]) - ko
		// ko/ku > o/u ⇔ ko·u > o·ku (sizes are small; no overflow).
		if h < 0 || ko*u > o*ku || (ko*u == o*ku && c.seq[k] < c.seq[h]) {
			h, o, u = k, ko, ku
		}
	})
	return h, o, u
}

// rankTexts tokenizes texts and returns their token sets encoded as sorted
// token ranks under a rarest-first order (ascending document frequency
// over texts, first appearance on ties), together with the vocabulary size.
// The sets share one backing array.
func rankTexts(texts []string) (sets [][]uint32, vocab int) {
	ids := make(map[string]uint32)
	var df []uint32
	arena := make([]uint32, 0, 12*len(texts))
	ends := make([]int, len(texts))
	var buf []byte
	var cur []uint32
	for i, t := range texts {
		cur = cur[:0]
		buf = scanTokens(t, buf, func(tok []byte) {
			id, ok := ids[string(tok)]
			if !ok {
				id = uint32(len(df))
				ids[string(tok)] = id
				df = append(df, 0)
			}
			cur = append(cur, id)
		})
		slices.Sort(cur)
		cur = slices.Compact(cur)
		for _, id := range cur {
			df[id]++
		}
		arena = append(arena, cur...)
		ends[i] = len(arena)
	}
	rank := rarestFirst(df)
	sets = make([][]uint32, len(texts))
	start := 0
	for i, end := range ends {
		s := arena[start:end:end]
		for k, id := range s {
			s[k] = rank[id]
		}
		slices.Sort(s)
		sets[i] = s
		start = end
	}
	return sets, len(df)
}

// rarestFirst returns the rank of every token id given the document
// frequencies df: ascending frequency, ascending id on ties.
func rarestFirst(df []uint32) []uint32 {
	order := make([]uint32, len(df))
	for i := range order {
		order[i] = uint32(i)
	}
	slices.SortFunc(order, func(x, y uint32) int {
		if c := cmp.Compare(df[x], df[y]); c != 0 {
			return c
		}
		return cmp.Compare(x, y)
	})
	rank := make([]uint32, len(df))
	for r, id := range order {
		rank[id] = uint32(r)
	}
	return rank
}

// Index is an incremental duplicate-search index over token sets, keyed by
// fact ID. It answers "which indexed sets are duplicates of this one"
// (Jaccard > DuplicateThreshold) without comparing against every entry, and
// supports adding, updating and removing entries at any time, e.g. facts
// created during a consolidation run or superseded by one. Entries keep the
// position in which they were first added (their creation order), which
// breaks ties in [Index.Best].
//
// An Index is not safe for concurrent use.
type Index struct {
	rank    map[string]uint32
	c       core
	handle  map[string]int32
	ids     []string // by handle
	nextSeq int
}

// NewIndex returns an empty index. corpus is optional: the token sets
// expected to be indexed or probed (for instance the texts of a branch's
// facts). It only fixes the internal token order (rarest first), which
// makes searches faster; results never depend on it.
func NewIndex(corpus []TokenSet) *Index {
	ix := &Index{rank: make(map[string]uint32), handle: make(map[string]int32)}
	var df []uint32
	for _, ts := range corpus {
		for _, tok := range ts.toks {
			id, ok := ix.rank[tok]
			if !ok {
				id = uint32(len(df))
				ix.rank[tok] = id
				df = append(df, 0)
			}
			df[id]++
		}
	}
	rank := rarestFirst(df)
	for tok, id := range ix.rank {
		ix.rank[tok] = rank[id]
	}
	return ix
}

// encode maps ts to sorted ranks. Unknown tokens get new ranks after every
// known one, recorded only when learn is set (a probe's unknown tokens can
// match nothing, and ranks above all known ones keep the order consistent).
func (ix *Index) encode(ts TokenSet, learn bool) []uint32 {
	out := make([]uint32, 0, len(ts.toks))
	next := uint32(len(ix.rank))
	for _, tok := range ts.toks {
		r, ok := ix.rank[tok]
		if !ok {
			r = next
			next++
			if learn {
				ix.rank[tok] = r
			}
		}
		out = append(out, r)
	}
	slices.Sort(out)
	return out
}

// Len returns the number of entries in the index.
func (ix *Index) Len() int { return ix.c.live }

// Add indexes ts under id, as the newest entry. If id is already indexed
// Add behaves as [Index.Update].
func (ix *Index) Add(id string, ts TokenSet) {
	if _, ok := ix.handle[id]; ok {
		ix.Update(id, ts)
		return
	}
	ix.put(id, ts, ix.nextSeq)
	ix.nextSeq++
}

func (ix *Index) put(id string, ts TokenSet, seq int) {
	h := ix.c.add(ix.encode(ts, true), seq)
	for int(h) >= len(ix.ids) {
		ix.ids = append(ix.ids, "")
	}
	ix.ids[h] = id
	ix.handle[id] = h
}

// Update replaces the token set indexed under id, keeping the entry's
// creation position. If id is not indexed Update behaves as [Index.Add].
func (ix *Index) Update(id string, ts TokenSet) {
	h, ok := ix.handle[id]
	if !ok {
		ix.Add(id, ts)
		return
	}
	seq := ix.c.seq[h]
	ix.Remove(id)
	ix.put(id, ts, seq)
}

// Remove drops id from the index (e.g. when its fact is superseded) and
// reports whether it was there.
func (ix *Index) Remove(id string) bool {
	h, ok := ix.handle[id]
	if !ok {
		return false
	}
	ix.c.remove(h)
	ix.ids[h] = ""
	delete(ix.handle, id)
	return true
}

// Best returns the indexed entry most similar to ts provided it is a
// duplicate (similarity > DuplicateThreshold), with that similarity. Ties
// on similarity go to the entry added first. ok is false when no entry is
// a duplicate of ts.
func (ix *Index) Best(ts TokenSet) (id string, similarity float64, ok bool) {
	h, o, u := ix.c.best(ix.encode(ts, false))
	if h < 0 {
		return "", 0, false
	}
	return ix.ids[h], float64(o) / float64(u), true
}

// Duplicates returns the IDs of all indexed entries that are duplicates of
// ts, in the order they were first added.
func (ix *Index) Duplicates(ts TokenSet) []string {
	var hs []int32
	ix.c.visit(ix.encode(ts, false), func(h int32, _ int) { hs = append(hs, h) })
	slices.SortFunc(hs, func(x, y int32) int { return cmp.Compare(ix.c.seq[x], ix.c.seq[y]) })
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = ix.ids[h]
	}
	return out
}
