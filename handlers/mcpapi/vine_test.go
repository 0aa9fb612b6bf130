package mcpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/handlers/mcpapi"
	"github.com/trellis/trellis/internal/servicetest"
	"github.com/trellis/trellis/vine"
)

// TestVineToolsAndResources: tools/list shows the five vine tools with seed
// 001's argument names (plus vine_claim), descriptions that teach the agent
// loop, and strict schemas; resources/list shows both spec resources, and
// reading them returns the Markdown texts.
func TestVineToolsAndResources(t *testing.T) {
	t.Parallel()
	b, ctx := setupVine(t)
	cs := b.connect(t, ctx)
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		args, required []string
	}{
		"vine_next":   {[]string{"file"}, []string{"file"}},
		"vine_read":   {[]string{"file", "action", "id", "status", "query"}, []string{"file", "action"}},
		"vine_write":  {[]string{"file", "operations"}, []string{"file", "operations"}},
		"vine_expand": {[]string{"file", "ref_id", "child_file"}, []string{"file", "ref_id", "child_file"}},
		"vine_claim":  {[]string{"file", "id", "agent"}, []string{"file"}},
	}
	seen := map[string]bool{}
	for _, tool := range res.Tools {
		w, ok := want[tool.Name]
		if !ok {
			continue
		}
		seen[tool.Name] = true
		var in jsonschema.Schema
		remarshal(t, tool.InputSchema, &in)
		var names []string
		for name, p := range in.Properties {
			names = append(names, name)
			if p.Description == "" {
				t.Errorf("%s: argument %s has no description", tool.Name, name)
			}
		}
		if !sameSet(names, w.args) {
			t.Errorf("%s: arguments %v; want %v", tool.Name, names, w.args)
		}
		if !sameSet(in.Required, w.required) {
			t.Errorf("%s: required %v; want %v", tool.Name, in.Required, w.required)
		}
		if ap := in.AdditionalProperties; ap == nil || ap.Not == nil {
			t.Errorf("%s: schema allows additional properties", tool.Name)
		}
		if len(tool.Description) < 200 {
			t.Errorf("%s: description too thin: %q", tool.Name, tool.Description)
		}
	}
	for name := range want {
		if !seen[name] {
			t.Errorf("tools/list lacks %s", name)
		}
	}
	// The descriptions teach the loop.
	byName := map[string]*mcp.Tool{}
	for _, tool := range res.Tools {
		byName[tool.Name] = tool
	}
	for _, frag := range []string{"expand", "ready_to_complete", "claim ONE", "reviewing", "repeat"} {
		if !strings.Contains(byName["vine_next"].Description, frag) {
			t.Errorf("vine_next description lacks %q", frag)
		}
	}
	if d := byName["vine_claim"].Description; !strings.Contains(d, "atomic") || !strings.Contains(d, "reviewing") {
		t.Errorf("vine_claim description: %q", d)
	}
	// The operations argument documents each operation object.
	var ws jsonschema.Schema
	remarshal(t, byName["vine_write"].InputSchema, &ws)
	items := ws.Properties["operations"].Items
	if items == nil || len(items.Properties["op"].Enum) != 11 || items.Properties["taskId"].Description == "" ||
		items.AdditionalProperties == nil || items.AdditionalProperties.Not == nil {
		t.Errorf("operations item schema: %+v", items)
	}
	if !strings.Contains(cs.InitializeResult().Instructions, "vine://spec/brief") {
		t.Error("instructions do not point at vine://spec/brief")
	}
	if cs.InitializeResult().Capabilities.Resources == nil {
		t.Error("resources capability not advertised")
	}

	rl, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	texts := map[string]string{mcpapi.VineSpecBriefURI: vine.SpecBrief, mcpapi.VineSpecFullURI: vine.SpecFull}
	listed := 0
	for _, r := range rl.Resources {
		if _, ok := texts[r.URI]; !ok {
			continue
		}
		listed++
		if r.MIMEType != "text/markdown" || r.Name == "" || r.Description == "" {
			t.Errorf("resource %+v", r)
		}
	}
	if listed != 2 {
		t.Fatalf("resources/list = %+v; want both vine spec URIs", rl.Resources)
	}
	for uri, want := range texts {
		rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil {
			t.Fatalf("read %s: %v", uri, err)
		}
		if len(rr.Contents) != 1 || rr.Contents[0].URI != uri || rr.Contents[0].MIMEType != "text/markdown" || rr.Contents[0].Text != want {
			t.Fatalf("read %s = %+v", uri, rr.Contents)
		}
	}
}

