package httpapi_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/handlers"
	"github.com/trellis/trellis/handlers/httpapi"
	"github.com/trellis/trellis/internal/servicetest"
	"github.com/trellis/trellis/vine"
	"github.com/trellis/trellis/vinegraph"
)

// vineBundle is a testBundle whose service runs VINE graphs inside a
// temporary workspace root.
type vineBundle struct {
	*testBundle
	ws string
}

// setupVine starts NATS, a service with a temporary workspace root, and the
// HTTP API over it.
func setupVine(t *testing.T) *vineBundle {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	nb := eventstest.Start(t)
	dataDir, ws := t.TempDir(), t.TempDir()
	svc := handlers.NewService(nb.Store, handlers.ServiceConfig{DataDir: dataDir, Vine: vinegraph.Config{Roots: []string{ws}}})
	if err := svc.Start(ctx); err != nil {
		t.Fatalf("start service: %v", err)
	}
	t.Cleanup(func() {
		if err := svc.Close(); err != nil {
			t.Errorf("close service: %v", err)
		}
	})
	logger := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv := httptest.NewServer(httpapi.New(svc, httpapi.Config{Logger: logger}))
	t.Cleanup(srv.Close)
	return &vineBundle{testBundle: &testBundle{nats: nb, svc: svc, server: srv, dataDir: dataDir, ctx: ctx}, ws: ws}
}

