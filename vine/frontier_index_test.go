package vine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// randomValidGraph returns a valid graph of n nodes (n ≥ 1) with random
// statuses, about one reference in six, and random extra edges. Every node
// i > 0 is a dependency of an earlier node (so it is reachable from the
// root), and edges always go from an earlier to a later node (no cycles).
func randomValidGraph(r *rand.Rand, n int) Graph {
	statuses := Statuses()
	g := Graph{Metadata: map[string]string{MetaTitle: "Random"}, Nodes: make([]Node, n)}
	for i := range n {
		id := fmt.Sprintf("n%d", i)
		nd := Node{ID: id, ShortName: "Node " + id}
		if r.IntN(6) == 0 && (i > 0 || r.IntN(4) == 0) {
			nd.Kind, nd.URI = KindRef, "./"+id+".vine"
		} else {
			nd.Kind, nd.Status = KindTask, statuses[r.IntN(len(statuses))]
		}
		g.Nodes[i] = nd
	}
	for i := 1; i < n; i++ {
		parent := r.IntN(i)
		g.Nodes[parent].Dependencies = append(g.Nodes[parent].Dependencies, g.Nodes[i].ID)
		for range r.IntN(3) {
			j := r.IntN(i)
			g.Nodes[j].Dependencies = append(g.Nodes[j].Dependencies, g.Nodes[i].ID)
		}
	}
	for i := range g.Nodes {
		canonicalize(&g.Nodes[i])
	}
	return g
}

// randomStatus returns a random valid status.
func randomStatus(r *rand.Rand) Status {
	s := Statuses()
	return s[r.IntN(len(s))]
}

// randomOp returns a random operation on g, often one that fails (a claim
// on a task that is not ready, an edge that closes a cycle, a removal that
// leaves an island...). fresh numbers new ids.
func randomOp(r *rand.Rand, g Graph, fresh *int) []Op {
	pick := func() string { return g.Nodes[r.IntN(len(g.Nodes))].ID }
	switch r.IntN(11) {
	case 0, 1:
		return []Op{{Op: OpSetStatus, ID: pick(), Status: randomStatus(r)}}
	case 2:
		return []Op{{Op: OpClaim, ID: pick()}}
	case 3:
		d := fmt.Sprintf("edited %d", r.IntN(100))
		return []Op{{Op: OpUpdate, ID: pick(), Description: &d}}
	case 4:
		*fresh++
		id := fmt.Sprintf("x%d", *fresh)
		var deps []string
		for range r.IntN(3) {
			deps = append(deps, pick())
		}
		return []Op{
			{Op: OpAddTask, ID: id, Name: "New " + id, Status: randomStatus(r), DependsOn: deps},
			{Op: OpAddDep, TaskID: pick(), DepID: id},
		}
	case 5:
		*fresh++
		id := fmt.Sprintf("x%d", *fresh)
		return []Op{
			{Op: OpAddRef, ID: id, Name: "Ref " + id, Vine: "./" + id + ".vine"},
			{Op: OpAddDep, TaskID: pick(), DepID: id},
		}
	case 6:
		return []Op{{Op: OpAddDep, TaskID: pick(), DepID: pick()}}
	case 7:
		n := g.Nodes[r.IntN(len(g.Nodes))]
		if len(n.Dependencies) == 0 {
			return []Op{{Op: OpRemoveDep, TaskID: n.ID, DepID: pick()}}
		}
		return []Op{{Op: OpRemoveDep, TaskID: n.ID, DepID: n.Dependencies[r.IntN(len(n.Dependencies))]}}
	case 8:
		return []Op{{Op: OpRemoveTask, ID: pick()}}
	case 9:
		id := pick()
		return []Op{{Op: OpExtractToRef, ID: id, Vine: "./" + id + ".vine"}}
	default:
		return []Op{{Op: OpUpdateRefURI, ID: pick(), URI: fmt.Sprintf("./moved%d.vine", r.IntN(10))}}
	}
}

