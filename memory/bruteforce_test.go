package memory

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
)

// Brute-force, all-pairs reference implementations of the definitions,
// sharing nothing with the package but Tokens and Category.

// refSets interns the token sets of texts as sorted int slices.
func refSets(texts []string) [][]int {
	ids := map[string]int{}
	out := make([][]int, len(texts))
	for i, t := range texts {
		for _, tok := range Tokens(t).Slice() {
			id, ok := ids[tok]
			if !ok {
				id = len(ids)
				ids[tok] = id
			}
			out[i] = append(out[i], id)
		}
		slices.Sort(out[i])
	}
	return out
}

// refJaccard is the float64 Jaccard of two sorted int sets (0 if either is
// empty).
func refJaccard(a, b []int) float64 {
	o := 0
	for i, j := 0, 0; i < len(a) && j < len(b); {
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
	if o == 0 {
		return 0
	}
	return float64(o) / float64(len(a)+len(b)-o)
}

// refBest returns the index of the most similar set in facts (ties to the
// smallest index) if it is a duplicate, else -1.
func refBest(facts [][]int, s []int) int {
	best, bj := -1, 0.0
	for i, f := range facts {
		if j := refJaccard(s, f); j > bj {
			best, bj = i, j
		}
	}
	if bj > DuplicateThreshold {
		return best
	}
	return -1
}

func refConsolidateSession(active []Fact, obs []Observation, newID func() string) SessionResult {
	var res SessionResult
	texts := []string{}
	for _, f := range active {
		texts = append(texts, f.Text)
	}
	for _, o := range obs {
		texts = append(texts, o.Text)
	}
	sets := refSets(texts)
	facts := slices.Clone(sets[:len(active)])
	cur := slices.Clone(active)
	for k, o := range obs {
		if o.Type != "insight" && o.Type != "decision" && o.Type != "discovery" {
			res.Skipped++
			continue
		}
		res.Processed++
		s := sets[len(active)+k]
		if b := refBest(facts, s); b >= 0 {
			if cur[b].Confidence >= 1 {
				res.Deduplicated = append(res.Deduplicated, o.ID)
			} else {
				from := cur[b].Confidence
				to := min(float64(int64(from*100+10+0.5))/100, 1) // decimal +0.1
				cur[b].Confidence = to
				res.Updated = append(res.Updated, ConfidenceChange{FactID: cur[b].ID, From: from, To: to, Observation: o.ID})
			}
			continue
		}
		f := Fact{ID: newID(), Text: o.Text, Category: Category(o.Type, o.Text), Confidence: 0.7, Source: o.ID}
		res.Created = append(res.Created, f)
		cur = append(cur, f)
		facts = append(facts, s)
	}
	return res
}

func refGroupDuplicates(active []Fact) (keepers []string, superseded []Supersession) {
	texts := make([]string, len(active))
	for i, f := range active {
		texts[i] = f.Text
	}
	sets := refSets(texts)
	parent := make([]int, len(active))
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(x int) int {
		if parent[x] != x {
			parent[x] = find(parent[x])
		}
		return parent[x]
	}
	for i := range sets {
		for j := i + 1; j < len(sets); j++ {
			if refJaccard(sets[i], sets[j]) > DuplicateThreshold {
				parent[find(j)] = find(i)
			}
		}
	}
	groups := map[int][]int{}
	var order []int
	for i := range active {
		r := find(i)
		if _, ok := groups[r]; !ok {
			order = append(order, r)
		}
		groups[r] = append(groups[r], i)
	}
	keeperOf := map[int]int{}
	for _, r := range order {
		g := groups[r]
		if len(g) < 2 {
			continue
		}
		k := g[0]
		for _, m := range g {
			if c := active[m].Confidence; c > active[k].Confidence || (c == active[k].Confidence && m > k) {
				k = m
			}
		}
		keepers = append(keepers, active[k].ID)
		for _, m := range g {
			if m != k {
				keeperOf[m] = k
			}
		}
	}
	for i := range active {
		if k, ok := keeperOf[i]; ok {
			superseded = append(superseded, Supersession{FactID: active[i].ID, KeeperID: active[k].ID})
		}
	}
	return keepers, superseded
}

func refMerge(target, incoming []Fact, newID func() string) MergeResult {
	var res MergeResult
	texts := []string{}
	for _, f := range target {
		texts = append(texts, f.Text)
	}
	for _, f := range incoming {
		texts = append(texts, f.Text)
	}
	sets := refSets(texts)
	facts := slices.Clone(sets[:len(target)])
	cur := slices.Clone(target)
	for k, in := range incoming {
		s := sets[len(target)+k]
		if b := refBest(facts, s); b >= 0 {
			if in.Confidence > cur[b].Confidence {
				res.Updated = append(res.Updated, ConfidenceChange{FactID: cur[b].ID, From: cur[b].Confidence, To: in.Confidence, Observation: in.ID})
				cur[b].Confidence = in.Confidence
			} else {
				res.Deduplicated = append(res.Deduplicated, in.ID)
			}
			continue
		}
		f := Fact{ID: newID(), Text: in.Text, Category: in.Category, Confidence: in.Confidence, Source: in.ID}
		res.Created = append(res.Created, f)
		cur = append(cur, f)
		facts = append(facts, s)
	}
	return res
}

// propertyConfigs are the generated corpora the property tests run on: a
// realistic one, and a tiny-vocabulary one full of size-boundary cases.
var propertyConfigs = []struct {
	name            string
	vocab           int
	minLen, maxLen  int
	dupRate         float64
	nActive, nItems int
}{
	{"realistic", 3000, 5, 25, 0.2, 500, 5000},
	{"tiny-vocab", -1, 0, 24, 0.2, 300, 3000},
}

func propertyGen(t testing.TB, i int, seed uint64) *textGen {
	c := propertyConfigs[i]
	g := newTextGen(seed, nil, c.minLen, c.maxLen, c.dupRate)
	if c.vocab < 0 {
		g.vocab = baseWords[:30]
	} else {
		g.vocab = vocabulary(c.vocab, g.r)
	}
	g = newTextGen(seed, g.vocab, c.minLen, c.maxLen, c.dupRate)
	return g
}

func TestConsolidateSessionEqualsBruteForce(t *testing.T) {
	for ci, c := range propertyConfigs {
		t.Run(c.name, func(t *testing.T) {
			g := propertyGen(t, ci, 42)
			active := genFacts(g, c.nActive, "f")
			obs := genObservations(g, c.nItems)
			got := ConsolidateSession(active, obs, counterIDs("new"))
			want := refConsolidateSession(active, obs, counterIDs("new"))
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("ConsolidateSession differs from brute force:\n%s", diffSession(got, want))
			}
			t.Logf("%d obs: processed %d, skipped %d, created %d, updated %d, deduplicated %d",
				len(obs), got.Processed, got.Skipped, len(got.Created), len(got.Updated), len(got.Deduplicated))
			if len(got.Updated) == 0 || len(got.Deduplicated) == 0 || len(got.Created) == 0 {
				t.Fatalf("corpus does not exercise every outcome")
			}
		})
	}
}

