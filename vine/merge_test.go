package vine

import "testing"

const mergeBase = `vine 1.2.0
---
[root] Ship (notstarted)
-> a
-> b
---
[a] A (notstarted)
---
[b] B (notstarted)
`

func TestMerge3(t *testing.T) {
	base, err := Parse(mergeBase)
	if err != nil {
		t.Fatal(err)
	}
	claimed := base.Clone()
	claimed.Nodes[1].Status = StatusStarted
	for _, tc := range []struct {
		name          string
		theirs, ours  func(Graph) Graph
		check         func(t *testing.T, g Graph)
		wantConflicts int
	}{
		{name: "theirs only", theirs: func(g Graph) Graph { g.Nodes[2].Description = "hand"; return g }, ours: func(g Graph) Graph { return g },
			check: func(t *testing.T, g Graph) {
				if n, _ := g.Lookup("b"); n.Description != "hand" {
					t.Fatal(n)
				}
			}},
		{name: "both sides, different nodes", theirs: func(g Graph) Graph { g.Nodes[2].Description = "hand"; return g },
			ours: func(g Graph) Graph { g.Nodes[1].Status = StatusStarted; return g },
			check: func(t *testing.T, g Graph) {
				a, _ := g.Lookup("a")
				b, _ := g.Lookup("b")
				if a.Status != StatusStarted || b.Description != "hand" {
					t.Fatal(a, b)
				}
			}},
		{name: "same field both sides", theirs: func(g Graph) Graph { g.Nodes[2].ShortName = "X"; return g },
			ours: func(g Graph) Graph { g.Nodes[2].ShortName = "Y"; return g }, wantConflicts: 1,
			check: func(t *testing.T, g Graph) {
				if n, _ := g.Lookup("b"); n.ShortName != "Y" {
					t.Fatal(n)
				}
			}},
		{name: "claim never reverted (stale base)", theirs: func(g Graph) Graph { return base.Clone() },
			ours: func(g Graph) Graph { return g }, wantConflicts: 1,
			check: func(t *testing.T, g Graph) {
				if n, _ := g.Lookup("a"); n.Status != StatusStarted {
					t.Fatal(n)
				}
			}},
		{name: "node added by hand", theirs: func(g Graph) Graph {
			g.Nodes = append(g.Nodes, Node{ID: "c", Kind: KindTask, ShortName: "C", Status: StatusNotStarted})
			g.Nodes[0].Dependencies = []string{"a", "b", "c"}
			return g
		}, ours: func(g Graph) Graph { return g },
			check: func(t *testing.T, g Graph) {
				if _, ok := g.Lookup("c"); !ok || Validate(g) != nil {
					t.Fatal(g, Validate(g))
				}
			}},
		{name: "removed by hand but changed in the log", theirs: func(g Graph) Graph {
			g.Nodes = g.Nodes[:2]
			g.Nodes[0].Dependencies = []string{"a"}
			return g
		}, ours: func(g Graph) Graph { g.Nodes[2].Status = StatusComplete; return g }, wantConflicts: 1,
			check: func(t *testing.T, g Graph) {
				if _, ok := g.Lookup("b"); !ok {
					t.Fatal("b dropped")
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := base
			if tc.name == "claim never reverted (stale base)" {
				b = claimed
			}
			theirs := tc.theirs(b.Clone())
			ours := tc.ours(b.Clone())
			if tc.name == "claim never reverted (stale base)" {
				ours = claimed.Clone()
			}
			got, cs := Merge3(b, theirs, ours)
			if len(cs) != tc.wantConflicts {
				t.Fatalf("conflicts %v, want %d", cs, tc.wantConflicts)
			}
			tc.check(t, got)
		})
	}
}