// queueOnly hides every method of a service but the queue's.
type queueOnly struct{ trellis.QueueService }

// TestQueueOnlyServerHasNoVine: a service without VINE gets the queue tools
// and nothing else, as before.
func TestQueueOnlyServerHasNoVine(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	b.srv = mcpapi.NewServer(queueOnly{b.svc}, "test")
	cs := b.connect(t, ctx)
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range res.Tools {
		if strings.HasPrefix(tool.Name, "vine_") {
			t.Errorf("queue-only server lists %s", tool.Name)
		}
	}
	if len(res.Tools) != 7 {
		t.Errorf("queue-only server lists %d tools; want 7", len(res.Tools))
	}
	if cs.InitializeResult().Capabilities.Resources != nil || strings.Contains(cs.InitializeResult().Instructions, "vine") {
		t.Error("queue-only server advertises VINE")
	}
}

// TestVineLoopMCP runs the agent loop on a 3-task chain through a real MCP
// client: next → claim → record + reviewing → next shows the dependant →
// ... until the root is complete, checking the frontier at each pass, the
// hand-off of reviewing tasks, the event log and the rewritten file.
func TestVineLoopMCP(t *testing.T) {
	t.Parallel()
	b, ctx := setupVine(t)
	cs := b.connect(t, ctx)
	schemas := outputSchemas(t, ctx, cs)
	f := b.file(t, "plan.vine", servicetest.Chain)

	next := func() vine.Frontier {
		t.Helper()
		var fr vine.Frontier
		callOK(t, ctx, cs, schemas, "vine_next", map[string]any{"file": f}, &fr)
		return fr
	}
	idsOf := func(nodes []vine.Node) string {
		var s []string
		for _, n := range nodes {
			s = append(s, n.ID)
		}
		return strings.Join(s, ",")
	}
	complete := func(id string) {
		t.Helper()
		var wr trellis.VineWriteResult
		callOK(t, ctx, cs, schemas, "vine_write", map[string]any{"file": f, "operations": []map[string]any{{"op": "set_status", "id": id, "status": "complete"}}}, &wr)
	}
	claim := func(want string) *vine.NodeContext {
		t.Helper()
		var cr trellis.VineClaimResult
		res := callOK(t, ctx, cs, schemas, "vine_claim", map[string]any{"file": f}, &cr)
		if cr.Node == nil || cr.Node.Node.ID != want || cr.Node.Node.Status != vine.StatusStarted {
			t.Fatalf("claim = %+v; want %s started", cr.Node, want)
		}
		if s := text(res); !strings.Contains(s, "Claimed task "+want) || !strings.Contains(s, "as agent mcp") || !strings.Contains(s, "reviewing") {
			t.Errorf("claim text:\n%s", s)
		}
		return cr.Node
	}
	finish := func(id, decision string) {
		t.Helper()
		var wr trellis.VineWriteResult
		res := callOK(t, ctx, cs, schemas, "vine_write", map[string]any{"file": f, "operations": []map[string]any{
			{"op": "update", "id": id, "decisions": []string{"> " + decision}, "attachments": []map[string]any{{"class": "artifact", "mime": "text/plain", "uri": "./out/" + id + ".txt"}}},
			{"op": "set_status", "id": id, "status": "reviewing"},
		}}, &wr)
		if len(wr.Results) != 2 || !strings.Contains(wr.Summary, "2 operation(s) applied") || len(wr.Written) != 1 {
			t.Fatalf("write = %+v", wr)
		}
		if !strings.Contains(text(res), "Progress: ") {
			t.Errorf("write text:\n%s", text(res))
		}
	}

	// Pass 1: only the leaf is ready.
	res := call(t, ctx, cs, "vine_next", map[string]any{"file": f})
	if s := text(res); !strings.Contains(s, "ready_to_start: a (Analyse)") || !strings.Contains(s, "vine_claim") {
		t.Errorf("vine_next text:\n%s", s)
	}
	fr := next()
	if idsOf(fr.ReadyToStart) != "a" || len(fr.ReadyToComplete) != 0 || fr.Progress.Total != 3 || fr.Progress.RootID != "root" {
		t.Fatalf("pass 1 frontier = %+v", fr)
	}
	claim("a")
	// While a is started nothing else is ready: claim answers task null.
	var none trellis.VineClaimResult
	res = callOK(t, ctx, cs, schemas, "vine_claim", map[string]any{"file": f, "agent": "agent-2"}, &none)
	if none.Node != nil || !strings.Contains(text(res), "No task is ready") {
		t.Fatalf("claim with nothing ready = %+v, %q", none, text(res))
	}
	var raw map[string]any
	decodeStructured(t, res, &raw)
	if v, ok := raw["task"]; !ok || v != nil {
		t.Errorf("empty claim structured content: task = %#v; want null", v)
	}
	finish("a", "analysed the inputs")

	// Pass 2: a reviewing satisfies b; nothing consumes a yet.
	fr = next()
	if idsOf(fr.ReadyToStart) != "b" || len(fr.ReadyToComplete) != 0 {
		t.Fatalf("pass 2 frontier = %+v", fr)
	}
	tc := claim("b")
	if len(tc.ResolvedDependencies) != 1 || tc.ResolvedDependencies[0].ID != "a" ||
		!slices.Equal(tc.ResolvedDependencies[0].Decisions, []string{"analysed the inputs"}) || len(tc.ResolvedDependencies[0].Attachments) != 1 {
		t.Fatalf("b's context = %+v", tc)
	}
	// b started consumes a: a is ready to complete.
	fr = next()
	if idsOf(fr.ReadyToComplete) != "a" || len(fr.ReadyToStart) != 0 {
		t.Fatalf("after claiming b: %+v", fr)
	}
	var rd struct {
		Result vine.NodeContext `json:"result"`
	}
	callOK(t, ctx, cs, schemas, "vine_read", map[string]any{"file": f, "action": "context", "id": "b"}, &rd)
	if rd.Result.Node.ID != "b" || len(rd.Result.Dependants) != 1 || rd.Result.Dependants[0].ID != "root" {
		t.Fatalf("context of b = %+v", rd.Result)
	}
	finish("b", "built it")

	// Pass 3: housekeeping completes a; the root is ready.
	fr = next()
	if idsOf(fr.ReadyToComplete) != "a" || idsOf(fr.ReadyToStart) != "root" {
		t.Fatalf("pass 3 frontier = %+v", fr)
	}
	complete("a")
	claim("root")
	finish("root", "shipped")

	// Pass 4: the reviewing root (all else complete or reviewing) and b
	// (consumed by the root) are ready to complete, in graph order.
	fr = next()
	if idsOf(fr.ReadyToComplete) != "root,b" || len(fr.ReadyToStart) != 0 {
		t.Fatalf("pass 4 frontier = %+v", fr)
	}
	complete("b")
	complete("root")
	fr = next()
	if fr.Progress.RootStatus != "complete" || fr.Progress.Complete != 3 || fr.Progress.Percentage != 100 {
		t.Fatalf("final progress = %+v", fr.Progress)
	}
	if s := text(call(t, ctx, cs, "vine_next", map[string]any{"file": f})); !strings.Contains(s, "the graph is done") {
		t.Errorf("final vine_next text:\n%s", s)
	}

	// Every change is an event; the file is the log's state.
	evs := b.graphEvents(t, ctx, "plan.vine")
	if len(evs) != 10 || evs[0] != "imported" || slices.ContainsFunc(evs[1:], func(s string) bool { return s != "batch_applied" }) {
		t.Fatalf("events = %v; want imported and 9 batch_applied", evs)
	}
	data, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"[root] Ship it (complete)", "[a] Analyse (complete)", "> analysed the inputs", "@artifact text/plain ./out/b.txt"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("file lacks %q:\n%s", want, data)
		}
	}
	var sum struct {
		Result vine.Summary `json:"result"`
	}
	callOK(t, ctx, cs, schemas, "vine_read", map[string]any{"file": f, "action": "summary"}, &sum)
	if sum.Result.RootStatus != "complete" || sum.Result.Total != 3 || sum.Result.ByStatus["complete"] != 3 {
		t.Fatalf("summary = %+v", sum.Result)
	}
}

