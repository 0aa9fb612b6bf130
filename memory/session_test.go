package memory

import (
	"reflect"
	"slices"
	"testing"
)

const (
	base10 = "w0 w1 w2 w3 w4 w5 w6 w7 w8 w9"
	base18 = "w0 w1 w2 w3 w4 w5 w6 w7 w8 w9 w10 w11 w12 w13 w14 w15 w16 w17"
)

func TestConsolidateSessionNewFacts(t *testing.T) {
	obs := []Observation{
		{ID: "o1", Type: "insight", Text: "Retry the auth handler on timeout"},
		{ID: "o2", Type: "tool_use", Text: "ran go test"},
		{ID: "o3", Type: "decision", Text: "Use NATS JetStream for the event log"},
		{ID: "o4", Type: "discovery", Text: "The cache is never invalidated"},
		{ID: "o5", Type: "Insight", Text: "types are case-sensitive"},
		{ID: "o6", Type: "insight", Text: "Fixed the flaky queue test"},
	}
	got := ConsolidateSession(nil, obs, counterIDs("f"))
	want := SessionResult{
		Created: []Fact{
			{ID: "f1", Text: obs[0].Text, Category: CategorySecurity, Confidence: 0.7, Source: "o1"},
			{ID: "f2", Text: obs[2].Text, Category: CategoryDecision, Confidence: 0.7, Source: "o3"},
			{ID: "f3", Text: obs[3].Text, Category: CategoryDiscovery, Confidence: 0.7, Source: "o4"},
			{ID: "f4", Text: obs[5].Text, Category: CategoryBugFix, Confidence: 0.7, Source: "o6"},
		},
		Processed: 4, Skipped: 2,
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
}

func TestConsolidateSessionUpdatesToExactlyOne(t *testing.T) {
	active := []Fact{{ID: "a", Text: base10, Category: CategoryInsight, Confidence: 0.7}}
	var obs []Observation
	for _, id := range []string{"o1", "o2", "o3", "o4", "o5"} {
		obs = append(obs, Observation{ID: id, Type: "insight", Text: base10 + " w10"}) // J = 10/11
	}
	got := ConsolidateSession(active, obs, nil) // newID is not called: nothing is created
	want := SessionResult{
		Updated: []ConfidenceChange{
			{FactID: "a", From: 0.7, To: 0.8, Observation: "o1"},
			{FactID: "a", From: 0.8, To: 0.9, Observation: "o2"},
			{FactID: "a", From: 0.9, To: 1.0, Observation: "o3"},
		},
		Deduplicated: []string{"o4", "o5"},
		Processed:    5,
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	// 0.7+0.1+0.1+0.1 is exactly 1.0, and 0.7+0.1 exactly 0.8.
	if got.Updated[2].To != 1.0 || got.Updated[0].To != 0.8 {
		t.Fatalf("inexact confidences: %v", got.Updated)
	}
	if active[0].Confidence != 0.7 {
		t.Fatal("input modified")
	}
	if final := got.Apply(active); final[0].Confidence != 1.0 || len(final) != 1 {
		t.Fatalf("Apply = %+v", final)
	}
}

func TestConsolidateSessionCapsAndDedups(t *testing.T) {
	active := []Fact{
		{ID: "a", Text: "alpha beta gamma delta", Confidence: 0.95},
		{ID: "b", Text: "epsilon zeta eta theta", Confidence: 1.0},
		{ID: "c", Text: "iota kappa lambda mu", Confidence: 0.99},
	}
	obs := []Observation{
		{ID: "o1", Type: "insight", Text: "Alpha, beta, gamma & delta."},
		{ID: "o2", Type: "insight", Text: "theta eta zeta epsilon"},
		{ID: "o3", Type: "discovery", Text: "iota kappa lambda mu"},
	}
	got := ConsolidateSession(active, obs, nil)
	want := SessionResult{
		Updated: []ConfidenceChange{
			{FactID: "a", From: 0.95, To: 1.0, Observation: "o1"},
			{FactID: "c", From: 0.99, To: 1.0, Observation: "o3"},
		},
		Deduplicated: []string{"o2"},
		Processed:    3,
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
}

func TestConsolidateSessionThresholdAndEmpty(t *testing.T) {
	a17, b17 := pair(17, 18, 19) // J = 0.85 exactly
	active := []Fact{
		{ID: "a", Text: a17, Confidence: 0.7},
		{ID: "e", Text: "", Confidence: 0.7},
	}
	obs := []Observation{
		{ID: "o1", Type: "insight", Text: b17},   // 0.85: not a duplicate
		{ID: "o2", Type: "insight", Text: ""},    // empty: never a duplicate
		{ID: "o3", Type: "insight", Text: "a b"}, // no tokens either
	}
	got := ConsolidateSession(active, obs, counterIDs("n"))
	if len(got.Created) != 3 || len(got.Updated) != 0 || len(got.Deduplicated) != 0 {
		t.Fatalf("got %+v", got)
	}
}

func TestConsolidateSessionTiesAndRunFacts(t *testing.T) {
	active := []Fact{
		{ID: "x", Text: "unrelated text about dns", Confidence: 0.7},
		{ID: "a", Text: base18 + " ya", Confidence: 0.7}, // J with q = 18/20
		{ID: "b", Text: base18 + " yb", Confidence: 0.7}, // J with q = 18/20: tie, a is earlier
		{ID: "c", Text: base18 + " yc", Confidence: 0.7},
	}
	q := base18 + " qq"
	obs := []Observation{
		{ID: "o1", Type: "insight", Text: q},                        // tie a/b/c → a
		{ID: "o2", Type: "insight", Text: "brand new finding here"}, // created as n1
		{ID: "o3", Type: "insight", Text: "Brand new finding, here"},
		{ID: "o4", Type: "insight", Text: base18 + " yc"}, // c is identical (J = 1) beats a (18/20)
		{ID: "o5", Type: "insight", Text: q + " q2 q3"},   // creates n2 (J = 18/22 with a, b, c)
		{ID: "o6", Type: "insight", Text: q + " q2"},      // n2 (20/21) beats the older a, b, c (18/21)
	}
	got := ConsolidateSession(active, obs, counterIDs("n"))
	wantUpdated := []ConfidenceChange{
		{FactID: "a", From: 0.7, To: 0.8, Observation: "o1"},
		{FactID: "n1", From: 0.7, To: 0.8, Observation: "o3"},
		{FactID: "c", From: 0.7, To: 0.8, Observation: "o4"},
		{FactID: "n2", From: 0.7, To: 0.8, Observation: "o6"},
	}
	if !reflect.DeepEqual(got.Updated, wantUpdated) {
		t.Fatalf("Updated = %+v\nwant %+v", got.Updated, wantUpdated)
	}
	if ids := []string{got.Created[0].ID, got.Created[1].ID}; len(got.Created) != 2 || !slices.Equal(ids, []string{"n1", "n2"}) {
		t.Fatalf("Created = %+v", got.Created)
	}
	final := got.Apply(active)
	if len(final) != 6 || final[4].ID != "n1" || final[4].Confidence != 0.8 || got.Created[0].Confidence != 0.7 {
		t.Fatalf("Apply = %+v", final)
	}
}

// A raised confidence is seen by later observations of the same run.
func TestConsolidateSessionSeesUpdatedConfidence(t *testing.T) {
	active := []Fact{{ID: "a", Text: base10, Confidence: 0.9}}
	obs := []Observation{
		{ID: "o1", Type: "insight", Text: base10},
		{ID: "o2", Type: "insight", Text: base10},
	}
	got := ConsolidateSession(active, obs, nil)
	if len(got.Updated) != 1 || got.Updated[0].To != 1.0 || !slices.Equal(got.Deduplicated, []string{"o2"}) {
		t.Fatalf("got %+v", got)
	}
}
