package vine

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

const baseGraph = "vine 1.2.0\ntitle: Base\n---\n" +
	"[root] Root (notstarted)\n-> a\n-> b\n-> r\n---\n" +
	"[a] A (complete)\nFirst.\n> a decided\n@artifact text/plain ./a.txt\n---\n" +
	"[b] B (notstarted)\n-> c\n---\n" +
	"[c] C (reviewing)\n> c decided\n---\n" +
	"ref [r] R (./r.vine)\n-> c\n"

func desc(s string) *string { return &s }

func TestApplyOps(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		ops   []Op
		check func(t *testing.T, res BatchResult)
	}{
		{
			name: "add_task appends at the end of graph order with defaults",
			ops: []Op{
				{Op: OpAddTask, ID: " d ", Name: " D task ", DependsOn: []string{"c", "a", "c"}, Description: desc("line1\n\nline3"), Annotations: map[string][]string{"sprite": {" ./d.svg "}}},
				{Op: OpAddDep, TaskID: "b", DepID: "d"},
			},
			check: func(t *testing.T, res BatchResult) {
				want := Node{ID: "d", Kind: KindTask, ShortName: "D task", Status: StatusNotStarted, Description: "line1\n\nline3",
					Dependencies: []string{"a", "c"}, Annotations: map[string][]string{"sprite": {"./d.svg"}}}
				if last := res.Graph.Nodes[len(res.Graph.Nodes)-1]; !last.Equal(want) {
					t.Errorf("added %+v", last)
				}
			},
		},
		{
			name: "add_task with status, then depended on later in the batch",
			ops: []Op{
				{Op: OpAddDep, TaskID: "b", DepID: "e"}, // e does not exist yet: validated at the end
				{Op: OpAddTask, ID: "e", Name: "E", Status: StatusBlocked},
			},
			check: func(t *testing.T, res BatchResult) {
				if n, _ := res.Graph.Lookup("e"); n.Status != StatusBlocked {
					t.Errorf("e = %+v", n)
				}
				if n, _ := res.Graph.Lookup("b"); !reflect.DeepEqual(n.Dependencies, []string{"c", "e"}) {
					t.Errorf("b deps %v", n.Dependencies)
				}
			},
		},
		{
			name: "remove_task removes the node and edges to it",
			ops:  []Op{{Op: OpRemoveTask, ID: "a"}},
			check: func(t *testing.T, res BatchResult) {
				if _, ok := res.Graph.Lookup("a"); ok {
					t.Error("a still present")
				}
				if got := res.Graph.Nodes[0].Dependencies; !reflect.DeepEqual(got, []string{"b", "r"}) {
					t.Errorf("root deps %v", got)
				}
			},
		},
		{
			name: "remove_task then re-add the same id",
			ops:  []Op{{Op: OpRemoveTask, ID: "a"}, {Op: OpAddTask, ID: "a", Name: "A again"}, {Op: OpAddDep, TaskID: "root", DepID: "a"}},
			check: func(t *testing.T, res BatchResult) {
				n := res.Graph.Nodes[len(res.Graph.Nodes)-1]
				if n.ID != "a" || n.ShortName != "A again" {
					t.Errorf("last %+v", n)
				}
			},
		},
		{
			name: "set_status",
			ops:  []Op{{Op: OpSetStatus, ID: "c", Status: StatusComplete}},
			check: func(t *testing.T, res BatchResult) {
				if n, _ := res.Graph.Lookup("c"); n.Status != StatusComplete {
					t.Errorf("c = %s", n.Status)
				}
				if res.Summary != `1 operation(s) applied: set "c" → complete.` {
					t.Errorf("summary %q", res.Summary)
				}
			},
		},
		{
			name: "claim sets started and returns resolved dependencies",
			ops:  []Op{{Op: OpClaim, ID: "b"}},
			check: func(t *testing.T, res BatchResult) {
				c := res.Results[0].Claimed
				if c == nil || c.Node.Status != StatusStarted || c.Node.ID != "b" {
					t.Fatalf("claimed %+v", c)
				}
				want := []ResolvedDependency{{ID: "c", Kind: KindTask, ShortName: "C", Status: StatusReviewing, Decisions: []string{"c decided"}, Attachments: []Attachment{}}}
				if !reflect.DeepEqual(c.ResolvedDependencies, want) {
					t.Errorf("resolved %+v", c.ResolvedDependencies)
				}
				if c.Dependants != nil {
					t.Errorf("claim result carries dependants %v", c.Dependants)
				}
			},
		},
		{
			name: "claim a planning task whose dependency completed earlier in the batch",
			ops: []Op{
				{Op: OpAddTask, ID: "p", Name: "P", Status: StatusPlanning, DependsOn: []string{"a"}},
				{Op: OpAddDep, TaskID: "b", DepID: "p"},
				{Op: OpClaim, ID: "p"},
			},
			check: func(t *testing.T, res BatchResult) {
				c := res.Results[2].Claimed
				if c.ResolvedDependencies[0].Attachments[0].URI != "./a.txt" || c.ResolvedDependencies[0].Decisions[0] != "a decided" {
					t.Errorf("claimed %+v", c)
				}
			},
		},
		{
			name: "update: name, description, decisions appended, attachments grouped, annotations merged",
			ops: []Op{
				{Op: OpUpdate, ID: "a", Annotations: map[string][]string{"x": {"1"}, "y": {"2"}}},
				{Op: OpUpdate, ID: "a", Name: "A2", Description: desc(""), Decisions: []string{"> tests pass", "coverage 94%"},
					Attachments: []Attachment{{ClassFile, "application/pdf", "./r.pdf"}, {ClassArtifact, "text/html", " ./cov.html "}},
					Annotations: map[string][]string{"x": nil, "y": {"3", "4"}}},
			},
			check: func(t *testing.T, res BatchResult) {
				n, _ := res.Graph.Lookup("a")
				want := Node{ID: "a", Kind: KindTask, ShortName: "A2", Status: StatusComplete,
					Decisions:   []string{"a decided", "tests pass", "coverage 94%"},
					Attachments: []Attachment{{ClassArtifact, "text/plain", "./a.txt"}, {ClassArtifact, "text/html", "./cov.html"}, {ClassFile, "application/pdf", "./r.pdf"}},
					Annotations: map[string][]string{"y": {"3", "4"}}}
				if !n.Equal(want) {
					t.Errorf("got  %+v\nwant %+v", n, want)
				}
			},
		},
		{
			name: "update a reference's name and decisions",
			ops:  []Op{{Op: OpUpdate, ID: "r", Name: "Ref", Decisions: []string{"why"}}},
			check: func(t *testing.T, res BatchResult) {
				if n, _ := res.Graph.Lookup("r"); n.ShortName != "Ref" || n.Decisions[0] != "why" || !n.IsRef() {
					t.Errorf("r = %+v", n)
				}
			},
		},
		{
			name: "CRLF in a description becomes LF",
			ops:  []Op{{Op: OpUpdate, ID: "b", Description: desc("one\r\ntwo\r\n")}},
			check: func(t *testing.T, res BatchResult) {
				if n, _ := res.Graph.Lookup("b"); n.Description != "one\ntwo\n" {
					t.Errorf("description %q", n.Description)
				}
			},
		},
		{
			name: "add_dep inserts sorted; remove_dep",
			ops:  []Op{{Op: OpAddDep, TaskID: "b", DepID: "a"}, {Op: OpRemoveDep, TaskID: "root", DepID: "a"}},
			check: func(t *testing.T, res BatchResult) {
				b, _ := res.Graph.Lookup("b")
				root, _ := res.Graph.Lookup("root")
				if !reflect.DeepEqual(b.Dependencies, []string{"a", "c"}) || !reflect.DeepEqual(root.Dependencies, []string{"b", "r"}) {
					t.Errorf("b %v root %v", b.Dependencies, root.Dependencies)
				}
			},
		},
		{
			name: "add_ref and update_ref_uri",
			ops: []Op{
				{Op: OpAddRef, ID: "infra", Name: "Infra", Vine: "./infra.vine", Description: desc("VPC and DNS."), DependsOn: []string{"c"}, Decisions: []string{"> terraform"}},
				{Op: OpAddDep, TaskID: "root", DepID: "infra"},
				{Op: OpUpdateRefURI, ID: "r", URI: "./other.vine"},
			},
			check: func(t *testing.T, res BatchResult) {
				n, _ := res.Graph.Lookup("infra")
				want := Node{ID: "infra", Kind: KindRef, ShortName: "Infra", URI: "./infra.vine", Description: "VPC and DNS.", Dependencies: []string{"c"}, Decisions: []string{"terraform"}}
				if !n.Equal(want) {
					t.Errorf("infra %+v", n)
				}
				if r, _ := res.Graph.Lookup("r"); r.URI != "./other.vine" {
					t.Errorf("r uri %q", r.URI)
				}
			},
		},
		{
			name: "extract_to_ref leaves a reference and returns the child graph",
			ops:  []Op{{Op: OpExtractToRef, ID: "a", Vine: "./a.vine", RefName: "A module"}},
			check: func(t *testing.T, res BatchResult) {
				ex := res.Results[0].Extracted
				if ex == nil || ex.ID != "a" || ex.Vine != "./a.vine" {
					t.Fatalf("extracted %+v", ex)
				}
				ref, _ := res.Graph.Lookup("a")
				if !ref.Equal(Node{ID: "a", Kind: KindRef, ShortName: "A module", URI: "./a.vine"}) {
					t.Errorf("ref %+v", ref)
				}
				want := Graph{Metadata: map[string]string{"title": "A"}, Nodes: []Node{{ID: "a", Kind: KindTask, ShortName: "A", Status: StatusComplete,
					Description: "First.", Decisions: []string{"a decided"}, Attachments: []Attachment{{ClassArtifact, "text/plain", "./a.txt"}}}}}
				if !ex.Graph.Equal(want) {
					t.Errorf("child %+v", ex.Graph)
				}
			},
		},
		{
			name: "create builds a new graph from the following add_task",
			ops: []Op{
				{Op: OpCreate},
				{Op: OpAddTask, ID: "goal", Name: "Goal", DependsOn: []string{"step"}},
				{Op: OpAddTask, ID: "step", Name: "Step"},
			},
			check: func(t *testing.T, res BatchResult) {
				if got := nodeIDs(res.Graph.Nodes); !reflect.DeepEqual(got, []string{"goal", "step"}) || len(res.Graph.Metadata) != 0 {
					t.Errorf("graph %+v", res.Graph)
				}
				if res.Summary != `3 operation(s) applied: created graph; added task "goal"; added task "step".` {
					t.Errorf("summary %q", res.Summary)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := mustValid(t, baseGraph)
			before := g.Clone()
			res, err := Apply(g, tt.ops)
			if err != nil {
				t.Fatal(err)
			}
			if !g.Equal(before) {
				t.Fatal("Apply modified its input graph")
			}
			if len(res.Results) != len(tt.ops) {
				t.Fatalf("%d results", len(res.Results))
			}
			tt.check(t, res)
			// The result is valid and writable, and reads back equal.
			s, err := Serialize(res.Graph)
			if err != nil {
				t.Fatal(err)
			}
			if back := mustValid(t, s); !back.Equal(res.Graph) {
				t.Errorf("result does not round-trip:\n%s", s)
			}
		})
	}
}

func TestApplyFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		ops  []Op
		code Code
		msg  string
	}{
		{"no operations", nil, CodeInvalid, "no operations"},
		{"unknown op", []Op{{Op: OpSetStatus, ID: "b", Status: StatusStarted}, {Op: "frobnicate"}}, CodeInvalid, `op 1 (frobnicate): unknown op "frobnicate"`},
		{"missing op", []Op{{ID: "b"}}, CodeInvalid, `"op" field is required`},
		{"add_task duplicate id", []Op{{Op: OpAddTask, ID: "a", Name: "A"}}, CodeInvalid, `duplicate id: a node with id "a" already exists`},
		{"add_task bad id", []Op{{Op: OpAddTask, ID: "a b", Name: "A"}}, CodeInvalid, "outside the id grammar"},
		{"add_task no name", []Op{{Op: OpAddTask, ID: "d"}}, CodeInvalid, "name is required"},
		{"add_task bad status", []Op{{Op: OpAddTask, ID: "d", Name: "D", Status: "done"}}, CodeInvalid, `unknown status "done"`},
		{"add_task bad dependsOn", []Op{{Op: OpAddTask, ID: "d", Name: "D", DependsOn: []string{"x y"}}}, CodeInvalid, "dependsOn[0]"},
		{"add_task island", []Op{{Op: OpAddTask, ID: "d", Name: "D"}}, CodeInvalid, `island: "d" not reachable`},
		{"add_task unknown dependency at the end", []Op{{Op: OpAddTask, ID: "d", Name: "D", DependsOn: []string{"zzz"}}, {Op: OpAddDep, TaskID: "b", DepID: "d"}}, CodeInvalid, `unknown dependency: "d" -> "zzz"`},
		{"add_task unwritable description", []Op{{Op: OpAddTask, ID: "d", Name: "D", Description: desc("-> a")}}, CodeInvalid, `starts with "-> "`},
		{"add_task empty annotation", []Op{{Op: OpAddTask, ID: "d", Name: "D", Annotations: map[string][]string{"f": {}}}}, CodeInvalid, "has no values"},
		{"add_task name misread", []Op{{Op: OpAddTask, ID: "d", Name: "a\nb"}}, CodeInvalid, "line break"},
		{"remove root", []Op{{Op: OpRemoveTask, ID: "root"}}, CodeInvalid, `cannot remove the root "root"`},
		{"remove unknown", []Op{{Op: OpRemoveTask, ID: "zzz"}}, CodeNotFound, `no node with id "zzz"`},
		{"remove leaves an island", []Op{{Op: OpRemoveTask, ID: "b"}, {Op: OpRemoveDep, TaskID: "r", DepID: "c"}}, CodeInvalid, `island: "c"`},
		{"set_status on a reference", []Op{{Op: OpSetStatus, ID: "r", Status: StatusComplete}}, CodeInvalid, "is a reference, not a task"},
		{"set_status bad status", []Op{{Op: OpSetStatus, ID: "b", Status: "Done"}}, CodeInvalid, `unknown status "Done"`},
		{"set_status unknown id", []Op{{Op: OpSetStatus, ID: "zzz", Status: StatusComplete}}, CodeNotFound, "zzz"},
		{"claim with unsatisfied dependency", []Op{{Op: OpClaim, ID: "root"}}, CodeConflict, `task "root" is not ready to start: dependency "b" is notstarted`},
		{"claim with reference dependency", []Op{{Op: OpRemoveDep, TaskID: "root", DepID: "b"}, {Op: OpAddDep, TaskID: "b", DepID: "a"}, {Op: OpAddDep, TaskID: "r", DepID: "b"}, {Op: OpClaim, ID: "root"}}, CodeConflict, `dependency "r" is an unexpanded reference`},
		{"claim twice", []Op{{Op: OpClaim, ID: "b"}, {Op: OpClaim, ID: "b"}}, CodeConflict, `task "b" is started, not ready to start`},
		{"claim complete task", []Op{{Op: OpClaim, ID: "a"}}, CodeConflict, `task "a" is complete`},
		{"claim a reference", []Op{{Op: OpClaim, ID: "r"}}, CodeInvalid, "is a reference"},
		{"claim unknown", []Op{{Op: OpClaim, ID: "zzz"}}, CodeNotFound, "zzz"},
		{"update nothing", []Op{{Op: OpUpdate, ID: "a"}}, CodeInvalid, "nothing to update"},
		{"update does not take status", []Op{{Op: OpUpdate, ID: "a", Name: "A", Status: StatusComplete}}, CodeInvalid, `update does not take "status" (it takes id, name, description, decisions, attachments, annotations)`},
		{"add_dep does not take id", []Op{{Op: OpAddDep, ID: "b", DepID: "a"}}, CodeInvalid, `add_dep does not take "id"`},
		{"create takes no arguments", []Op{{Op: OpCreate, Name: "x"}}, CodeInvalid, `create takes no arguments, got "name"`},
		{"update attachments on a reference", []Op{{Op: OpUpdate, ID: "r", Attachments: []Attachment{{ClassFile, "text/plain", "x"}}}}, CodeInvalid, "attachment on reference"},
		{"update bad attachment class", []Op{{Op: OpUpdate, ID: "a", Attachments: []Attachment{{"note", "text/plain", "x"}}}}, CodeInvalid, `class "note"`},
		{"update bad mime", []Op{{Op: OpUpdate, ID: "a", Attachments: []Attachment{{ClassFile, "pdf", "x"}}}}, CodeInvalid, `mime "pdf"`},
		{"update decision with newline", []Op{{Op: OpUpdate, ID: "a", Decisions: []string{"a\nb"}}}, CodeInvalid, "contains a line break"},
		{"update description misread", []Op{{Op: OpUpdate, ID: "a", Description: desc("x\n> y")}}, CodeInvalid, `starts with "> "`},
		{"add_dep creates a cycle", []Op{{Op: OpAddDep, TaskID: "c", DepID: "b"}}, CodeInvalid, "cycle: b -> c -> b"},
		{"add_dep existing", []Op{{Op: OpAddDep, TaskID: "b", DepID: "c"}}, CodeInvalid, `"b" already depends on "c"`},
		{"add_dep missing args", []Op{{Op: OpAddDep, TaskID: "b"}}, CodeInvalid, "taskId and depId are required"},
		{"add_dep unknown target", []Op{{Op: OpAddDep, TaskID: "b", DepID: "zzz"}}, CodeInvalid, `unknown dependency: "b" -> "zzz"`},
		{"remove_dep absent", []Op{{Op: OpRemoveDep, TaskID: "b", DepID: "a"}}, CodeNotFound, `"b" does not depend on "a"`},
		{"add_ref without vine", []Op{{Op: OpAddRef, ID: "x", Name: "X"}}, CodeInvalid, "vine (the referenced file) is required"},
		{"add_ref uri with space", []Op{{Op: OpAddRef, ID: "x", Name: "X", Vine: "a b.vine"}}, CodeInvalid, "one non-empty word"},
		{"update_ref_uri on a task", []Op{{Op: OpUpdateRefURI, ID: "a", URI: "./x.vine"}}, CodeInvalid, "is a task, not a reference"},
		{"update_ref_uri empty", []Op{{Op: OpUpdateRefURI, ID: "r"}}, CodeInvalid, "uri is required"},
		{"extract a reference", []Op{{Op: OpExtractToRef, ID: "r", Vine: "./x.vine"}}, CodeInvalid, "is a reference"},
		{"extract without vine", []Op{{Op: OpExtractToRef, ID: "a"}}, CodeInvalid, "vine (the file to extract to) is required"},
		{"create not first", []Op{{Op: OpSetStatus, ID: "b", Status: StatusStarted}, {Op: OpCreate}}, CodeInvalid, "create must be the first operation"},
		{"create without a root", []Op{{Op: OpCreate}}, CodeInvalid, "at least one block"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := mustValid(t, baseGraph)
			before := g.Clone()
			res, err := Apply(g, tt.ops)
			wantErr(t, err, tt.code, tt.msg)
			if !g.Equal(before) {
				t.Error("failed batch modified the input graph")
			}
			if res.Graph.Nodes != nil || res.Results != nil {
				t.Errorf("failed batch returned a result: %+v", res)
			}
		})
	}
}