// TestVineExpandMCP: a reference in needs_expansion is inlined with
// vine_expand; its tasks join the frontier under the reference's prefix.
func TestVineExpandMCP(t *testing.T) {
	t.Parallel()
	b, ctx := setupVine(t)
	cs := b.connect(t, ctx)
	schemas := outputSchemas(t, ctx, cs)
	f := b.file(t, "p/parent.vine", "vine 1.2.0\n---\n[root] Release (notstarted)\n-> docs\n---\nref [docs] Docs (./docs.vine)\n")
	b.file(t, "p/docs.vine", "vine 1.2.0\n---\n[top] Write the docs (notstarted)\n-> outline\n---\n[outline] Outline (notstarted)\n")

	var fr vine.Frontier
	res := callOK(t, ctx, cs, schemas, "vine_next", map[string]any{"file": f}, &fr)
	if len(fr.NeedsExpansion) != 1 || fr.NeedsExpansion[0].ID != "docs" || fr.NeedsExpansion[0].URI != "./docs.vine" {
		t.Fatalf("frontier = %+v", fr)
	}
	if !strings.Contains(text(res), "vine_expand") {
		t.Errorf("vine_next text does not suggest vine_expand:\n%s", text(res))
	}
	var wr trellis.VineWriteResult
	callOK(t, ctx, cs, schemas, "vine_expand", map[string]any{"file": f, "ref_id": "docs", "child_file": "./docs.vine"}, &wr)
	if len(wr.Frontier.ReadyToStart) != 1 || wr.Frontier.ReadyToStart[0].ID != "docs/outline" || wr.Progress.Total != 3 {
		t.Fatalf("after expansion: %+v", wr)
	}
	if evs := b.graphEvents(t, ctx, "p/parent.vine"); !slices.Equal(evs, []string{"imported", "expanded"}) {
		t.Fatalf("events = %v", evs)
	}
	data, _ := os.ReadFile(f)
	if !strings.Contains(string(data), "[docs] Write the docs (notstarted)") || !strings.Contains(string(data), "[docs/outline] Outline (notstarted)") {
		t.Fatalf("expanded file:\n%s", data)
	}
}

