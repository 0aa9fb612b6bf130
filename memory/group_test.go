package memory

import (
	"reflect"
	"testing"
)

func TestGroupDuplicatesTransitive(t *testing.T) {
	// B~A (10/11) and B~C (10/11) but A≁C (10/12): one group of three.
	facts := []Fact{
		{ID: "A", Text: base10 + " xa", Confidence: 0.9},
		{ID: "x", Text: "something else entirely", Confidence: 0.9},
		{ID: "B", Text: base10, Confidence: 0.7},
		{ID: "C", Text: base10 + " xc", Confidence: 0.8},
	}
	if IsDuplicate(Tokens(facts[0].Text), Tokens(facts[3].Text)) {
		t.Fatal("A and C must not be direct duplicates")
	}
	keepers, sup := GroupDuplicates(facts)
	if !reflect.DeepEqual(keepers, []string{"A"}) {
		t.Fatalf("keepers = %v", keepers)
	}
	want := []Supersession{{FactID: "B", KeeperID: "A"}, {FactID: "C", KeeperID: "A"}}
	if !reflect.DeepEqual(sup, want) {
		t.Fatalf("superseded = %v, want %v", sup, want)
	}
	groups := DuplicateGroups(facts)
	if !reflect.DeepEqual(groups, []DuplicateGroup{{KeeperID: "A", MemberIDs: []string{"A", "B", "C"}}}) {
		t.Fatalf("groups = %+v", groups)
	}
}

func TestGroupDuplicatesKeeper(t *testing.T) {
	facts := []Fact{
		{ID: "g1a", Text: "alpha beta gamma", Confidence: 0.9},
		{ID: "g2a", Text: "one two three four", Confidence: 0.8},
		{ID: "g1b", Text: "Alpha beta gamma!", Confidence: 1.0},
		{ID: "g2b", Text: "four three two one", Confidence: 0.8}, // tie: newest wins
		{ID: "g1c", Text: "gamma beta alpha", Confidence: 1.0},   // tie at 1.0: newest wins
		{ID: "solo", Text: "nothing like the others", Confidence: 1.0},
		{ID: "e1", Text: "", Confidence: 1.0}, // empty texts are never duplicates
		{ID: "e2", Text: "", Confidence: 1.0},
		{ID: "g2c", Text: "one two three four", Confidence: 0.5},
	}
	keepers, sup := GroupDuplicates(facts)
	if !reflect.DeepEqual(keepers, []string{"g1c", "g2b"}) {
		t.Fatalf("keepers = %v", keepers)
	}
	want := []Supersession{
		{FactID: "g1a", KeeperID: "g1c"},
		{FactID: "g2a", KeeperID: "g2b"},
		{FactID: "g1b", KeeperID: "g1c"},
		{FactID: "g2c", KeeperID: "g2b"},
	}
	if !reflect.DeepEqual(sup, want) {
		t.Fatalf("superseded = %v\nwant %v", sup, want)
	}
}

func TestGroupDuplicatesNone(t *testing.T) {
	a17, b17 := pair(17, 18, 19)
	keepers, sup := GroupDuplicates([]Fact{{ID: "a", Text: a17}, {ID: "b", Text: b17}})
	if keepers != nil || sup != nil {
		t.Fatalf("J = 0.85 grouped: %v %v", keepers, sup)
	}
	if k, s := GroupDuplicates(nil); k != nil || s != nil {
		t.Fatal("nil input")
	}
}

// Many identical texts form one group, in linear time.
func TestGroupDuplicatesIdenticalCluster(t *testing.T) {
	facts := make([]Fact, 20000)
	for i := range facts {
		facts[i] = Fact{ID: string(rune('a'+i%26)) + string(rune('0'+i/26%10)) + string(rune(i)), Text: "same text every time", Confidence: 0.7}
	}
	facts[123].Confidence = 0.9
	keepers, sup := GroupDuplicates(facts)
	if len(keepers) != 1 || keepers[0] != facts[123].ID || len(sup) != len(facts)-1 {
		t.Fatalf("%d keepers (%v), %d superseded", len(keepers), keepers, len(sup))
	}
}
