package vine

import (
	"fmt"
	"math/rand"
	"testing"
)

// TestTextUpdateIsSerialize: the text Update derives for a graph changed
// by any batch (statuses, claims, updates, added and removed tasks, edges,
// metadata) is exactly Serialize's, block positions included, over chains
// of updates.
func TestTextUpdateIsSerialize(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	g := genGraph(300, 3)
	txt, err := NewText(g)
	if err != nil {
		t.Fatal(err)
	}
	statuses := Statuses()
	for round := 0; round < 300; round++ {
		var ops []Op
		for k := 0; k <= rng.Intn(4); k++ {
			id := g.Nodes[1+rng.Intn(len(g.Nodes)-1)].ID
			switch rng.Intn(6) {
			case 0, 1:
				ops = append(ops, Op{Op: OpSetStatus, ID: id, Status: statuses[rng.Intn(len(statuses))]})
			case 2:
				d := fmt.Sprintf("changed %d\nsecond line %d", round, k)
				ops = append(ops, Op{Op: OpUpdate, ID: id, Description: &d, Decisions: []string{fmt.Sprintf("d%d", round)}})
			case 3:
				ops = append(ops, Op{Op: OpAddTask, ID: fmt.Sprintf("new%d-%d", round, k), Name: "New"}, Op{Op: OpAddDep, TaskID: g.Nodes[0].ID, DepID: fmt.Sprintf("new%d-%d", round, k)})
			case 4:
				ops = append(ops, Op{Op: OpUpdate, ID: id, Name: fmt.Sprintf("Renamed to a much longer name %d", round)})
			case 5:
				ops = append(ops, Op{Op: OpUpdate, ID: id, Annotations: map[string][]string{"owner": {"x", fmt.Sprint(round)}}})
			}
		}
		res, err := Apply(g, ops)
		if err != nil {
			continue // an invalid batch: nothing to write
		}
		if round%50 == 0 {
			res.Graph.Metadata = map[string]string{MetaTitle: fmt.Sprintf("t%d", round)}
		}
		next, changed, whole, err := txt.Update(res.Graph)
		if err != nil {
			t.Fatal(err)
		}
		want, err := Serialize(res.Graph)
		if err != nil {
			t.Fatal(err)
		}
		if next.String() != want {
			t.Fatalf("round %d (%+v): Update's text differs from Serialize's", round, ops)
		}
		fresh, _ := NewText(res.Graph)
		for i := range res.Graph.Nodes {
			if next.start[i] != fresh.start[i] || next.end[i] != fresh.end[i] {
				t.Fatalf("round %d: block %d at [%d,%d), want [%d,%d)", round, i, next.start[i], next.end[i], fresh.start[i], fresh.end[i])
			}
		}
		if !whole && len(changed) > len(ops)*2 {
			t.Fatalf("round %d: %d blocks rewritten for %d operations", round, len(changed), len(ops))
		}
		g, txt = res.Graph, next
	}
}

// TestTextRefusesWhatSerializeRefuses: a change that cannot be written
// (a description line that reads as a dependency) is refused by Update
// with Serialize's error.
func TestTextRefusesWhatSerializeRefuses(t *testing.T) {
	g := genGraph(20, 2)
	txt, err := NewText(g)
	if err != nil {
		t.Fatal(err)
	}
	bad := g.Clone()
	bad.Nodes[3].Description = "-> t1"
	_, serr := Serialize(bad)
	if _, _, _, err := txt.Update(bad); err == nil || serr == nil || err.Error() != serr.Error() {
		t.Fatalf("Update error %v, Serialize error %v", err, serr)
	}
}

func BenchmarkTextUpdateClaim50k(b *testing.B) {
	g := genGraph(50000, 3)
	txt, err := NewText(g)
	if err != nil {
		b.Fatal(err)
	}
	ng := g
	ng.Nodes = append([]Node(nil), g.Nodes...)
	ng.Nodes[25000].Status = StatusStarted
	for b.Loop() {
		if _, _, _, err := txt.Update(ng); err != nil {
			b.Fatal(err)
		}
	}
}

// TestApplyValidIsApply: on a valid graph, ApplyValid gives Apply's result
// and errors for status batches (claims of tasks not ready included) and
// for every other batch.
func TestApplyValidIsApply(t *testing.T) {
	g := genGraph(200, 3)
	batches := [][]Op{
		{{Op: OpSetStatus, ID: "t5", Status: StatusComplete}, {Op: OpSetStatus, ID: "t7", Status: StatusBlocked}},
		{{Op: OpClaim, ID: "t199"}},
		{{Op: OpClaim, ID: "t0"}},
		{{Op: OpSetStatus, ID: "nope", Status: StatusComplete}},
		{{Op: OpSetStatus, ID: "t3", Status: "finished"}},
		{{Op: OpAddDep, TaskID: "t150", DepID: "t0"}}, // a cycle: refused by validation
		{{Op: OpAddTask, ID: "n1", Name: "New"}},      // unreachable: refused by validation
	}
	for i, ops := range batches {
		want, werr := Apply(g, ops)
		got, gerr := ApplyValid(g, g.Index(), ops)
		if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
			t.Fatalf("batch %d: ApplyValid error %v, Apply error %v", i, gerr, werr)
		}
		if werr == nil && (!got.Graph.Equal(want.Graph) || got.Summary != want.Summary) {
			t.Fatalf("batch %d: results differ", i)
		}
	}
}
