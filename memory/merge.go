package memory

// MergeResult is the outcome of [Merge].
type MergeResult struct {
	// Created are the new target facts, in order, each copying the text,
	// category and confidence of an incoming fact, with Source set to the
	// incoming fact's ID.
	Created []Fact
	// Updated are the target confidences raised by an incoming duplicate,
	// in order; Observation holds the incoming fact's ID.
	Updated []ConfidenceChange
	// Deduplicated are the IDs of the incoming facts that matched a target
	// fact whose confidence was already at least theirs.
	Deduplicated []string
}

// Merge merges facts into a target branch (agent → task branch, task →
// parent branch). target are the target branch's active facts in creation
// order; incoming are the facts to merge, in order.
//
// Each incoming fact, in order, is compared with the target's active facts,
// including the facts created earlier in this call and with confidences as
// raised earlier in this call. If the most similar one (Jaccard, ties to
// the earliest created) is a duplicate (similarity > DuplicateThreshold),
// its confidence becomes max(target, incoming): an entry of Updated when
// that raises it, of Deduplicated otherwise. Otherwise a new target fact is
// created with ID newID(), the incoming text, category and confidence, and
// Source the incoming fact's ID (so duplicates among the incoming facts
// collapse onto the first of them). The inputs are not modified.
func Merge(target []Fact, incoming []Fact, newID func() string) MergeResult {
	var res MergeResult
	texts := make([]string, 0, len(target)+len(incoming))
	for _, f := range target {
		texts = append(texts, f.Text)
	}
	for _, f := range incoming {
		texts = append(texts, f.Text)
	}
	sets, vocab := rankTexts(texts)

	c := newCore(vocab, len(texts))
	ids := make([]string, len(target), len(texts))
	conf := make([]float64, len(target), len(texts))
	for i, f := range target {
		c.add(sets[i], i)
		ids[i], conf[i] = f.ID, f.Confidence
	}
	for k, in := range incoming {
		set := sets[len(target)+k]
		if h, _, _ := c.best(set); h >= 0 {
			if from := conf[h]; in.Confidence > from {
				conf[h] = in.Confidence
				res.Updated = append(res.Updated, ConfidenceChange{FactID: ids[h], From: from, To: in.Confidence, Observation: in.ID})
			} else {
				res.Deduplicated = append(res.Deduplicated, in.ID)
			}
			continue
		}
		f := Fact{ID: newID(), Text: in.Text, Category: in.Category, Confidence: in.Confidence, Source: in.ID}
		res.Created = append(res.Created, f)
		c.add(set, len(ids))
		ids = append(ids, f.ID)
		conf = append(conf, f.Confidence)
	}
	return res
}

// Apply returns the target's active facts after the merge: target (as given
// to Merge) followed by the created facts, each with its final confidence.
// The inputs are not modified.
func (r MergeResult) Apply(target []Fact) []Fact {
	return applyChanges(target, r.Created, r.Updated)
}