func TestApplyErrorTypes(t *testing.T) {
	t.Parallel()
	g := mustValid(t, baseGraph)
	_, err := Apply(g, []Op{{Op: OpSetStatus, ID: "b", Status: StatusStarted}, {Op: OpClaim, ID: "root"}})
	var oe *OpError
	if !errors.As(err, &oe) || oe.Index != 1 || oe.Op != OpClaim {
		t.Fatalf("%v is not an OpError for op 1", err)
	}
	if !errors.Is(err, &Error{Code: CodeConflict}) || errors.Is(err, &Error{Code: CodeInvalid}) {
		t.Errorf("errors.Is by code failed for %v", err)
	}
	_, err = Apply(g, []Op{{Op: OpAddDep, TaskID: "c", DepID: "root"}})
	ve := asValidation(t, err)
	if ve.Constraint != ConstraintCycle || !strings.HasPrefix(err.Error(), "batch of 1 operation(s) rejected: cycle: ") {
		t.Errorf("got %v", err)
	}
}

// TestExtractThenExpand: expanding the extracted child restores the task.
func TestExtractThenExpand(t *testing.T) {
	t.Parallel()
	for _, text := range []string{baseGraph, readFile(t, "testdata/inputs/repo-examples-06-project-bacchus.vine")} {
		g := mustValid(t, text)
		for _, n := range g.Nodes {
			if n.IsRef() {
				continue
			}
			res, err := Apply(g, []Op{{Op: OpExtractToRef, ID: n.ID, Vine: "./" + n.ID + ".vine"}})
			if err != nil {
				t.Fatalf("extract %s: %v", n.ID, err)
			}
			if len(Refs(res.Graph)) != len(Refs(g))+1 {
				t.Fatalf("extract %s: no reference left", n.ID)
			}
			back, err := Expand(res.Graph, n.ID, res.Results[0].Extracted.Graph)
			if err != nil {
				t.Fatalf("expand %s: %v", n.ID, err)
			}
			if !back.Equal(g) {
				t.Errorf("extract+expand %s changed the graph", n.ID)
			}
		}
	}
}