// TestVineBadInputMCP: bad vine arguments are tool errors starting with the
// stable code (and the argument at fault), and leave the log unchanged.
func TestVineBadInputMCP(t *testing.T) {
	t.Parallel()
	b, ctx := setupVine(t)
	cs := b.connect(t, ctx)
	f := b.file(t, "bad.vine", servicetest.Chain)
	call(t, ctx, cs, "vine_next", map[string]any{"file": f}) // import
	outside := filepath.Join(t.TempDir(), "outside.vine")
	if err := os.WriteFile(outside, []byte(servicetest.Chain), 0o644); err != nil {
		t.Fatal(err)
	}
	binary := b.file(t, "bin.vine", "vine 1.2.0\n---\n[a] A (notstarted)\n\x00\x01")
	ops := func(o ...map[string]any) map[string]any { return map[string]any{"file": f, "operations": o} }

	cases := []struct {
		name string
		tool string
		args map[string]any
		want string // prefix of the error text
		also string // further text the error must hold
	}{
		{"missing file", "vine_next", map[string]any{}, "invalid: file: ", "must not be empty"},
		{"no arguments", "vine_read", nil, "invalid: action: ", ""},
		{"missing file on write", "vine_write", map[string]any{"operations": []map[string]any{{"op": "set_status", "id": "a", "status": "started"}}}, "invalid: file: ", "must not be empty"},
		{"file outside the workspace", "vine_next", map[string]any{"file": outside}, "invalid: file: ", "outside the workspace"},
		{"write outside the workspace", "vine_write", map[string]any{"file": outside, "operations": []map[string]any{{"op": "set_status", "id": "a", "status": "started"}}}, "invalid: file: ", "outside the workspace"},
		{"file that does not exist", "vine_next", map[string]any{"file": filepath.Join(b.ws, "nope.vine")}, "not_found: file: ", "does not exist"},
		{"binary file", "vine_next", map[string]any{"file": binary}, "invalid: file: ", "binary"},
		{"unknown op", "vine_write", ops(map[string]any{"op": "explode", "id": "a"}), "invalid: operations: ", `unknown op "explode"`},
		{"missing op", "vine_write", ops(map[string]any{"id": "a"}), "invalid: operations: ", `"op"`},
		{"unknown key in an op", "vine_write", ops(map[string]any{"op": "add_dep", "task_id": "a", "depId": "b"}), "invalid: operations: ", `item 0: unknown key "task_id"`},
		{"op of the wrong type", "vine_write", ops(map[string]any{"op": 5}), "invalid: operations: ", "item 0: op must be a string"},
		{"decisions of the wrong type", "vine_write", ops(map[string]any{"op": "update", "id": "a", "decisions": "x"}), "invalid: operations: ", "decisions must be an array of strings"},
		{"operation not an object", "vine_write", map[string]any{"file": f, "operations": []any{"set_status"}}, "invalid: operations: ", "item 0 must be an object"},
		{"file of the wrong type", "vine_write", map[string]any{"file": 5, "operations": []map[string]any{{"op": "set_status", "id": "a", "status": "started"}}}, "invalid: file: ", "must be a string"},
		{"argument the op does not take", "vine_write", ops(map[string]any{"op": "set_status", "id": "a", "status": "started", "name": "x"}), "invalid: operations: ", "does not take"},
		{"unknown status", "vine_write", ops(map[string]any{"op": "set_status", "id": "a", "status": "done"}), "invalid: operations: ", "unknown status"},
		{"cycle", "vine_write", ops(map[string]any{"op": "add_dep", "taskId": "a", "depId": "root"}), "invalid: operations: ", "cycle"},
		{"cycle after a valid op", "vine_write", ops(map[string]any{"op": "set_status", "id": "a", "status": "complete"}, map[string]any{"op": "add_dep", "taskId": "a", "depId": "root"}), "invalid: operations: ", "cycle"},
		{"island", "vine_write", ops(map[string]any{"op": "add_task", "id": "lonely", "name": "Lonely"}), "invalid: operations: ", "island"},
		{"empty batch", "vine_write", ops(), "invalid: operations: ", "at least one"},
		{"operations not a list", "vine_write", map[string]any{"file": f, "operations": "set_status a"}, "invalid: operations: ", "array"},
		{"unknown argument", "vine_write", map[string]any{"file": f, "operations": []map[string]any{{"op": "set_status", "id": "a", "status": "started"}}, "agent": "x"}, "invalid: agent: ", "is not an argument of vine_write"},
		{"unknown next argument", "vine_next", map[string]any{"file": f, "path": f}, "invalid: path: ", "is not an argument of vine_next"},
		{"unknown action", "vine_read", map[string]any{"file": f, "action": "explode"}, "invalid: action: ", "unknown read action"},
		{"task without id", "vine_read", map[string]any{"file": f, "action": "task"}, "invalid: id: ", "id is required"},
		{"unknown task", "vine_read", map[string]any{"file": f, "action": "task", "id": "ghost"}, "not_found: ", "ghost"},
		{"bad agent", "vine_claim", map[string]any{"file": f, "agent": "has space"}, "invalid: agent: ", ""},
		{"claim a task not ready", "vine_claim", map[string]any{"file": f, "id": "root"}, "conflict: ", "not ready"},
		{"claim an unknown task", "vine_claim", map[string]any{"file": f, "id": "ghost"}, "not_found: ", "ghost"},
		{"expand a task", "vine_expand", map[string]any{"file": f, "ref_id": "a", "child_file": "./bad.vine"}, "invalid: ref_id: ", "not a reference"},
		{"expand escaping the workspace", "vine_expand", map[string]any{"file": f, "ref_id": "a", "child_file": "../../../etc/x.vine"}, "invalid: child_file: ", "outside the workspace"},
		{"expand without ref_id", "vine_expand", map[string]any{"file": f, "child_file": "./x.vine"}, "invalid: ref_id: ", ""},
	}
	gevents := b.graphEvents(t, ctx, "bad.vine")
	if !slices.Equal(gevents, []string{"imported"}) {
		t.Fatalf("fixture events = %v", gevents)
	}
	before := b.vineSeq(t, ctx)
	for _, c := range cases {
		msg := callErr(t, ctx, cs, c.tool, c.args)
		if !strings.HasPrefix(msg, c.want) || !strings.Contains(msg, c.also) {
			t.Errorf("%s: %s(%v) = %q; want prefix %q containing %q", c.name, c.tool, c.args, msg, c.want, c.also)
		}
	}
	if after := b.graphEvents(t, ctx, "bad.vine"); !slices.Equal(after, gevents) {
		t.Fatalf("bad input changed the graph's events: %v -> %v", gevents, after)
	}
	if after := b.vineSeq(t, ctx); after != before {
		t.Fatalf("bad input changed the VINE log: last seq %d -> %d", before, after)
	}
	data, _ := os.ReadFile(f)
	if string(data) != servicetest.Chain {
		t.Fatalf("bad input changed the file:\n%s", data)
	}
}

