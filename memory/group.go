package memory

import (
	"hash/maphash"
	"slices"
)

// Supersession records that a fact is superseded by the keeper of its
// duplicate group.
type Supersession struct {
	// FactID is the superseded fact.
	FactID string
	// KeeperID is the fact that supersedes it (its parent).
	KeeperID string
}

// DuplicateGroup is a set of two or more facts connected by the duplicate
// relation.
type DuplicateGroup struct {
	// KeeperID is the fact kept: the highest confidence, the newest (latest
	// in creation order) on ties.
	KeeperID string
	// MemberIDs are all facts of the group, keeper included, in creation
	// order.
	MemberIDs []string
}

// DuplicateGroups groups the active facts of a branch (given in creation
// order) by the transitive closure of the duplicate relation: two facts are
// in one group when a chain of facts connects them in which each
// consecutive pair has Jaccard similarity > DuplicateThreshold (so A~B and
// B~C put A and C together even when A and C are not duplicates). Only
// groups of two or more facts are returned, ordered by the creation
// position of their first member.
func DuplicateGroups(active []Fact) []DuplicateGroup {
	groups, keepers := groupPositions(active)
	out := make([]DuplicateGroup, len(groups))
	for i, ms := range groups {
		out[i] = DuplicateGroup{KeeperID: active[keepers[i]].ID, MemberIDs: make([]string, len(ms))}
		for k, m := range ms {
			out[i].MemberIDs[k] = active[m].ID
		}
	}
	return out
}

// groupPositions returns the duplicate groups of two or more facts as
// positions in active (ascending, groups ordered by first member) and the
// position of each group's keeper.
func groupPositions(active []Fact) (groups [][]int32, keepers []int32) {
	texts := make([]string, len(active))
	for i, f := range active {
		texts[i] = f.Text
	}
	sets, vocab := rankTexts(texts)

	parent := make([]int32, len(active))
	for i := range parent {
		parent[i] = int32(i)
	}
	find := func(x int32) int32 {
		for parent[x] != x {
			parent[x] = parent[parent[x]]
			x = parent[x]
		}
		return x
	}
	union := func(x, y int32) {
		x, y = find(x), find(y)
		if x != y {
			// Keep the smaller root; any choice is correct.
			if y < x {
				x, y = y, x
			}
			parent[y] = x
		}
	}

	// Identical non-empty sets are duplicates of each other (J = 1) and of
	// exactly the same other sets, so only the first of them is indexed;
	// the rest are joined to it directly. This keeps large clusters of
	// identical texts linear.
	seed := maphash.MakeSeed()
	first := make(map[uint64]int32, len(active))
	c := newCore(vocab, len(active))
	handleOf := make([]int32, 0, len(active)) // handle → fact position
	for i, set := range sets {
		if len(set) == 0 {
			continue
		}
		key := hashSet(seed, set)
		if j, ok := first[key]; ok && slices.Equal(sets[j], set) {
			union(j, int32(i))
			continue
		} else if !ok {
			first[key] = int32(i)
		} // on a hash collision the set is simply indexed as well
		c.visit(set, func(h int32, _ int) {
			union(handleOf[h], int32(i))
		})
		c.add(set, i)
		handleOf = append(handleOf, int32(i))
	}

	root := make([]int32, len(active))
	size := make([]int32, len(active))
	for i := range active {
		root[i] = find(int32(i))
		size[root[i]]++
	}
	slot := make([]int32, len(active)) // root → group index
	for i := range active {
		if root[i] == int32(i) && size[i] >= 2 { // a root is its group's first member
			slot[i] = int32(len(groups))
			groups = append(groups, make([]int32, 0, size[i]))
		}
	}
	for i := range active {
		if r := root[i]; size[r] >= 2 {
			groups[slot[r]] = append(groups[slot[r]], int32(i))
		}
	}
	for _, ms := range groups {
		keeper := ms[0]
		for _, m := range ms[1:] {
			if active[m].Confidence >= active[keeper].Confidence { // ≥: newest wins ties
				keeper = m
			}
		}
		keepers = append(keepers, keeper)
	}
	return groups, keepers
}

func hashSet(seed maphash.Seed, set []uint32) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	var b [4]byte
	for _, r := range set {
		b[0], b[1], b[2], b[3] = byte(r), byte(r>>8), byte(r>>16), byte(r>>24)
		h.Write(b[:])
	}
	return h.Sum64()
}

// GroupDuplicates runs the agent-level deduplication over a branch's active
// facts (in creation order), see [DuplicateGroups]. keepers are the kept
// fact of each group of two or more duplicates, in group order; superseded
// lists every other member of those groups with its keeper as parent, in
// the creation order of the superseded facts. Facts with no duplicate
// appear in neither list.
func GroupDuplicates(active []Fact) (keepers []string, superseded []Supersession) {
	groups, keeperPos := groupPositions(active)
	keeperOf := make([]int32, len(active))
	for i := range keeperOf {
		keeperOf[i] = -1
	}
	for g, ms := range groups {
		k := keeperPos[g]
		keepers = append(keepers, active[k].ID)
		for _, m := range ms {
			if m != k {
				keeperOf[m] = k
			}
		}
	}
	for i, k := range keeperOf {
		if k >= 0 {
			superseded = append(superseded, Supersession{FactID: active[i].ID, KeeperID: active[k].ID})
		}
	}
	return keepers, superseded
}
