package vine

import (
	"encoding/json"
	"reflect"
	"sort"
	"testing"
)

type frontierIDs struct {
	start, complete, blocked, expand []string
}

func idsOf(f Frontier) frontierIDs {
	return frontierIDs{nodeIDs(f.ReadyToStart), nodeIDs(f.ReadyToComplete), nodeIDs(f.Blocked), nodeIDs(f.NeedsExpansion)}
}

func TestNextRules(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		text string
		want frontierIDs
	}{
		{
			name: "leaves ready; dependants wait; planning counts as ready",
			text: vineText("[root] R (notstarted)\n-> a\n-> b", "[a] A (notstarted)", "[b] B (planning)"),
			want: frontierIDs{start: []string{"a", "b"}},
		},
		{
			name: "started and notstarted dependencies do not satisfy",
			text: vineText("[root] R (notstarted)\n-> a\n-> b", "[a] A (started)", "[b] B (complete)"),
			want: frontierIDs{},
		},
		{
			name: "complete and reviewing satisfy",
			text: vineText("[root] R (notstarted)\n-> a\n-> b", "[a] A (complete)", "[b] B (reviewing)"),
			want: frontierIDs{start: []string{"root"}},
		},
		{
			name: "blocked with satisfied dependencies is listed; with unsatisfied it is not",
			text: vineText("[root] R (notstarted)\n-> a\n-> b", "[a] A (blocked)\n-> c", "[b] B (blocked)\n-> d", "[c] C (complete)", "[d] D (started)"),
			want: frontierIDs{blocked: []string{"a"}},
		},
		{
			name: "reference with satisfied dependencies needs expansion; a reference never satisfies",
			text: vineText("[root] R (notstarted)\n-> r\n-> s", "ref [r] Ref (./r.vine)\n-> c", "ref [s] S (./s.vine)\n-> t", "[c] C (complete)", "[t] T (notstarted)"),
			want: frontierIDs{start: []string{"t"}, expand: []string{"r"}},
		},
		{
			name: "reviewing without a consuming dependant is not completable",
			text: vineText("[root] R (notstarted)\n-> a", "[a] A (reviewing)"),
			want: frontierIDs{start: []string{"root"}},
		},
		{
			name: "reviewing is completable when a dependant is started, reviewing or complete",
			text: vineText("[root] R (notstarted)\n-> p\n-> q\n-> s\n-> x\n-> y\n-> z",
				"[p] P (started)\n-> a", "[q] Q (reviewing)\n-> b", "[s] S (complete)\n-> c",
				"[x] X (notstarted)\n-> d", "[y] Y (planning)\n-> d", "[z] Z (blocked)\n-> d",
				"[a] A (reviewing)", "[b] B (reviewing)", "[c] C (reviewing)", "[d] D (reviewing)"),
			want: frontierIDs{start: []string{"x", "y"}, complete: []string{"a", "b", "c"}, blocked: []string{"z"}}, // q's dependant (root) has not started
		},
		{
			name: "reviewing with unsatisfied dependencies is not completable",
			text: vineText("[root] R (started)\n-> a", "[a] A (reviewing)\n-> b", "[b] B (started)"),
			want: frontierIDs{},
		},
		{
			name: "reviewing root: every other node complete or reviewing",
			text: vineText("[root] R (reviewing)\n-> a", "[a] A (complete)\n-> b", "[b] B (reviewing)"),
			want: frontierIDs{complete: []string{"root", "b"}},
		},
		{
			name: "reviewing root alone",
			text: vineText("[root] R (reviewing)"),
			want: frontierIDs{complete: []string{"root"}},
		},
		{
			name: "reviewing root waits while another node is not done",
			text: vineText("[root] R (reviewing)\n-> a\n-> b", "[a] A (complete)", "[b] B (reviewing)\n-> c", "[c] C (blocked)"),
			want: frontierIDs{blocked: []string{"c"}},
		},
		{
			name: "reviewing root waits while a reference remains",
			text: vineText("[root] R (reviewing)\n-> a\n-> r", "[a] A (complete)", "ref [r] Ref (./r.vine)"),
			want: frontierIDs{expand: []string{"r"}},
		},
		{
			name: "started and complete nodes are never listed",
			text: vineText("[root] R (started)\n-> a", "[a] A (complete)"),
			want: frontierIDs{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := Next(mustValid(t, tt.text))
			if got := idsOf(f); !reflect.DeepEqual(got, normIDs(tt.want)) {
				t.Errorf("got  %+v\nwant %+v", got, normIDs(tt.want))
			}
			if f.Progress.ReadyCount != len(f.ReadyToStart) {
				t.Errorf("ready_count %d != %d", f.Progress.ReadyCount, len(f.ReadyToStart))
			}
		})
	}
}

func normIDs(f frontierIDs) frontierIDs {
	fix := func(s []string) []string {
		if s == nil {
			return []string{}
		}
		return s
	}
	return frontierIDs{fix(f.start), fix(f.complete), fix(f.blocked), fix(f.expand)}
}