// randomStatusOp returns a random non-structural operation.
func randomStatusOp(r *rand.Rand, g Graph) Op {
	id := g.Nodes[r.IntN(len(g.Nodes))].ID
	switch r.IntN(4) {
	case 0:
		return Op{Op: OpClaim, ID: id}
	case 1:
		d := fmt.Sprintf("note %d", r.IntN(100))
		return Op{Op: OpUpdate, ID: id, Description: &d, Decisions: []string{"decided"}}
	}
	return Op{Op: OpSetStatus, ID: id, Status: randomStatus(r)}
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkIndex compares the index with Next on its graph, byte for byte.
func checkIndex(t testing.TB, x *FrontierIndex, step string) {
	t.Helper()
	got, want := mustJSON(t, x.Frontier()), mustJSON(t, Next(x.Graph()))
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: Frontier differs from Next\ngot  %s\nwant %s", step, got, want)
	}
	if p, q := x.Progress(), Next(x.Graph()).Progress; !reflect.DeepEqual(p, q) {
		t.Fatalf("%s: Progress %+v, want %+v", step, p, q)
	}
}

// checkState compares every maintained counter with a fresh index of the
// same graph, catching drift before it shows in the frontier.
func checkState(t testing.TB, x *FrontierIndex, step string) {
	t.Helper()
	y := NewFrontierIndex(x.Graph())
	switch {
	case !slices.Equal(x.unsat, y.unsat):
		t.Fatalf("%s: unsat %v, rebuilt %v", step, x.unsat, y.unsat)
	case !slices.Equal(x.consumers, y.consumers):
		t.Fatalf("%s: consumers %v, rebuilt %v", step, x.consumers, y.consumers)
	case !slices.Equal(x.class, y.class):
		t.Fatalf("%s: class %v, rebuilt %v", step, x.class, y.class)
	case x.classCount != y.classCount || x.satisfied != y.satisfied || x.complete != y.complete:
		t.Fatalf("%s: counts %v/%d/%d, rebuilt %v/%d/%d", step, x.classCount, x.satisfied, x.complete, y.classCount, y.satisfied, y.complete)
	case !reflect.DeepEqual(x.byStatus, y.byStatus):
		t.Fatalf("%s: byStatus %v, rebuilt %v", step, x.byStatus, y.byStatus)
	}
}

// TestFrontierIndexMatchesNext: on random valid graphs, thousands of random
// status changes and random batches (structural or not, many failing) keep
// the index identical to Next.
func TestFrontierIndexMatchesNext(t *testing.T) {
	t.Parallel()
	const seeds, steps = 30, 250
	var applied, failed, setOK, setFailed int
	for seed := range uint64(seeds) {
		r := rand.New(rand.NewPCG(seed, 0xF120))
		g := randomValidGraph(r, 1+r.IntN(40))
		if err := Validate(g); err != nil {
			t.Fatalf("seed %d: generator made an invalid graph: %v", seed, err)
		}
		x := NewFrontierIndex(g.Clone())
		checkIndex(t, x, fmt.Sprintf("seed %d: new", seed))
		fresh := 0
		for step := range steps {
			where := fmt.Sprintf("seed %d step %d", seed, step)
			before := x.Graph().Clone()
			beforeJSON := mustJSON(t, x.Frontier())
			var err error
			switch k := r.IntN(10); {
			case k < 5: // single status change
				id := before.Nodes[r.IntN(len(before.Nodes))].ID
				if r.IntN(20) == 0 {
					id = "missing"
				}
				err = x.SetStatus(id, randomStatus(r))
				where += " SetStatus " + id
				if err != nil {
					setFailed++
				} else {
					setOK++
				}
			default: // a batch: non-structural only, or mixed
				var ops []Op
				for range 1 + r.IntN(4) {
					if k < 7 {
						ops = append(ops, randomStatusOp(r, before))
					} else {
						ops = append(ops, randomOp(r, before, &fresh)...)
					}
				}
				var res BatchResult
				res, err = x.Apply(ops)
				where += fmt.Sprintf(" Apply %+v", ops)
				if err == nil {
					applied++
					if !res.Graph.Equal(x.Graph()) {
						t.Fatalf("%s: BatchResult.Graph differs from the held graph", where)
					}
				} else {
					failed++
				}
			}
			if err != nil {
				if c := ErrorCode(err); c == CodeInternal || c == "" {
					t.Fatalf("%s: unclassified error %v", where, err)
				}
				if !x.Graph().Equal(before) {
					t.Fatalf("%s: failed call changed the graph: %v", where, err)
				}
				if got := mustJSON(t, x.Frontier()); !bytes.Equal(got, beforeJSON) {
					t.Fatalf("%s: failed call changed the frontier: %v", where, err)
				}
			}
			checkIndex(t, x, where)
			if step%10 == 0 {
				checkState(t, x, where)
			}
		}
		checkState(t, x, fmt.Sprintf("seed %d: end", seed))
	}
	t.Logf("SetStatus ok %d, failed %d; batches applied %d, failed %d", setOK, setFailed, applied, failed)
	if applied < seeds*steps/10 || setOK < seeds*steps/5 {
		t.Errorf("too few successful changes to be meaningful")
	}
}

