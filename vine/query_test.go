package vine

import (
	"reflect"
	"testing"
)

const queryGraph = "vine 1.2.0\ntitle: Q\n---\n" +
	"[root] Ship It (notstarted)\nThe final step.\n-> api\n-> ui\n---\n" +
	"[api] Build API (started)\nREST endpoints over the SCHEMA.\n-> schema\n---\n" +
	"[ui] Build Frontend (planning)\n-> schema\n-> design\n---\n" +
	"ref [design] Design System (./design.vine)\n> adopt or build?\n---\n" +
	"[schema] Database Schema (complete)\nTables and indexes.\n> use postgres\n@artifact text/x-sql ./schema.sql\n"

func TestQueries(t *testing.T) {
	t.Parallel()
	g := mustValid(t, queryGraph)

	s, err := GetSummary(g)
	if err != nil {
		t.Fatal(err)
	}
	want := Summary{Title: "Q", RootID: "root", RootName: "Ship It", RootStatus: "notstarted", Total: 5, LeafCount: 2, RefCount: 1,
		ByStatus: map[string]int{"notstarted": 1, "planning": 1, "started": 1, "reviewing": 0, "complete": 1, "blocked": 0, "ref": 1}}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("summary %+v", s)
	}

	list := []struct {
		f    ListFilter
		want []string
	}{
		{ListFilter{}, []string{"root", "api", "ui", "design", "schema"}},
		{ListFilter{Status: "complete"}, []string{"schema"}},
		{ListFilter{Status: "ref"}, []string{"design"}},
		{ListFilter{Status: "blocked"}, []string{}},
		{ListFilter{Query: "build"}, []string{"api", "ui"}},
		{ListFilter{Query: "schema"}, []string{"api", "schema"}}, // description (case-insensitive) and id
		{ListFilter{Status: "started", Query: "schema"}, []string{"api"}},
	}
	for _, c := range list {
		got, err := List(g, c.f)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(nodeIDs(got), c.want) {
			t.Errorf("List(%+v) = %v, want %v", c.f, nodeIDs(got), c.want)
		}
	}
	_, err = List(g, ListFilter{Status: "done"})
	wantErr(t, err, CodeInvalid, `unknown status "done"`)

	for q, want := range map[string][]string{"ROOT": {"root"}, "frontend": {"ui"}, "TABLES": {"schema"}, "zzz": {}, "design": {"design"}} {
		got, err := Search(g, q)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(nodeIDs(got), want) {
			t.Errorf("Search(%q) = %v, want %v", q, nodeIDs(got), want)
		}
	}
	_, err = Search(g, " ")
	wantErr(t, err, CodeInvalid, "query is empty")

	n, err := Task(g, "schema")
	if err != nil || n.ShortName != "Database Schema" || n.Decisions[0] != "use postgres" {
		t.Errorf("Task = %+v, %v", n, err)
	}
	_, err = Task(g, "nope")
	wantErr(t, err, CodeNotFound, `no node with id "nope"`)

	ctx, err := Context(g, "ui")
	if err != nil {
		t.Fatal(err)
	}
	wantDeps := []ResolvedDependency{
		{ID: "design", Kind: KindRef, ShortName: "Design System", URI: "./design.vine", Decisions: []string{"adopt or build?"}, Attachments: []Attachment{}},
		{ID: "schema", Kind: KindTask, ShortName: "Database Schema", Status: StatusComplete, Decisions: []string{"use postgres"}, Attachments: []Attachment{{ClassArtifact, "text/x-sql", "./schema.sql"}}},
	}
	if !reflect.DeepEqual(ctx.ResolvedDependencies, wantDeps) {
		t.Errorf("resolved deps %+v", ctx.ResolvedDependencies)
	}
	if !reflect.DeepEqual(ctx.Dependants, []NodeSummary{{ID: "root", Kind: KindTask, ShortName: "Ship It", Status: StatusNotStarted}}) || ctx.Node.ID != "ui" {
		t.Errorf("context %+v", ctx)
	}
	_, err = Context(g, "nope")
	wantErr(t, err, CodeNotFound)

	d, err := Descendants(g, "schema")
	if err != nil || !reflect.DeepEqual(summaryIDs(d), []string{"root", "api", "ui"}) {
		t.Errorf("Descendants(schema) = %v, %v", summaryIDs(d), err)
	}
	d, _ = Descendants(g, "design")
	if !reflect.DeepEqual(summaryIDs(d), []string{"root", "ui"}) {
		t.Errorf("Descendants(design) = %v", summaryIDs(d))
	}
	d, _ = Descendants(g, "root")
	if len(d) != 0 {
		t.Errorf("Descendants(root) = %v", summaryIDs(d))
	}
	_, err = Descendants(g, "nope")
	wantErr(t, err, CodeNotFound)

	if got := nodeIDs(Refs(g)); !reflect.DeepEqual(got, []string{"design"}) {
		t.Errorf("Refs = %v", got)
	}
}

func TestRead(t *testing.T) {
	t.Parallel()
	g := mustValid(t, queryGraph)
	tests := []struct {
		req   ReadRequest
		check func(any) bool
		err   string
	}{
		{ReadRequest{Action: "summary"}, func(v any) bool { return v.(Summary).Total == 5 }, ""},
		{ReadRequest{Action: "list", Status: "planning"}, func(v any) bool { return nodeIDs(v.([]Node))[0] == "ui" }, ""},
		{ReadRequest{Action: "list", Query: "api"}, func(v any) bool { return len(v.([]Node)) == 1 }, ""},
		{ReadRequest{Action: "task", ID: "api"}, func(v any) bool { return v.(Node).ID == "api" }, ""},
		{ReadRequest{Action: "context", ID: "api"}, func(v any) bool { return v.(NodeContext).ResolvedDependencies[0].ID == "schema" }, ""},
		{ReadRequest{Action: "descendants", ID: "api"}, func(v any) bool { return summaryIDs(v.([]NodeSummary))[0] == "root" }, ""},
		{ReadRequest{Action: "search", Query: "Frontend"}, func(v any) bool { return len(v.([]Node)) == 1 }, ""},
		{ReadRequest{Action: "refs"}, func(v any) bool { return len(v.([]Node)) == 1 }, ""},
		{ReadRequest{Action: "validate"}, func(v any) bool { return v.(ValidationReport) == ValidationReport{Valid: true, Total: 5} }, ""},
		{ReadRequest{Action: "task"}, nil, `id is required for action "task"`},
		{ReadRequest{Action: "search"}, nil, "query is empty"},
		{ReadRequest{Action: "explode"}, nil, `unknown read action "explode"`},
	}
	for _, tt := range tests {
		v, err := Read(g, tt.req)
		if tt.err != "" {
			wantErr(t, err, CodeInvalid, tt.err)
			continue
		}
		if err != nil || !tt.check(v) {
			t.Errorf("Read(%+v) = %+v, %v", tt.req, v, err)
		}
	}
	bad := mustParse(t, readFile(t, "testdata/inputs/repo-e2e-invalid-cycle.vine"))
	_, err := Read(bad, ReadRequest{Action: "validate"})
	wantErr(t, err, CodeInvalid, "cycle: a -> b -> c -> a")
}
