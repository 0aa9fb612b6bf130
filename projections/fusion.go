package projections

import "sort"

// RRFK is the Reciprocal Rank Fusion constant (k = 60).
const RRFK = 60

// Fused is a chunk id with its fused score.
type Fused struct {
	ChunkID string
	Score   float64
}

// RRF fuses ranked lists of chunk ids by Reciprocal Rank Fusion: a chunk
// scores the sum over the lists of 1/(k + rank), rank counted from 1; a
// chunk missing from a list gets nothing from it. Ties are broken by chunk
// id, so the order is deterministic.
func RRF(k int, lists ...[]string) []Fused {
	scores := map[string]float64{}
	for _, l := range lists {
		seen := map[string]bool{}
		for i, id := range l {
			if seen[id] {
				continue
			}
			seen[id] = true
			scores[id] += 1 / float64(k+i+1)
		}
	}
	out := make([]Fused, 0, len(scores))
	for id, s := range scores {
		out = append(out, Fused{id, s})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Score != out[j].Score {
			return out[i].Score > out[j].Score
		}
		return out[i].ChunkID < out[j].ChunkID
	})
	return out
}