// TestNextHandOff walks the reviewing → complete hand-off of seed 001.
func TestNextHandOff(t *testing.T) {
	t.Parallel()
	g := mustValid(t, vineText("[root] Root (notstarted)\n-> mid", "[mid] Mid (notstarted)\n-> leaf", "[leaf] Leaf (notstarted)"))
	step := func(ops ...Op) {
		t.Helper()
		res, err := Apply(g, ops)
		if err != nil {
			t.Fatal(err)
		}
		g = res.Graph
	}
	check := func(want frontierIDs) {
		t.Helper()
		if got := idsOf(Next(g)); !reflect.DeepEqual(got, normIDs(want)) {
			t.Errorf("got  %+v\nwant %+v", got, normIDs(want))
		}
	}
	check(frontierIDs{start: []string{"leaf"}})
	step(Op{Op: OpClaim, ID: "leaf"})
	check(frontierIDs{})
	step(Op{Op: OpSetStatus, ID: "leaf", Status: StatusReviewing})
	check(frontierIDs{start: []string{"mid"}}) // reviewing satisfies; no consumer yet
	step(Op{Op: OpClaim, ID: "mid"})
	check(frontierIDs{complete: []string{"leaf"}}) // consumer started
	step(Op{Op: OpSetStatus, ID: "leaf", Status: StatusComplete}, Op{Op: OpSetStatus, ID: "mid", Status: StatusReviewing})
	check(frontierIDs{start: []string{"root"}})
	step(Op{Op: OpClaim, ID: "root"})
	check(frontierIDs{complete: []string{"mid"}})
	step(Op{Op: OpSetStatus, ID: "mid", Status: StatusComplete}, Op{Op: OpSetStatus, ID: "root", Status: StatusReviewing})
	check(frontierIDs{complete: []string{"root"}}) // reviewing-root special case
	step(Op{Op: OpSetStatus, ID: "root", Status: StatusComplete})
	f := Next(g)
	check(frontierIDs{})
	if f.Progress.RootStatus != "complete" || f.Progress.Percentage != 100 {
		t.Errorf("progress %+v", f.Progress)
	}
}

func TestNextProgress(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		text string
		want Progress
	}{
		{
			name: "1 of 8 complete rounds 12.5 up to 13",
			text: vineText("[r] R (notstarted)\n-> a\n-> b\n-> c\n-> d\n-> e\n-> f\n-> g", "[a] A (complete)",
				"[b] B (notstarted)", "[c] C (notstarted)", "[d] D (notstarted)", "[e] E (notstarted)", "[f] F (notstarted)", "[g] G (notstarted)"),
			want: Progress{Total: 8, Complete: 1, Percentage: 13, ReadyCount: 6, RootID: "r", RootStatus: "notstarted",
				ByStatus: map[string]int{"notstarted": 7, "planning": 0, "started": 0, "reviewing": 0, "complete": 1, "blocked": 0}},
		},
		{
			name: "2 of 3 complete is 67, reviewing does not count as complete",
			text: vineText("[r] R (reviewing)\n-> a\n-> b", "[a] A (complete)", "[b] B (complete)"),
			want: Progress{Total: 3, Complete: 2, Percentage: 67, ReadyCount: 0, RootID: "r", RootStatus: "reviewing",
				ByStatus: map[string]int{"notstarted": 0, "planning": 0, "started": 0, "reviewing": 1, "complete": 2, "blocked": 0}},
		},
		{
			name: "1 of 3 is 33; reference root reports ref",
			text: vineText("ref [r] R (./r.vine)\n-> a\n-> b", "[a] A (complete)", "[b] B (blocked)"),
			want: Progress{Total: 3, Complete: 1, Percentage: 33, ReadyCount: 0, RootID: "r", RootStatus: "ref",
				ByStatus: map[string]int{"notstarted": 0, "planning": 0, "started": 0, "reviewing": 0, "complete": 1, "blocked": 1, "ref": 1}},
		},
		{
			name: "1 of 200 is 0.5, rounds up to 1",
			text: func() string { s, _ := Serialize(chainGraph(200, 199)); return s }(),
			want: Progress{Total: 200, Complete: 1, Percentage: 1, ReadyCount: 1, RootID: "c0", RootStatus: "notstarted",
				ByStatus: map[string]int{"notstarted": 199, "planning": 0, "started": 0, "reviewing": 0, "complete": 1, "blocked": 0}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Next(mustValid(t, tt.text)).Progress; !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
	if p := Next(Graph{}).Progress; p.Total != 0 || p.Percentage != 0 {
		t.Errorf("empty graph progress %+v", p)
	}
	for _, c := range []struct{ part, total, want int }{{0, 1, 0}, {1, 2, 50}, {1, 3, 33}, {2, 3, 67}, {1, 6, 17}, {1, 40, 3}, {1, 400, 0}, {3, 8, 38}, {5, 5, 100}} {
		if got := percentHalfUp(c.part, c.total); got != c.want {
			t.Errorf("percentHalfUp(%d, %d) = %d, want %d", c.part, c.total, got, c.want)
		}
	}
}

// chainGraph is a chain c0 -> c1 -> ... with node complete at index done.
func chainGraph(n, done int) Graph {
	g := genGraph(n, 1)
	for i := range g.Nodes {
		g.Nodes[i].ID = "c" + g.Nodes[i].ID[1:]
		for k, d := range g.Nodes[i].Dependencies {
			g.Nodes[i].Dependencies[k] = "c" + d[1:]
		}
		g.Nodes[i].Status = StatusNotStarted
	}
	g.Nodes[done].Status = StatusComplete
	return g
}

func TestNextFixtures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file string
		want frontierIDs
	}{
		// review is reviewing but its only dependant is blocked: not consumed.
		{"repo-e2e-five-status.vine", frontierIDs{}},
		{"repo-examples-04-all-statuses.vine", frontierIDs{}},
		{"repo-examples-09-ref-advanced.vine", frontierIDs{}},
		{"repo-examples-08-nested-vine.vine", frontierIDs{}},
		{"repo-mcp-ref-parent.vine", frontierIDs{start: []string{"leaf"}}},
		{"repo-examples-06-project-bacchus.vine", frontierIDs{}}, // everything waits on started ui-render / examples
		{"repo-mcp-sample.vine", frontierIDs{start: []string{"leaf"}}},
		{"repo-e2e-deep-chain.vine", frontierIDs{}},
		{"repo-examples-03-diamond.vine", frontierIDs{}},
		{"repo-examples-05-decisions.vine", frontierIDs{}},
	}
	for _, tt := range tests {
		g := mustValid(t, readFile(t, "testdata/inputs/"+tt.file))
		if got := idsOf(Next(g)); !reflect.DeepEqual(got, normIDs(tt.want)) {
			t.Errorf("%s: got %+v, want %+v", tt.file, got, normIDs(tt.want))
		}
	}
}