// TestApplyDoesNotAlias: modifying a result in place never reaches the input.
func TestApplyDoesNotAlias(t *testing.T) {
	t.Parallel()
	g := mustValid(t, baseGraph)
	before := g.Clone()
	res, err := Apply(g, []Op{{Op: OpUpdate, ID: "a", Decisions: []string{"more"}}, {Op: OpAddDep, TaskID: "b", DepID: "a"}, {Op: OpRemoveTask, ID: "r"}})
	if err != nil {
		t.Fatal(err)
	}
	res.Graph.Metadata["title"] = "changed"
	if !g.Equal(before) {
		t.Error("input changed through the result")
	}
	// A second batch on the first result leaves the first result intact.
	snap := res.Graph.Clone()
	if _, err := Apply(res.Graph, []Op{{Op: OpUpdate, ID: "a", Decisions: []string{"again"}}, {Op: OpRemoveDep, TaskID: "b", DepID: "a"}}); err != nil {
		t.Fatal(err)
	}
	if !res.Graph.Equal(snap) {
		t.Error("second batch changed the first result")
	}
}

func TestDecodeOps(t *testing.T) {
	t.Parallel()
	ops, err := DecodeOps([]byte(`[
		{"op": "set_status", "id": "b", "status": "started"},
		{"op": "update", "id": "b", "decisions": ["> All 48 tests passing"], "description": "",
		 "attachments": [{"class": "artifact", "mime": "text/html", "uri": "./cov.html"}]},
		{"op": "add_task", "id": "d", "name": "D", "dependsOn": ["a"], "annotations": {"sprite": ["./d.svg"]}},
		{"op": "add_dep", "taskId": "b", "depId": "d"},
		{"op": "extract_to_ref", "id": "d", "vine": "./d.vine", "refName": "D ref"}
	]`))
	if err != nil {
		t.Fatal(err)
	}
	if ops[1].Description == nil || *ops[1].Description != "" || ops[2].DependsOn[0] != "a" || ops[3].DepID != "d" || ops[4].RefName != "D ref" {
		t.Errorf("decoded %+v", ops)
	}
	res, err := Apply(mustValid(t, baseGraph), ops)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.Graph.Lookup("b"); n.Decisions[0] != "All 48 tests passing" || n.Status != StatusStarted {
		t.Errorf("b = %+v", n)
	}
	_, err = DecodeOps([]byte(`[{"op": "set_status", "task_id": "b"}]`))
	wantErr(t, err, CodeInvalid, `unknown field "task_id"`)

	// Ops round-trip through JSON (they are stored in events).
	b, _ := json.Marshal(ops)
	again, err := DecodeOps(b)
	if err != nil || !reflect.DeepEqual(again, ops) {
		t.Errorf("ops do not round-trip: %v\n%s", err, b)
	}
	// So does a graph.
	var g Graph
	gb, _ := json.Marshal(res.Graph)
	if err := json.Unmarshal(gb, &g); err != nil || !g.Equal(res.Graph) {
		t.Errorf("graph does not round-trip through JSON: %v", err)
	}
}
