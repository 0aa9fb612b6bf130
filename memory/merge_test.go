package memory

import (
	"reflect"
	"testing"
)

func TestMerge(t *testing.T) {
	target := []Fact{
		{ID: "t1", Text: base10, Category: CategoryBugFix, Confidence: 0.8},
		{ID: "t2", Text: base10 + " extra", Category: CategoryBugFix, Confidence: 0.7}, // ties with t1 for base10 + " other"
		{ID: "t3", Text: "use the outbox pattern", Category: CategoryPattern, Confidence: 0.9},
	}
	incoming := []Fact{
		{ID: "i1", Text: base10 + " other", Category: CategoryInsight, Confidence: 0.9}, // 10/11 with t1 and 10/12 with t2 → t1
		{ID: "i2", Text: "Use the outbox pattern.", Category: CategoryPattern, Confidence: 0.9},
		{ID: "i3", Text: "use the outbox pattern", Category: CategoryPattern, Confidence: 0.8},
		{ID: "i4", Text: "a brand new fact about nats", Category: CategoryArchitecture, Confidence: 0.85},
		{ID: "i5", Text: "brand new fact about NATS", Category: CategoryArchitecture, Confidence: 1.0}, // joins the fact created for i4
		{ID: "i6", Text: "", Category: CategoryInsight, Confidence: 0.7},
	}
	got := Merge(target, incoming, counterIDs("m"))
	want := MergeResult{
		Created: []Fact{
			{ID: "m1", Text: incoming[3].Text, Category: CategoryArchitecture, Confidence: 0.85, Source: "i4"},
			{ID: "m2", Text: "", Category: CategoryInsight, Confidence: 0.7, Source: "i6"},
		},
		Updated: []ConfidenceChange{
			{FactID: "t1", From: 0.8, To: 0.9, Observation: "i1"},
			{FactID: "m1", From: 0.85, To: 1.0, Observation: "i5"},
		},
		Deduplicated: []string{"i2", "i3"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	final := got.Apply(target)
	if len(final) != 5 || final[0].Confidence != 0.9 || final[3].Confidence != 1.0 || target[0].Confidence != 0.8 {
		t.Fatalf("Apply = %+v", final)
	}
}

func TestMergeTieGoesToEarliest(t *testing.T) {
	target := []Fact{
		{ID: "t1", Text: base18 + " ya", Confidence: 0.7},
		{ID: "t2", Text: base18 + " yb", Confidence: 0.7},
	}
	got := Merge(target, []Fact{{ID: "i", Text: base18 + " yc", Confidence: 0.9}}, nil)
	if len(got.Updated) != 1 || got.Updated[0].FactID != "t1" {
		t.Fatalf("got %+v", got)
	}
}
