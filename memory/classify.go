package memory

// DurableConfidence is the least confidence of a durable fact.
const DurableConfidence = 0.8

// durableCategories are the categories a durable fact may have.
var durableCategories = map[string]bool{
	CategoryBugFix:       true,
	CategoryArchitecture: true,
	CategoryPattern:      true,
	CategoryDecision:     true,
	CategorySecurity:     true,
	CategoryPerformance:  true,
}

// IsDurable reports whether f is durable: confidence ≥ 0.8 and category one
// of bug_fix, architecture, pattern, decision, security, performance
// (insight, discovery and anything else are never durable).
func IsDurable(f Fact) bool {
	return f.Confidence >= DurableConfidence && durableCategories[f.Category]
}

// Classify splits a task branch's facts into durable ones (see [IsDurable]),
// candidates for merging into the parent branch, and ephemeral ones, which
// stay on the task branch. Both lists hold fact IDs in input order.
func Classify(facts []Fact) (durable, ephemeral []string) {
	for _, f := range facts {
		if IsDurable(f) {
			durable = append(durable, f.ID)
		} else {
			ephemeral = append(ephemeral, f.ID)
		}
	}
	return durable, ephemeral
}