func diffSession(got, want SessionResult) string {
	s := fmt.Sprintf("processed %d/%d skipped %d/%d created %d/%d updated %d/%d dedup %d/%d\n",
		got.Processed, want.Processed, got.Skipped, want.Skipped, len(got.Created), len(want.Created),
		len(got.Updated), len(want.Updated), len(got.Deduplicated), len(want.Deduplicated))
	for i := range min(len(got.Created), len(want.Created)) {
		if got.Created[i] != want.Created[i] {
			return s + fmt.Sprintf("first created diff at %d: %+v vs %+v", i, got.Created[i], want.Created[i])
		}
	}
	for i := range min(len(got.Updated), len(want.Updated)) {
		if got.Updated[i] != want.Updated[i] {
			return s + fmt.Sprintf("first updated diff at %d: %+v vs %+v", i, got.Updated[i], want.Updated[i])
		}
	}
	return s
}

func TestGroupDuplicatesEqualsBruteForce(t *testing.T) {
	for ci, c := range propertyConfigs {
		t.Run(c.name, func(t *testing.T) {
			g := propertyGen(t, ci, 7)
			facts := genFacts(g, c.nItems, "f")
			gk, gs := GroupDuplicates(facts)
			wk, ws := refGroupDuplicates(facts)
			if !reflect.DeepEqual(gk, wk) || !reflect.DeepEqual(gs, ws) {
				t.Fatalf("GroupDuplicates differs from brute force: %d/%d keepers, %d/%d superseded", len(gk), len(wk), len(gs), len(ws))
			}
			chains := 0
			groups := DuplicateGroups(facts)
			for _, gr := range groups {
				if len(gr.MemberIDs) > 2 {
					chains++
				}
			}
			t.Logf("%d facts: %d groups (%d with 3+ members), %d superseded", len(facts), len(gk), chains, len(gs))
			if len(gk) == 0 || chains == 0 {
				t.Fatalf("corpus does not exercise grouping")
			}
		})
	}
}

func TestMergeEqualsBruteForce(t *testing.T) {
	for ci, c := range propertyConfigs {
		t.Run(c.name, func(t *testing.T) {
			g := propertyGen(t, ci, 99)
			target := genFacts(g, c.nActive, "t")
			incoming := genFacts(g, c.nItems/2, "i")
			got := Merge(target, incoming, counterIDs("m"))
			want := refMerge(target, incoming, counterIDs("m"))
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("Merge differs from brute force: created %d/%d updated %d/%d dedup %d/%d",
					len(got.Created), len(want.Created), len(got.Updated), len(want.Updated), len(got.Deduplicated), len(want.Deduplicated))
			}
			if len(got.Updated) == 0 || len(got.Deduplicated) == 0 || len(got.Created) == 0 {
				t.Fatalf("corpus does not exercise every outcome")
			}
		})
	}
}