// TestNextJSONShape pins the JSON field names transports rely on.
func TestNextJSONShape(t *testing.T) {
	t.Parallel()
	g := mustValid(t, vineText("[root] R (notstarted) @sprite(./r.svg)\n-> a\n-> r", "[a] A (complete)\n@artifact text/plain ./a.txt", "ref [r] Ref (./r.vine)"))
	b, err := json.Marshal(Next(g))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if got, want := keys(m), []string{"blocked", "needs_expansion", "progress", "ready_to_complete", "ready_to_start"}; !reflect.DeepEqual(got, want) {
		t.Errorf("frontier keys %v, want %v", got, want)
	}
	if got, want := keys(m["progress"].(map[string]any)), []string{"by_status", "complete", "percentage", "ready_count", "root_id", "root_status", "total"}; !reflect.DeepEqual(got, want) {
		t.Errorf("progress keys %v, want %v", got, want)
	}
	if m["blocked"] == nil || len(m["blocked"].([]any)) != 0 {
		t.Errorf("empty list must encode as [], got %v", m["blocked"])
	}
	ref := m["needs_expansion"].([]any)[0].(map[string]any)
	if got, want := keys(ref), []string{"attachments", "decisions", "dependencies", "description", "id", "kind", "shortName", "vine"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ref keys %v, want %v", got, want)
	}
	if ref["kind"] != "ref" || ref["vine"] != "./r.vine" {
		t.Errorf("ref json %v", ref)
	}
	b, _ = json.Marshal(g.Nodes[0])
	var task map[string]any
	_ = json.Unmarshal(b, &task)
	if got, want := keys(task), []string{"annotations", "attachments", "decisions", "dependencies", "description", "id", "kind", "shortName", "status"}; !reflect.DeepEqual(got, want) {
		t.Errorf("task keys %v, want %v", got, want)
	}
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestNextLinear: a node with very many reviewing dependencies and many
// dependants is classified without quadratic work (this would take minutes
// if each reviewing node scanned all nodes for dependants).
func TestNextLinear(t *testing.T) {
	t.Parallel()
	const n = 200000
	g := Graph{Nodes: make([]Node, 0, n+1)}
	root := Node{ID: "root", Kind: KindTask, ShortName: "Root", Status: StatusStarted}
	g.Nodes = append(g.Nodes, root)
	for i := range n {
		id := "r" + itoa(i)
		g.Nodes[0].Dependencies = append(g.Nodes[0].Dependencies, id)
		g.Nodes = append(g.Nodes, Node{ID: id, Kind: KindTask, ShortName: id, Status: StatusReviewing})
	}
	f := Next(g)
	if len(f.ReadyToComplete) != n {
		t.Fatalf("ready_to_complete = %d", len(f.ReadyToComplete))
	}
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}