// TestVineClaimsAcrossSessions: two agents, each its own MCP session over
// streamable HTTP and its own client name, claim from one graph at once
// without naming an agent; every ready task is claimed exactly once, by
// "mcp:<client name>@127.0.0.1", and the events record who claimed.
func TestVineClaimsAcrossSessions(t *testing.T) {
	t.Parallel()
	b, ctx := setupVine(t)
	ts := httptest.NewServer(mcpapi.HTTPHandler(b.srv))
	t.Cleanup(ts.Close)
	var sb strings.Builder
	sb.WriteString("vine 1.2.0\n---\n[root] Root (notstarted)\n")
	const leaves = 8
	for i := range leaves {
		fmt.Fprintf(&sb, "-> t%d\n", i)
	}
	for i := range leaves {
		fmt.Fprintf(&sb, "---\n[t%d] Leaf %d (notstarted)\n", i, i)
	}
	f := b.file(t, "wide.vine", sb.String())

	dial := func(name string) *mcp.ClientSession {
		t.Helper()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: name, Version: "v0"}, nil).
			Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ts.URL, MaxRetries: -1}, nil)
		if err != nil {
			t.Fatalf("connect over HTTP: %v", err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	sessions := []*mcp.ClientSession{dial("vine-agent-1"), dial("vine-agent-2")}
	call(t, ctx, sessions[0], "vine_next", map[string]any{"file": f}) // import once

	var mu sync.Mutex
	claimedBy := map[string]string{}
	var wg sync.WaitGroup
	for _, cs := range sessions {
		wg.Go(func() {
			for {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "vine_claim", Arguments: map[string]any{"file": f}})
				if err != nil || res.IsError {
					t.Errorf("vine_claim: %v %s", err, text(res))
					return
				}
				var cr trellis.VineClaimResult
				data, _ := json.Marshal(res.StructuredContent)
				if err := json.Unmarshal(data, &cr); err != nil {
					t.Error(err)
					return
				}
				if cr.Node == nil {
					return
				}
				mu.Lock()
				if prev, dup := claimedBy[cr.Node.Node.ID]; dup {
					t.Errorf("%s claimed twice (%s, then %s)", cr.Node.Node.ID, prev, cs.ID())
				}
				claimedBy[cr.Node.Node.ID] = cs.ID()
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(claimedBy) != leaves {
		t.Fatalf("claimed %d of %d leaves: %v", len(claimedBy), leaves, claimedBy)
	}
	recs, _, err := b.nats.Store.Load(ctx, events.StreamVine, events.GraphFilter(events.GraphID("wide.vine")))
	if err != nil {
		t.Fatal(err)
	}
	actors := map[string]int{}
	for _, r := range recs[1:] {
		actors[r.Actor]++
	}
	for _, name := range []string{"vine-agent-1", "vine-agent-2"} {
		delete(actors, "mcp:"+name+"@127.0.0.1")
	}
	if len(recs) != 1+leaves || len(actors) != 0 {
		t.Fatalf("%d events; unexpected actors %v", len(recs), actors)
	}
}
