package memory

import "math"

// Fact is a consolidated piece of knowledge on a branch.
type Fact struct {
	// ID identifies the fact.
	ID string
	// Text is the fact's statement; its token set drives deduplication.
	Text string
	// Category is one of the Category* constants.
	Category string
	// Confidence is in [0, 1].
	Confidence float64
	// Source is, for a fact created by this package, the ID of the
	// observation (session consolidation) or of the incoming fact (merge)
	// it was made from. Callers may leave it empty on input.
	Source string
}

// Observation is a raw observation recorded during a session.
type Observation struct {
	// ID identifies the observation.
	ID string
	// Type is the observation type; only "insight", "decision" and
	// "discovery" are consolidated.
	Type string
	// Text is the observation's content.
	Text string
}

// ConfidenceChange records one change of a fact's confidence.
type ConfidenceChange struct {
	// FactID is the fact whose confidence changed.
	FactID string
	// From and To are the confidence before and after the change.
	From, To float64
	// Observation is the ID of what caused the change: the observation in
	// a session consolidation, the incoming fact in a merge.
	Observation string
}

// SessionResult is the outcome of [ConsolidateSession].
type SessionResult struct {
	// Created are the new facts, in creation order, each with confidence
	// 0.7 (its confidence at creation) and Source set to its observation.
	Created []Fact
	// Updated are the confidence increments in the order they happened. A
	// fact may appear several times, including a fact of Created; applying
	// Created and then Updated in order gives the final state.
	Updated []ConfidenceChange
	// Deduplicated are the IDs of the observations that matched a fact
	// whose confidence was already 1.0, in order.
	Deduplicated []string
	// Processed counts the observations of type insight, decision or
	// discovery (each ends in exactly one of Created, Updated or
	// Deduplicated); Skipped counts the others.
	Processed, Skipped int
}

// Initial and increment confidences of session consolidation.
const (
	NewFactConfidence   = 0.7
	ConfidenceIncrement = 0.1
)

// round2 rounds x to two decimals.
func round2(x float64) float64 { return math.Round(x*100) / 100 }

// boost returns c + 0.1 rounded to two decimals and capped at 1.0.
func boost(c float64) float64 { return min(round2(c+ConfidenceIncrement), 1.0) }

// consolidated reports whether an observation type is consolidated.
func consolidated(typ string) bool {
	return typ == TypeInsight || typ == TypeDecision || typ == TypeDiscovery
}

// ConsolidateSession consolidates a session's observations into facts.
//
// active are the branch's active facts in creation order; obs are the
// session's observations in recorded order. Observations whose type is not
// insight, decision or discovery are skipped. Each other observation, in
// order, is compared with every active fact — the facts given and those
// created earlier in this run, with the confidences as updated earlier in
// this run — and the most similar one (Jaccard, ties to the earliest
// created) is taken:
//
//   - if its similarity exceeds DuplicateThreshold and its confidence is
//     below 1.0, its confidence becomes min(round2(c+0.1), 1.0) (see the
//     package documentation on rounding): an entry of Updated;
//   - if its similarity exceeds DuplicateThreshold and its confidence is
//     already 1.0 (or more), nothing changes: an entry of Deduplicated;
//   - otherwise (no fact, an empty text, or similarity ≤ 0.85) a new fact
//     is created with ID newID(), the observation's text, confidence 0.7,
//     category Category(type, text) and Source the observation ID.
//
// newID is only called for new facts. The inputs are not modified.
func ConsolidateSession(active []Fact, obs []Observation, newID func() string) SessionResult {
	var res SessionResult
	texts := make([]string, 0, len(active)+len(obs))
	for _, f := range active {
		texts = append(texts, f.Text)
	}
	var taken []int
	for i, o := range obs {
		if consolidated(o.Type) {
			taken = append(taken, i)
			texts = append(texts, o.Text)
		}
	}
	res.Processed, res.Skipped = len(taken), len(obs)-len(taken)
	sets, vocab := rankTexts(texts)

	// Handles equal creation positions: active facts first, then created
	// facts in order (nothing is removed).
	c := newCore(vocab, len(texts))
	ids := make([]string, len(active), len(texts))
	conf := make([]float64, len(active), len(texts))
	for i, f := range active {
		c.add(sets[i], i)
		ids[i], conf[i] = f.ID, f.Confidence
	}
	for k, i := range taken {
		o := obs[i]
		set := sets[len(active)+k]
		if h, _, _ := c.best(set); h >= 0 {
			if from := conf[h]; from >= 1.0 {
				res.Deduplicated = append(res.Deduplicated, o.ID)
			} else {
				conf[h] = boost(from)
				res.Updated = append(res.Updated, ConfidenceChange{FactID: ids[h], From: from, To: conf[h], Observation: o.ID})
			}
			continue
		}
		f := Fact{ID: newID(), Text: o.Text, Category: Category(o.Type, o.Text), Confidence: NewFactConfidence, Source: o.ID}
		res.Created = append(res.Created, f)
		c.add(set, len(ids))
		ids = append(ids, f.ID)
		conf = append(conf, f.Confidence)
	}
	return res
}

// Apply returns the facts that are active after the run: active (as given
// to ConsolidateSession) followed by the created facts, each with its final
// confidence. The inputs are not modified.
func (r SessionResult) Apply(active []Fact) []Fact {
	return applyChanges(active, r.Created, r.Updated)
}

// applyChanges returns base followed by created, with the last confidence
// recorded for each fact in changes.
func applyChanges(base, created []Fact, changes []ConfidenceChange) []Fact {
	out := make([]Fact, 0, len(base)+len(created))
	out = append(out, base...)
	out = append(out, created...)
	if len(changes) == 0 {
		return out
	}
	final := make(map[string]float64, len(changes))
	for _, ch := range changes {
		final[ch.FactID] = ch.To
	}
	for i := range out {
		if c, ok := final[out[i].ID]; ok {
			out[i].Confidence = c
		}
	}
	return out
}