// file writes text to name inside the workspace and returns its path.
func (b *vineBundle) file(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(b.ws, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// graphEvents returns the event types of graph id.
func (b *vineBundle) graphEvents(t *testing.T, id string) []string {
	t.Helper()
	recs, _, err := b.nats.Store.Load(b.ctx, events.StreamVine, events.GraphFilter(id))
	if err != nil {
		t.Fatalf("load graph events: %v", err)
	}
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.Type
	}
	return out
}

// vineSeq is the VINE stream's last sequence.
func (b *vineBundle) vineSeq(t *testing.T) uint64 {
	t.Helper()
	seq, err := b.nats.Store.LastSeq(b.ctx, events.StreamVine)
	if err != nil {
		t.Fatalf("last seq: %v", err)
	}
	return seq
}

func nodeIDs(nodes []vine.Node) string {
	var s []string
	for _, n := range nodes {
		s = append(s, n.ID)
	}
	return strings.Join(s, ",")
}

// TestVineLoopHTTP runs the agent loop on a 3-task chain over HTTP: import
// → next → claim → write (record + reviewing) → next shows the dependant →
// ... until the root is complete; then read and export.
func TestVineLoopHTTP(t *testing.T) {
	t.Parallel()
	b := setupVine(t)
	f := b.file(t, "plan.vine", servicetest.Chain)
	post := http.MethodPost

	var info trellis.VineGraphInfo
	b.do(t, post, "/v1/vine/import", map[string]any{"file": f}).expect(t, http.StatusOK, &info)
	if !info.Imported || info.Path != "plan.vine" || info.GraphID != events.GraphID("plan.vine") || info.Progress.Total != 3 {
		t.Fatalf("import = %+v", info)
	}
	gid := info.GraphID
	var again trellis.VineGraphInfo
	b.do(t, post, "/v1/vine/import", map[string]any{"file": f}).expect(t, http.StatusOK, &again)
	if again.Imported || again.HandEdit {
		t.Fatalf("second import = %+v", again)
	}

	next := func() vine.Frontier {
		t.Helper()
		var fr vine.Frontier
		b.do(t, post, "/v1/vine/next", map[string]any{"file": f}).expect(t, http.StatusOK, &fr)
		return fr
	}
	claim := func(agent, want string) *vine.NodeContext {
		t.Helper()
		var cr trellis.VineClaimResult
		b.do(t, post, "/v1/vine/claim", trellis.VineClaimRequest{File: f, Agent: agent}).expect(t, http.StatusOK, &cr)
		if cr.GraphID != gid || cr.Node == nil || cr.Node.Node.ID != want || cr.Node.Node.Status != vine.StatusStarted {
			t.Fatalf("claim = %+v; want %s started", cr.Node, want)
		}
		return cr.Node
	}
	write := func(ops ...vine.Op) trellis.VineWriteResult {
		t.Helper()
		var wr trellis.VineWriteResult
		b.do(t, post, "/v1/vine/write", trellis.VineWriteRequest{File: f, Operations: ops, Agent: "agent-1"}).expect(t, http.StatusOK, &wr)
		if wr.GraphID != gid || len(wr.Results) != len(ops) {
			t.Fatalf("write = %+v", wr)
		}
		return wr
	}
	finish := func(id, decision string) {
		t.Helper()
		write(vine.Op{Op: "update", ID: id, Decisions: []string{decision}}, vine.Op{Op: "set_status", ID: id, Status: vine.StatusReviewing})
	}

	fr := next()
	if nodeIDs(fr.ReadyToStart) != "a" || len(fr.ReadyToComplete) != 0 {
		t.Fatalf("pass 1 = %+v", fr)
	}
	claim("agent-1", "a")
	// Nothing else is ready: task null, not an error.
	res := b.do(t, post, "/v1/vine/claim", map[string]any{"file": f, "agent": "agent-2"})
	var none map[string]any
	res.expect(t, http.StatusOK, &none)
	if v, ok := none["task"]; !ok || v != nil {
		t.Fatalf("claim with nothing ready = %s", res.body)
	}
	// Claiming a started task by id is a conflict.
	if e := b.do(t, post, "/v1/vine/claim", map[string]any{"file": f, "id": "a", "agent": "agent-2"}); e.status != http.StatusConflict || e.apiError(t).Code != trellis.CodeConflict {
		t.Fatalf("claim of a started task: %d %s", e.status, e.body)
	}
	finish("a", "analysed the inputs")

	fr = next()
	if nodeIDs(fr.ReadyToStart) != "b" || len(fr.ReadyToComplete) != 0 {
		t.Fatalf("pass 2 = %+v", fr)
	}
	tc := claim("agent-2", "b")
	if len(tc.ResolvedDependencies) != 1 || !slices.Equal(tc.ResolvedDependencies[0].Decisions, []string{"analysed the inputs"}) {
		t.Fatalf("b's context = %+v", tc)
	}
	finish("b", "built it")

	fr = next()
	if nodeIDs(fr.ReadyToComplete) != "a" || nodeIDs(fr.ReadyToStart) != "root" {
		t.Fatalf("pass 3 = %+v", fr)
	}
	write(vine.Op{Op: "set_status", ID: "a", Status: vine.StatusComplete})
	claim("agent-1", "root")
	finish("root", "shipped")

	fr = next()
	if nodeIDs(fr.ReadyToComplete) != "root,b" {
		t.Fatalf("pass 4 = %+v", fr)
	}
	wr := write(vine.Op{Op: "set_status", ID: "b", Status: vine.StatusComplete}, vine.Op{Op: "set_status", ID: "root", Status: vine.StatusComplete})
	if wr.Progress.RootStatus != "complete" || wr.Progress.Percentage != 100 || len(wr.Written) != 1 || wr.Written[0] != f {
		t.Fatalf("final write = %+v", wr)
	}

	var rd struct {
		GraphID string       `json:"graph_id"`
		Action  string       `json:"action"`
		Result  vine.Summary `json:"result"`
	}
	b.do(t, post, "/v1/vine/read", trellis.VineReadRequest{File: f, Action: "summary"}).expect(t, http.StatusOK, &rd)
	if rd.GraphID != gid || rd.Action != "summary" || rd.Result.RootStatus != "complete" || rd.Result.ByStatus["complete"] != 3 {
		t.Fatalf("read summary = %+v", rd)
	}
	var list struct {
		Result []vine.Node `json:"result"`
	}
	b.do(t, post, "/v1/vine/read", trellis.VineReadRequest{File: f, Action: "list", Query: "BUILD"}).expect(t, http.StatusOK, &list)
	if nodeIDs(list.Result) != "b" {
		t.Fatalf("read list = %+v", list)
	}

	evs := b.graphEvents(t, gid)
	if len(evs) != 9 || evs[0] != "imported" || slices.ContainsFunc(evs[1:], func(s string) bool { return s != "batch_applied" }) {
		t.Fatalf("events = %v; want imported and 8 batch_applied", evs)
	}
	var exp trellis.VineExportResult
	b.do(t, http.MethodGet, "/v1/vine/graphs/"+gid+"/export", nil).expect(t, http.StatusOK, &exp)
	data, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	if exp.GraphID != gid || exp.Path != "plan.vine" || exp.Text != string(data) || !strings.Contains(exp.Text, "[root] Ship it (complete)") {
		t.Fatalf("export = %+v\nfile:\n%s", exp, data)
	}
}

// TestVineExpandHTTP: a reference is expanded over HTTP.
func TestVineExpandHTTP(t *testing.T) {
	t.Parallel()
	b := setupVine(t)
	f := b.file(t, "p/parent.vine", "vine 1.2.0\n---\n[root] Release (notstarted)\n-> docs\n---\nref [docs] Docs (./docs.vine)\n")
	b.file(t, "p/docs.vine", "vine 1.2.0\n---\n[top] Write the docs (notstarted)\n-> outline\n---\n[outline] Outline (notstarted)\n")
	var fr vine.Frontier
	b.do(t, http.MethodPost, "/v1/vine/next", map[string]any{"file": f}).expect(t, http.StatusOK, &fr)
	if nodeIDs(fr.NeedsExpansion) != "docs" {
		t.Fatalf("frontier = %+v", fr)
	}
	var wr trellis.VineWriteResult
	b.do(t, http.MethodPost, "/v1/vine/expand", trellis.VineExpandRequest{File: f, RefID: "docs", ChildFile: "./docs.vine", Agent: "agent-1"}).expect(t, http.StatusOK, &wr)
	if nodeIDs(wr.Frontier.ReadyToStart) != "docs/outline" || wr.Progress.Total != 3 {
		t.Fatalf("expand = %+v", wr)
	}
	if evs := b.graphEvents(t, events.GraphID("p/parent.vine")); !slices.Equal(evs, []string{"imported", "expanded"}) {
		t.Fatalf("events = %v", evs)
	}
}

// TestVineBadInputHTTP: refused vine requests answer in the error shape with
// the stable code and field, and leave the log and the file unchanged.
func TestVineBadInputHTTP(t *testing.T) {
	t.Parallel()
	b := setupVine(t)
	f := b.file(t, "bad.vine", servicetest.Chain)
	b.do(t, http.MethodPost, "/v1/vine/import", map[string]any{"file": f}).expect(t, http.StatusOK, nil)
	gid := events.GraphID("bad.vine")
	outside := filepath.Join(t.TempDir(), "outside.vine")
	if err := os.WriteFile(outside, []byte(servicetest.Chain), 0o644); err != nil {
		t.Fatal(err)
	}
	binary := b.file(t, "bin.vine", "vine 1.2.0\n---\n[a] A (notstarted)\n\x00\x01")
	q := func(s string) string { return `"` + strings.ReplaceAll(s, `\`, `\\`) + `"` }
	file := `"file":` + q(f)
	const (
		next   = "/v1/vine/next"
		read   = "/v1/vine/read"
		write  = "/v1/vine/write"
		claim  = "/v1/vine/claim"
		expand = "/v1/vine/expand"
		imp    = "/v1/vine/import"
	)
	export := func(id string) string { return "/v1/vine/graphs/" + id + "/export" }
	post, get := http.MethodPost, http.MethodGet
	const bad, notFound, conflict = http.StatusBadRequest, http.StatusNotFound, http.StatusConflict
	inv, nf, cf := trellis.CodeInvalid, trellis.CodeNotFound, trellis.CodeConflict
	unknownGraph := events.GraphID("never/imported.vine")

	cases := []badCase{
		// Malformed bodies.
		{"next/malformed", post, next, `{"file":`, bad, inv, "body", "JSON"},
		{"next/empty body", post, next, ``, bad, inv, "body", "empty"},
		{"write/malformed", post, write, `{` + file + `,"operations":[{"op":"set_status",]}`, bad, inv, "body", "JSON"},
		{"claim/array", post, claim, `[{` + file + `}]`, bad, inv, "body", "object"},
		{"read/trailing data", post, read, `{` + file + `,"action":"summary"}{}`, bad, inv, "body", "after the JSON object"},
		{"import/non-UTF-8", post, imp, []byte("{\"file\":\"\xff\"}"), bad, inv, "body", "UTF-8"},
		// Unknown fields, at the top and inside an operation.
		{"next/unknown field", post, next, `{` + file + `,"agent":"a"}`, bad, inv, "agent", `"agent"`},
		{"import/unknown field", post, imp, `{` + file + `,"force":true}`, bad, inv, "force", `"force"`},
		{"read/wrong case", post, read, `{` + file + `,"Action":"summary"}`, bad, inv, "Action", "case-sensitive"},
		{"write/unknown field", post, write, `{` + file + `,"ops":[]}`, bad, inv, "ops", `"ops"`},
		{"write/unknown op field", post, write, `{` + file + `,"operations":[{"op":"add_dep","task_id":"a","depId":"b"}]}`, bad, inv, "task_id", "task_id"},
		{"expand/unknown field", post, expand, `{` + file + `,"ref":"x","child_file":"c.vine"}`, bad, inv, "ref", `"ref"`},
		{"write/operations wrong type", post, write, `{` + file + `,"operations":"set_status"}`, bad, inv, "operations", "array"},
		// Files.
		{"next/missing file", post, next, `{}`, bad, inv, "file", "must not be empty"},
		{"next/outside workspace", post, next, `{"file":` + q(outside) + `}`, bad, inv, "file", "outside the workspace"},
		{"import/outside workspace", post, imp, `{"file":` + q(outside) + `}`, bad, inv, "file", "outside the workspace"},
		{"write/outside workspace", post, write, `{"file":` + q(outside) + `,"operations":[{"op":"set_status","id":"a","status":"started"}]}`, bad, inv, "file", "outside the workspace"},
		{"import/binary file", post, imp, `{"file":` + q(binary) + `}`, bad, inv, "file", "binary"},
		{"next/binary file", post, next, `{"file":` + q(binary) + `}`, bad, inv, "file", "binary"},
		{"import/missing file", post, imp, `{"file":` + q(filepath.Join(b.ws, "nope.vine")) + `}`, notFound, nf, "file", "does not exist"},
		// Batches the graph refuses.
		{"write/cycle", post, write, `{` + file + `,"operations":[{"op":"add_dep","taskId":"a","depId":"root"}]}`, bad, inv, "operations", "cycle"},
		{"write/cycle after valid op", post, write, `{` + file + `,"operations":[{"op":"set_status","id":"a","status":"complete"},{"op":"add_dep","taskId":"a","depId":"root"}]}`, bad, inv, "operations", "cycle"},
		{"write/unknown op", post, write, `{` + file + `,"operations":[{"op":"explode","id":"a"}]}`, bad, inv, "operations", "explode"},
		{"write/empty batch", post, write, `{` + file + `,"operations":[]}`, bad, inv, "operations", "at least one"},
		{"write/escaping ref", post, write, `{` + file + `,"operations":[{"op":"add_ref","id":"x","name":"X","vine":"../../etc/passwd.vine"}]}`, bad, inv, "operations[0]", "outside the workspace"},
		{"read/unknown action", post, read, `{` + file + `,"action":"explode"}`, bad, inv, "action", "unknown read action"},
		{"read/missing action", post, read, `{` + file + `}`, bad, inv, "action", "must not be empty"},
		{"read/unknown task", post, read, `{` + file + `,"action":"task","id":"ghost"}`, notFound, nf, "", "ghost"},
		{"claim/missing agent", post, claim, `{` + file + `}`, bad, inv, "agent", ""},
		{"claim/bad agent", post, claim, `{` + file + `,"agent":"has space"}`, bad, inv, "agent", ""},
		{"claim/not ready", post, claim, `{` + file + `,"id":"root","agent":"w"}`, conflict, cf, "", "not ready"},
		{"expand/a task", post, expand, `{` + file + `,"ref_id":"a","child_file":"./bad.vine"}`, bad, inv, "ref_id", "not a reference"},
		{"expand/escaping child", post, expand, `{` + file + `,"ref_id":"a","child_file":"../../../etc/x.vine"}`, bad, inv, "child_file", "outside the workspace"},
		// Export.
		{"export/unknown graph", get, export(unknownGraph), nil, notFound, nf, "", unknownGraph},
		{"export/not a graph id", get, export("plan.vine"), nil, bad, inv, "id", "not a graph id"},
		{"export/upper-case id", get, export(strings.ToUpper(gid)), nil, bad, inv, "id", "not a graph id"},
		{"export/query parameter", get, export(gid) + "?format=json", nil, bad, inv, "format", "unknown query parameter"},
		{"next/query parameter", post, next + "?dry_run=1", `{` + file + `}`, bad, inv, "dry_run", "unknown query parameter"},
		{"next/wrong method", get, next, nil, http.StatusMethodNotAllowed, inv, "", "not allowed"},
	}
	gevents := b.graphEvents(t, gid)
	if !slices.Equal(gevents, []string{"imported"}) {
		t.Fatalf("fixture events = %v", gevents)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := b.vineSeq(t)
			b.do(t, c.method, c.path, c.body).expectError(t, c.status, c.code, c.field, c.msg)
			if after := b.vineSeq(t); after != before {
				t.Fatalf("VINE log changed: last seq %d -> %d", before, after)
			}
			if after := b.graphEvents(t, gid); !slices.Equal(after, gevents) {
				t.Fatalf("graph events changed: %v -> %v", gevents, after)
			}
		})
	}
	data, _ := os.ReadFile(f)
	if string(data) != servicetest.Chain {
		t.Fatalf("refused requests changed the file:\n%s", data)
	}
	// The graph still works.
	var cr trellis.VineClaimResult
	b.do(t, http.MethodPost, claim, trellis.VineClaimRequest{File: f, Agent: "w"}).expect(t, http.StatusOK, &cr)
	if cr.Node == nil || cr.Node.Node.ID != "a" {
		t.Fatalf("claim after the refusals = %+v", cr)
	}
}
