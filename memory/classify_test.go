package memory

import (
	"slices"
	"testing"
)

// seventy is a variable so that seventy+0.1 is float64 arithmetic, not an
// exact constant expression.
var seventy = 0.7

func TestClassify(t *testing.T) {
	if seventy+0.1 == 0.8 {
		t.Fatal("expected 0.7+0.1 != 0.8 in float64")
	}
	facts := []Fact{
		{ID: "bug80", Category: CategoryBugFix, Confidence: 0.8},
		{ID: "bug79", Category: CategoryBugFix, Confidence: 0.79},
		{ID: "arch100", Category: CategoryArchitecture, Confidence: 1.0},
		{ID: "pattern", Category: CategoryPattern, Confidence: 0.85},
		{ID: "decision", Category: CategoryDecision, Confidence: 0.8},
		{ID: "security", Category: CategorySecurity, Confidence: 0.9},
		{ID: "perf", Category: CategoryPerformance, Confidence: 0.8},
		{ID: "insight", Category: CategoryInsight, Confidence: 1.0},
		{ID: "discovery", Category: CategoryDiscovery, Confidence: 1.0},
		{ID: "unknown", Category: "misc", Confidence: 1.0},
		{ID: "boosted", Category: CategoryBugFix, Confidence: boost(NewFactConfidence)}, // 0.7+0.1 = 0.8 exactly
		{ID: "float", Category: CategoryBugFix, Confidence: seventy + 0.1},              // 0.7999999999999999
	}
	durable, ephemeral := Classify(facts)
	if want := []string{"bug80", "arch100", "pattern", "decision", "security", "perf", "boosted"}; !slices.Equal(durable, want) {
		t.Fatalf("durable = %v, want %v", durable, want)
	}
	if want := []string{"bug79", "insight", "discovery", "unknown", "float"}; !slices.Equal(ephemeral, want) {
		t.Fatalf("ephemeral = %v, want %v", ephemeral, want)
	}
	if d, e := Classify(nil); d != nil || e != nil {
		t.Fatal("nil input")
	}
}