// randomRawGraph returns an unvalidated graph: duplicate ids, missing and
// repeated dependencies, self-loops, cycles, odd kinds and statuses.
func randomRawGraph(r *rand.Rand, n int) Graph {
	kinds := []Kind{KindTask, KindTask, KindTask, KindRef, "", "odd"}
	statuses := append(Statuses(), "", "odd")
	g := Graph{Nodes: make([]Node, n)}
	id := func() string { return fmt.Sprintf("i%d", r.IntN(n+2)) } // some ids missing
	for i := range n {
		nd := Node{ID: id(), Kind: kinds[r.IntN(len(kinds))], Status: statuses[r.IntN(len(statuses))]}
		for range r.IntN(4) {
			nd.Dependencies = append(nd.Dependencies, id())
		}
		g.Nodes[i] = nd
	}
	return g
}

// TestFrontierIndexRawGraphs: on graphs Validate would reject, the index
// still agrees with Next (a missing dependency is unsatisfied, duplicate
// ids resolve to their first node, odd kinds and statuses are classified
// and counted as Next does them).
func TestFrontierIndexRawGraphs(t *testing.T) {
	t.Parallel()
	statuses := append(Statuses(), "odd")
	for seed := range uint64(200) {
		r := rand.New(rand.NewPCG(seed, 0xBAD))
		n := 1 + r.IntN(12)
		x := NewFrontierIndex(randomRawGraph(r, n))
		checkIndex(t, x, fmt.Sprintf("seed %d: new", seed))
		for step := range 40 {
			where := fmt.Sprintf("seed %d step %d", seed, step)
			before := x.Graph().Clone()
			id, s := fmt.Sprintf("i%d", r.IntN(n+2)), statuses[r.IntN(len(statuses))]
			if err := x.SetStatus(id, s); err != nil && !x.Graph().Equal(before) {
				t.Fatalf("%s: failed SetStatus(%s, %s) changed the graph", where, id, s)
			}
			checkIndex(t, x, where)
		}
		checkState(t, x, fmt.Sprintf("seed %d: end", seed))
	}
	if p := NewFrontierIndex(Graph{}).Frontier(); !bytes.Equal(mustJSON(t, p), mustJSON(t, Next(Graph{}))) {
		t.Errorf("empty graph: %s", mustJSON(t, p))
	}
}

// TestFrontierIndexReviewingRoot: the reviewing root becomes ready to
// complete exactly when every other node is a task in complete or reviewing.
func TestFrontierIndexReviewingRoot(t *testing.T) {
	t.Parallel()
	type step struct {
		id     string
		status Status
		want   frontierIDs
	}
	tests := []struct {
		name  string
		text  string
		start frontierIDs
		steps []step
	}{
		{
			name:  "root waits for a blocked node, then completes with it",
			text:  vineText("[root] R (reviewing)\n-> a\n-> b", "[a] A (complete)", "[b] B (reviewing)\n-> c", "[c] C (blocked)"),
			start: frontierIDs{blocked: []string{"c"}},
			steps: []step{
				// b reviewing is consumed by the reviewing root, c by b.
				{"c", StatusReviewing, frontierIDs{complete: []string{"root", "b", "c"}}},
				{"c", StatusComplete, frontierIDs{complete: []string{"root", "b"}}},
				{"a", StatusStarted, frontierIDs{complete: []string{"b"}}},
				{"a", StatusComplete, frontierIDs{complete: []string{"root", "b"}}},
				{"b", StatusComplete, frontierIDs{complete: []string{"root"}}},
				{"root", StatusComplete, frontierIDs{}},
				{"root", StatusReviewing, frontierIDs{complete: []string{"root"}}},
				{"c", StatusPlanning, frontierIDs{start: []string{"c"}}},
			},
		},
		{
			name:  "root alone",
			text:  vineText("[root] R (reviewing)"),
			start: frontierIDs{complete: []string{"root"}},
			steps: []step{
				{"root", StatusStarted, frontierIDs{}},
				{"root", StatusPlanning, frontierIDs{start: []string{"root"}}},
				{"root", StatusReviewing, frontierIDs{complete: []string{"root"}}},
			},
		},
		{
			name:  "a remaining reference keeps the root waiting",
			text:  vineText("[root] R (reviewing)\n-> a\n-> r", "[a] A (complete)", "ref [r] Ref (./r.vine)"),
			start: frontierIDs{expand: []string{"r"}},
			steps: []step{
				{"a", StatusReviewing, frontierIDs{complete: []string{"a"}, expand: []string{"r"}}},
			},
		},
		{
			name:  "a reviewing leaf deep below is enough; a started one is not",
			text:  vineText("[root] R (reviewing)\n-> a", "[a] A (complete)\n-> b", "[b] B (complete)\n-> c", "[c] C (started)"),
			start: frontierIDs{},
			steps: []step{
				{"c", StatusReviewing, frontierIDs{complete: []string{"root", "c"}}},
				{"b", StatusBlocked, frontierIDs{blocked: []string{"b"}}}, // a blocked dependant does not consume c
				{"b", StatusComplete, frontierIDs{complete: []string{"root", "c"}}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			x := NewFrontierIndex(mustValid(t, tt.text))
			if got := idsOf(x.Frontier()); !reflect.DeepEqual(got, normIDs(tt.start)) {
				t.Fatalf("start: got %+v\nwant %+v", got, normIDs(tt.start))
			}
			checkIndex(t, x, "start")
			for k, s := range tt.steps {
				if err := x.SetStatus(s.id, s.status); err != nil {
					t.Fatal(err)
				}
				where := fmt.Sprintf("step %d (%s → %s)", k, s.id, s.status)
				if got := idsOf(x.Frontier()); !reflect.DeepEqual(got, normIDs(s.want)) {
					t.Fatalf("%s: got %+v\nwant %+v", where, got, normIDs(s.want))
				}
				checkIndex(t, x, where)
				checkState(t, x, where)
			}
		})
	}
}

// TestFrontierIndexHandOff walks the reviewing → complete hand-off of
// TestNextHandOff through FrontierIndex.Apply.
func TestFrontierIndexHandOff(t *testing.T) {
	t.Parallel()
	x := NewFrontierIndex(mustValid(t, vineText("[root] Root (notstarted)\n-> mid", "[mid] Mid (notstarted)\n-> leaf", "[leaf] Leaf (notstarted)")))
	step := func(ops ...Op) {
		t.Helper()
		if _, err := x.Apply(ops); err != nil {
			t.Fatal(err)
		}
	}
	check := func(want frontierIDs) {
		t.Helper()
		if got := idsOf(x.Frontier()); !reflect.DeepEqual(got, normIDs(want)) {
			t.Errorf("got  %+v\nwant %+v", got, normIDs(want))
		}
		checkIndex(t, x, "hand-off")
		checkState(t, x, "hand-off")
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
	// A structural batch (rebuild): a new leaf under root reopens the work.
	step(Op{Op: OpAddTask, ID: "more", Name: "More"}, Op{Op: OpAddDep, TaskID: "root", DepID: "more"})
	check(frontierIDs{start: []string{"more"}})
	step(Op{Op: OpClaim, ID: "more"}, Op{Op: OpSetStatus, ID: "more", Status: StatusComplete})
	check(frontierIDs{complete: []string{"root"}})
	step(Op{Op: OpSetStatus, ID: "root", Status: StatusComplete})
	check(frontierIDs{})
	if p := x.Progress(); p.RootStatus != "complete" || p.Percentage != 100 || p.Total != 4 || p.Complete != 4 {
		t.Errorf("progress %+v", p)
	}
}

// TestFrontierIndexErrors: bad calls fail with the right code and leave the
// index unchanged.
func TestFrontierIndexErrors(t *testing.T) {
	t.Parallel()
	text := vineText("[root] R (notstarted)\n-> a\n-> r", "[a] A (started)\n-> b", "[b] B (notstarted)", "ref [r] Ref (./r.vine)")
	x := NewFrontierIndex(mustValid(t, text))
	before := x.Graph().Clone()
	beforeJSON := mustJSON(t, x.Frontier())
	unchanged := func(what string) {
		t.Helper()
		if !x.Graph().Equal(before) {
			t.Errorf("%s changed the graph", what)
		}
		if got := mustJSON(t, x.Frontier()); !bytes.Equal(got, beforeJSON) {
			t.Errorf("%s changed the frontier:\n%s\n%s", what, got, beforeJSON)
		}
		checkIndex(t, x, what)
		checkState(t, x, what)
	}

	wantErr(t, x.SetStatus("nope", StatusComplete), CodeNotFound, `no node with id "nope"`)
	unchanged("unknown id")
	wantErr(t, x.SetStatus("r", StatusComplete), CodeInvalid, `"r" is a reference`)
	unchanged("status on a reference")
	wantErr(t, x.SetStatus("a", "done"), CodeInvalid, `unknown status "done"`)
	unchanged("unknown status")

	for _, tc := range []struct {
		name string
		ops  []Op
		code Code
		subs []string
	}{
		{"empty batch", nil, CodeInvalid, []string{"no operations"}},
		{"claim not ready", []Op{{Op: OpClaim, ID: "root"}}, CodeConflict, []string{"not ready to start"}},
		{"second op fails", []Op{{Op: OpSetStatus, ID: "b", Status: StatusComplete}, {Op: OpSetStatus, ID: "r", Status: StatusComplete}}, CodeInvalid, []string{"op 1", "reference"}},
		{"cycle rejected at the end", []Op{{Op: OpSetStatus, ID: "b", Status: StatusComplete}, {Op: OpAddDep, TaskID: "b", DepID: "root"}}, CodeInvalid, []string{"cycle"}},
		{"island rejected at the end", []Op{{Op: OpAddTask, ID: "c", Name: "C", Status: StatusComplete}}, CodeInvalid, []string{"island"}},
		{"unknown op", []Op{{Op: OpSetStatus, ID: "b", Status: StatusReviewing}, {Op: "explode"}}, CodeInvalid, []string{"unknown op"}},
	} {
		_, err := x.Apply(tc.ops)
		wantErr(t, err, tc.code, tc.subs...)
		unchanged(tc.name)
	}

	// The index still works after the failures.
	if _, err := x.Apply([]Op{{Op: OpSetStatus, ID: "b", Status: StatusReviewing}}); err != nil {
		t.Fatal(err)
	}
	checkIndex(t, x, "after failures")
	if got := idsOf(x.Frontier()); !reflect.DeepEqual(got, normIDs(frontierIDs{complete: []string{"b"}, expand: []string{"r"}})) {
		t.Errorf("after failures: %+v", got)
	}
}

// TestFrontierIndexAliasing: the graph returned in a BatchResult keeps its
// statuses when the index changes a status in place later.
func TestFrontierIndexAliasing(t *testing.T) {
	t.Parallel()
	x := NewFrontierIndex(mustValid(t, vineText("[root] R (notstarted)\n-> a", "[a] A (notstarted)")))
	res, err := x.Apply([]Op{{Op: OpClaim, ID: "a"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := x.SetStatus("a", StatusComplete); err != nil {
		t.Fatal(err)
	}
	if got := res.Graph.Nodes[1].Status; got != StatusStarted {
		t.Errorf("BatchResult.Graph changed by SetStatus: a is %s", got)
	}
	if got := x.Graph().Nodes[1].Status; got != StatusComplete {
		t.Errorf("held graph: a is %s", got)
	}
	checkIndex(t, x, "aliasing")
}

// TestFrontierIndexNonCanonicalUpdate: an update that canonicalises a node's
// non-canonical dependency list (a structural change in disguise) is still
// handled correctly.
func TestFrontierIndexNonCanonicalUpdate(t *testing.T) {
	t.Parallel()
	g := mustValid(t, vineText("[root] R (notstarted)\n-> a\n-> b", "[a] A (reviewing)", "[b] B (complete)"))
	g.Nodes[0].Dependencies = []string{"b", "a", "a"}
	if err := Validate(g); err != nil {
		t.Skipf("Validate rejects non-canonical dependencies: %v", err)
	}
	x := NewFrontierIndex(g)
	checkIndex(t, x, "start")
	if _, err := x.Apply([]Op{{Op: OpUpdate, ID: "root", Name: "Renamed"}, {Op: OpClaim, ID: "root"}}); err != nil {
		t.Fatal(err)
	}
	if got := x.Graph().Nodes[0].Dependencies; !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("dependencies %v", got)
	}
	checkIndex(t, x, "after update")
	checkState(t, x, "after update")
}

// FuzzFrontierIndex: any script of status changes and batches on a random
// valid graph keeps the index equal to Next.
func FuzzFrontierIndex(f *testing.F) {
	f.Add(uint64(1), []byte{0, 1, 2, 3, 4, 5, 6, 7})
	f.Add(uint64(7), []byte("reviewing root"))
	f.Add(uint64(42), bytes.Repeat([]byte{9, 200, 17}, 20))
	f.Fuzz(func(t *testing.T, seed uint64, script []byte) {
		if len(script) > 400 {
			return
		}
		r := rand.New(rand.NewPCG(seed, 0))
		x := NewFrontierIndex(randomValidGraph(r, 1+int(seed%30)))
		fresh := 0
		for k := 0; k+1 < len(script); k += 2 {
			g := x.Graph()
			before := g.Clone()
			var err error
			if a := script[k]; a < 160 {
				err = x.SetStatus(g.Nodes[int(a)%len(g.Nodes)].ID, Statuses()[int(script[k+1])%6])
			} else {
				br := rand.New(rand.NewPCG(uint64(script[k+1]), uint64(k)))
				if a < 208 {
					_, err = x.Apply([]Op{randomStatusOp(br, g), randomStatusOp(br, g)})
				} else {
					_, err = x.Apply(randomOp(br, g, &fresh))
				}
			}
			if err != nil && !x.Graph().Equal(before) {
				t.Fatalf("step %d: failed call changed the graph: %v", k, err)
			}
			checkIndex(t, x, fmt.Sprintf("step %d", k))
		}
		checkState(t, x, "end")
	})
}

// BenchmarkFrontierIndexRead reads the frontier of a 10,000-node graph from
// the index (goal < 1 ms; compare BenchmarkNext10k).
func BenchmarkFrontierIndexRead(b *testing.B) {
	x := NewFrontierIndex(genGraph(10000, 3))
	var f Frontier
	b.ReportAllocs()
	for b.Loop() {
		f = x.Frontier()
	}
	b.ReportMetric(float64(len(f.ReadyToStart)+len(f.ReadyToComplete)+len(f.Blocked)+len(f.NeedsExpansion)), "listed")
}

// BenchmarkFrontierIndexProgress reads only the progress snapshot.
func BenchmarkFrontierIndexProgress(b *testing.B) {
	x := NewFrontierIndex(genGraph(10000, 3))
	b.ReportAllocs()
	for b.Loop() {
		_ = x.Progress()
	}
}

// BenchmarkFrontierIndexSetStatus changes one task's status in a
// 10,000-node graph, cycling through tasks and statuses.
func BenchmarkFrontierIndexSetStatus(b *testing.B) {
	g := genGraph(10000, 3)
	x := NewFrontierIndex(g)
	ids := make([]string, 0, len(g.Nodes))
	for _, n := range g.Nodes {
		ids = append(ids, n.ID)
	}
	statuses := Statuses()
	b.ReportAllocs()
	k := 0
	for b.Loop() {
		if err := x.SetStatus(ids[k*7919%len(ids)], statuses[k%len(statuses)]); err != nil {
			b.Fatal(err)
		}
		k++
	}
}

// BenchmarkNewFrontierIndex10k builds the index (the cost of a rebuild).
func BenchmarkNewFrontierIndex10k(b *testing.B) {
	g := genGraph(10000, 3)
	b.ReportAllocs()
	for b.Loop() {
		_ = NewFrontierIndex(g)
	}
}

// BenchmarkFrontierIndexApplyOneOp10k folds one set_status batch into the
// index (Apply's own cost plus the incremental update; compare
// BenchmarkApplyOneOp10k).
func BenchmarkFrontierIndexApplyOneOp10k(b *testing.B) {
	x := NewFrontierIndex(genGraph(10000, 3))
	statuses := Statuses()
	b.ReportAllocs()
	k := 0
	for b.Loop() {
		if _, err := x.Apply([]Op{{Op: OpSetStatus, ID: "t42", Status: statuses[k%len(statuses)]}}); err != nil {
			b.Fatal(err)
		}
		k++
	}
}
