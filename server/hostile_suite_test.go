package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/auth"
	"github.com/trellis/trellis/handlers/httpapi"
	"github.com/trellis/trellis/handlers/mcpapi"
	"github.com/trellis/trellis/handlers/natsapi"
	"github.com/trellis/trellis/server"
)

// natsOps is every NATS API operation, each with what its handler does
// with a request body (ignored: a malformed body is not refused, and the
// operation is not sent one by an admin). An operation the API serves
// that is missing here fails the suite.
var natsOps = map[string]struct{ bodyIgnored bool }{
	"ping": {bodyIgnored: true}, "replay": {bodyIgnored: true},
	"queue.add": {}, "queue.add_many": {}, "queue.next": {}, "queue.done": {}, "queue.fail": {}, "queue.show": {},
	"queue.list": {}, "queue.retry": {}, "queue.control": {}, "queue.controls": {}, "queue.cancel": {},
	"queue.release_claim": {},
	"queue.export":        {bodyIgnored: true}, "schedule.add": {}, "schedule.list": {}, "schedule.remove": {},
	"vine.next": {}, "vine.read": {}, "vine.write": {}, "vine.claim": {}, "vine.expand": {}, "vine.import": {}, "vine.export": {},
	"task.create": {}, "task.join": {}, "task.objective": {}, "task.complete_agent": {}, "task.complete": {}, "task.show": {},
	"task.list": {}, "task.context": {}, "memory.observe": {}, "memory.consolidate": {}, "memory.facts": {}, "memory.history": {},
	"code.search": {}, "code.chunk": {}, "code.explain": {}, "code.ingest": {}, "audit": {}, "audit.query": {}, "audit.projections": {bodyIgnored: true},
	"queue.prepare": {}, "queue.claim": {}, "queue.heartbeat": {}, "queue.ack": {}, "queue.release": {},
	"token.create": {}, "token.list": {}, "token.revoke": {}, "token.whoami": {bodyIgnored: true},
	"workflow.start": {}, "workflow.show": {}, "workflow.list": {}, "workflow.signal": {}, "workflow.cancel": {}, "workflow.retry": {},
}

// httpRoutes is every HTTP route, each with whether it reads a JSON body
// (a malformed or oversized one is refused) or is served without a token.
var httpRoutes = map[string]struct{ body, open bool }{
	"POST /v1/queue/tasks": {body: true}, "POST /v1/queue/tasks/batch": {body: true}, "POST /v1/queue/next": {body: true},
	"POST /v1/queue/tasks/{id}/done": {body: true}, "POST /v1/queue/tasks/{id}/fail": {body: true}, "GET /v1/queue/tasks": {},
	"GET /v1/queue/tasks/{id}": {}, "POST /v1/queue/tasks/{id}/retry": {body: true}, "POST /v1/queue/tasks/{id}/cancel": {body: true},
	"POST /v1/queue/tasks/{id}/heartbeat": {body: true}, "POST /v1/queue/tasks/{id}/release": {body: true},
	"POST /v1/schedules": {body: true}, "GET /v1/schedules": {}, "DELETE /v1/schedules/{name}": {},
	"GET /v1/queues/{queue}/controls": {}, "POST /v1/queues/{queue}/controls": {body: true}, "GET /v1/queue/export": {},
	"GET /v1/audit": {}, "GET /v1/audit/{id}": {}, "POST /v1/replay": {}, "POST /v1/vine/next": {body: true},
	"POST /v1/vine/read": {body: true}, "POST /v1/vine/write": {body: true}, "POST /v1/vine/claim": {body: true},
	"POST /v1/vine/expand": {body: true}, "POST /v1/vine/import": {body: true}, "GET /v1/vine/graphs/{id}/export": {},
	"GET /healthz": {open: true}, "POST /tasks": {body: true}, "GET /tasks": {}, "GET /tasks/{id}": {},
	"POST /tasks/{id}/join": {body: true}, "POST /tasks/{id}/agents/{agent_id}/complete": {body: true},
	"PATCH /tasks/{id}/objectives/{obj_id}": {body: true}, "POST /tasks/{id}/complete": {body: true},
	"POST /tasks/{id}/consolidate": {body: true}, "GET /tasks/{id}/context": {}, "POST /v1/memory/observations": {body: true},
	"GET /v1/memory/facts": {}, "GET /v1/memory/history": {}, "POST /v1/code/search": {body: true},
	"GET /v1/code/chunks/{id}": {}, "POST /v1/code/explain": {body: true}, "GET /v1/queue/activity": {},
	"GET /v1/queue/workers": {}, "GET /v1/queue/tasks/{id}/checkpoint": {}, "GET /v1/vine/graphs": {},
	"GET /v1/vine/graphs/{id}": {}, "GET /v1/vine/graphs/{id}/nodes/{node}": {}, "GET /v1/events/live": {}, "GET /v1/whoami": {},
	"GET /{$}": {open: true}, "GET /ui/": {open: true},
	"POST /v1/workflows": {body: true}, "GET /v1/workflows": {}, "GET /v1/workflows/{id}": {},
	"POST /v1/workflows/{id}/signal": {body: true}, "POST /v1/workflows/{id}/cancel": {body: true}, "POST /v1/workflows/{id}/retry": {body: true},
}

// mcpTools is every MCP tool the server lists.
var mcpTools = []string{
	"queue_add", "queue_add_many", "queue_next", "queue_done", "queue_fail", "queue_list", "queue_show", "queue_cancel",
	"queue_heartbeat", "queue_release",
	"vine_next", "vine_read", "vine_write", "vine_claim", "vine_expand",
	"task_create", "task_join", "task_objective", "task_complete_agent", "task_complete", "task_show", "task_list",
	"task_context", "observe", "consolidate", "facts", "history", "consolidation_history", "search_chunks", "get_chunk", "explain_code", "audit_query",
	"workflow_start", "workflow_show", "workflow_list", "workflow_signal", "workflow_cancel",
}

// below returns the token of the role just under what op needs ("" for an
// operation every reader may do: only no token is refused).
func (b *authBundle) below(op string) (role, token string) {
	switch auth.Required(op) {
	case auth.RoleAdmin:
		return "worker", b.tokens["worker"]
	case auth.RoleWorker:
		return "reader", b.tokens["reader"]
	}
	return "", ""
}

// TestHostileClients: every operation of every transport (each NATS API
// operation, HTTP route and MCP tool, enumerated from the code: a new one
// without an entry here fails) is sent what a hostile token holder would
// send: a forged reply subject, no token, the token of a role too low, a
// malformed and an oversized body, unknown arguments; then foreign
// actors, paths with .., symbolic links out of the workspace and non-.vine
// names on the operations that take them. Each gets a clear refusal, and
// the log is unchanged: every stream holds what it held, and audit verify
// finds nothing.
func TestHostileClients(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	b := startAuth(t, server.Config{Workspaces: []string{ws}})
	ctx := b.ctx
	admin, _, err := b.natsClient(t, b.tokens["admin"])
	if err != nil {
		t.Fatal(err)
	}
	task, err := admin.Add(ctx, trellis.AddTaskRequest{Objective: "the task hostile clients aim at"})
	if err != nil {
		t.Fatal(err)
	}
	plan := filepath.Join(ws, "plan.vine")
	must(t, os.WriteFile(plan, []byte("vine 1.2.0\n---\n[root] Ship (notstarted)\n-> a\n---\n[a] Analyse (notstarted)\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(ws, "README.md"), []byte("# readme\n"), 0o644))
	outside := t.TempDir()
	must(t, os.WriteFile(filepath.Join(outside, "secret.vine"), []byte("vine 1.2.0\n---\n[root] Secret (notstarted)\n"), 0o644))
	must(t, os.Symlink(filepath.Join(outside, "secret.vine"), filepath.Join(ws, "link.vine")))
	must(t, os.Symlink(outside, filepath.Join(ws, "shared")))
	must(t, os.WriteFile(filepath.Join(ws, "env.vine"), []byte("DB_PASSWORD=hunter2\n"), 0o644))
	if _, err := admin.VineImport(ctx, trellis.VineFileRequest{File: plan}); err != nil {
		t.Fatal(err)
	}
	before := logCount(t, ctx, b.srv)

	t.Run("nats", func(t *testing.T) { b.hostileNATS(t, task.TaskID) })
	t.Run("http", func(t *testing.T) { b.hostileHTTP(t, task.TaskID) })
	t.Run("mcp", func(t *testing.T) { b.hostileMCP(t, task.TaskID) })
	t.Run("content", func(t *testing.T) {
		if raw, _ := os.ReadFile(filepath.Join(ws, "README.md")); string(raw) != "# readme\n" {
			t.Errorf("README.md became %q", raw)
		}
		if ents, _ := os.ReadDir(outside); len(ents) != 1 {
			t.Errorf("files written outside the workspace: %v", ents)
		}
	})
	requireLogUnchanged(t, ctx, b.srv, before, "hostile clients")
}

// natsCall sends one API request as token with data and returns the
// error code of the answer ("" for a success).
func natsCall(t *testing.T, ctx context.Context, nc *nats.Conn, token, op, data string) (trellis.Code, string) {
	t.Helper()
	m := nats.NewMsg(natsapi.Prefix + op)
	m.Data = []byte(data)
	if token != "" {
		m.Header.Set(natsapi.HeaderAuthorization, "Bearer "+token)
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err := nc.RequestMsgWithContext(cctx, m)
	if err != nil {
		t.Fatalf("%s: no answer: %v", op, err)
	}
	var body struct {
		Error *trellis.Error `json:"error"`
	}
	if err := json.Unmarshal(res.Data, &body); err != nil && res.Header.Get("Trellis-Export-Seq") == "" {
		t.Fatalf("%s: answer %.200q: %v", op, res.Data, err)
	}
	if body.Error == nil {
		return "", string(res.Data)
	}
	return body.Error.Code, body.Error.Message
}

func (b *authBundle) hostileNATS(t *testing.T, taskID string) {
	ctx := b.ctx
	served := natsapi.Operations()
	for _, op := range served {
		if _, ok := natsOps[op]; !ok {
			t.Errorf("NATS operation %s has no hostile cases: add it to natsOps", op)
		}
	}
	// One connection per token, each with its token's own inbox prefix;
	// anonymous requests go through the admin's connection (the header
	// carries the token, not the connection).
	conns := map[string]*nats.Conn{}
	for name, tok := range b.tokens {
		_, nc, err := b.natsClient(t, tok)
		if err != nil {
			t.Fatal(err)
		}
		conns[name] = nc
	}
	_, anon, err := b.natsClient(t, b.tokens["reader"])
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range served {
		// A forged reply subject: neither run nor answered. The anonymous
		// request after it, on the same subscription, is answered only
		// once the forged one was dropped.
		m := nats.NewMsg(natsapi.Prefix + op)
		m.Reply = "trellis.queue.default." + taskID + ".completed"
		m.Data = []byte(`{}`)
		m.Header.Set(natsapi.HeaderAuthorization, "Bearer "+b.tokens["admin"])
		must(t, conns["reader"].PublishMsg(m))
		must(t, conns["reader"].Flush())
		if code, msg := natsCall(t, ctx, conns["reader"], "", op, "{}"); code != trellis.CodeUnauthorized {
			t.Errorf("%s without a token: %s %s; want unauthorized", op, code, msg)
		}
		if role, tok := b.below(op); tok != "" {
			if code, msg := natsCall(t, ctx, conns[role], tok, op, "{}"); code != trellis.CodeUnauthorized {
				t.Errorf("%s as a %s: %s %s; want unauthorized", op, role, code, msg)
			}
		}
		if !natsOps[op].bodyIgnored {
			if code, msg := natsCall(t, ctx, conns["admin"], b.tokens["admin"], op, `{"x":`); code != trellis.CodeInvalid {
				t.Errorf("%s with a malformed body: %s %s; want invalid", op, code, msg)
			}
			if code, msg := natsCall(t, ctx, conns["admin"], b.tokens["admin"], op, `{"zz_hostile":1}`); code != trellis.CodeInvalid {
				t.Errorf("%s with an unknown field: %s %s; want invalid", op, code, msg)
			}
		}
	}
	_ = anon
	for _, c := range hostileRequests(taskID) {
		tok := b.tokens[c.as]
		if code, msg := natsCall(t, ctx, conns[c.as], tok, c.op, c.body); code != c.want {
			t.Errorf("nats %s (%s): %s %s; want %s", c.op, c.name, code, msg, c.want)
		} else if strings.Contains(msg, "hunter2") || strings.Contains(msg, "Secret") {
			t.Errorf("nats %s (%s) echoes file content: %s", c.op, c.name, msg)
		}
	}
}

// hostileRequest is one request a token holder sends with a hostile
// field, and the refusal it must get.
type hostileRequest struct {
	name, as, op, body string
	want               trellis.Code
	route              string // the HTTP route taking the same body ("" when none)
	tool               string // the MCP tool taking the same arguments ("" when none)
}

func hostileRequests(taskID string) []hostileRequest {
	u := trellis.CodeUnauthorized
	inv := trellis.CodeInvalid
	return []hostileRequest{
		{"foreign worker on next", "worker", "queue.next", `{"worker":"mallory"}`, u, "POST /v1/queue/next", "queue_next"},
		{"foreign worker on done", "worker", "queue.done", `{"task_id":"` + taskID + `","worker":"mallory","what_was_done":"x"}`, u, "", "queue_done"},
		{"foreign worker on fail", "worker", "queue.fail", `{"task_id":"` + taskID + `","worker":"mallory","error":"x"}`, u, "", "queue_fail"},
		{"foreign worker on heartbeat", "worker", "queue.heartbeat", `{"task_id":"` + taskID + `","worker":"mallory"}`, u, "", "queue_heartbeat"},
		{"foreign actor on release", "admin", "queue.release_claim", `{"task_id":"` + taskID + `","actor":"mallory"}`, u, "", ""},
		{"foreign actor on cancel", "admin", "queue.cancel", `{"task_id":"` + taskID + `","actor":"mallory"}`, u, "", ""},
		{"foreign actor on retry", "admin", "queue.retry", `{"task_id":"` + taskID + `","actor":"mallory"}`, u, "", ""},
		{"foreign actor on schedule", "admin", "schedule.add", `{"name":"n","every":"1h","objective":"x","actor":"mallory"}`, u, "POST /v1/schedules", ""},
		{"foreign actor on schedule remove", "admin", "schedule.remove", `{"name":"n","actor":"mallory"}`, u, "", ""},
		{"foreign agent on vine write", "worker", "vine.write", `{"file":"plan.vine","agent":"mallory","operations":[{"op":"set_status","id":"a","status":"started"}]}`, u, "POST /v1/vine/write", ""},
		{"foreign agent on vine claim", "worker", "vine.claim", `{"file":"plan.vine","agent":"mallory"}`, u, "POST /v1/vine/claim", "vine_claim"},
		{"foreign agent on observe", "worker", "memory.observe", `{"task":"t","agent_id":"mallory","session":"s","type":"insight","text":"x"}`, u, "POST /v1/memory/observations", "observe"},
		{"another agent's branch", "worker", "memory.observe", `{"branch":"task/t/mallory","session":"s","type":"insight","text":"x"}`, u, "POST /v1/memory/observations", "observe"},
		{"a task branch", "worker", "memory.observe", `{"branch":"task/t","session":"s","type":"insight","text":"x"}`, inv, "POST /v1/memory/observations", "observe"},
		{".. in a vine file", "reader", "vine.next", `{"file":"../../etc/x.vine"}`, inv, "POST /v1/vine/next", "vine_next"},
		{".. in a vine read", "reader", "vine.read", `{"file":"../x.vine","action":"summary"}`, inv, "POST /v1/vine/read", "vine_read"},
		{"a .vine symlink out", "reader", "vine.next", `{"file":"link.vine"}`, inv, "POST /v1/vine/next", "vine_next"},
		{"a file that is not VINE", "reader", "vine.next", `{"file":"env.vine"}`, inv, "POST /v1/vine/next", "vine_next"},
		{"import through a symlink", "worker", "vine.import", `{"file":"shared/secret.vine"}`, inv, "POST /v1/vine/import", ""},
		{"extract over the README", "worker", "vine.write", `{"file":"plan.vine","operations":[{"op":"extract_to_ref","id":"a","vine":"./README.md"}]}`, inv, "POST /v1/vine/write", "vine_write"},
		{"extract through a symlinked dir", "worker", "vine.write", `{"file":"plan.vine","operations":[{"op":"extract_to_ref","id":"a","vine":"shared/x.vine"}]}`, inv, "POST /v1/vine/write", "vine_write"},
		{"add_ref with ..", "worker", "vine.write", `{"file":"plan.vine","operations":[{"op":"add_ref","id":"r","name":"R","vine":"../../r.vine"}]}`, inv, "POST /v1/vine/write", "vine_write"},
		{"expand a child through a symlink", "worker", "vine.expand", `{"file":"plan.vine","ref_id":"a","child_file":"shared/secret.vine"}`, inv, "POST /v1/vine/expand", "vine_expand"},
		{"ingest outside the workspace", "admin", "code.ingest", `{"root":"/etc"}`, inv, "", ""},
		{"ingest with ..", "admin", "code.ingest", `{"root":"../../.."}`, inv, "", ""},
		{"foreign actor on workflow signal", "worker", "workflow.signal", `{"run_id":"01JAAAAAAAAAAAAAAAAAAAAAAA","name":"ship","actor":"mallory"}`, u, "", ""},
		{"foreign actor on workflow start", "admin", "workflow.start", `{"workflow":"order","actor":"mallory"}`, u, "", ""},
		{"foreign actor on workflow cancel", "admin", "workflow.cancel", `{"run_id":"01JAAAAAAAAAAAAAAAAAAAAAAA","actor":"mallory"}`, u, "", ""},
		{"foreign actor on workflow retry", "admin", "workflow.retry", `{"run_id":"01JAAAAAAAAAAAAAAAAAAAAAAA","actor":"mallory"}`, u, "", ""},
	}
}

// concrete fills a route pattern's wildcards.
func concrete(pattern, taskID string) (method, path string) {
	method, path, ok := strings.Cut(pattern, " ")
	if !ok {
		return "GET", pattern
	}
	r := strings.NewReplacer("{id}", taskID, "{queue}", "default", "{name}", "nightly", "{agent_id}", "agent_1",
		"{obj_id}", "obj_1", "{node}", "a", "{$}", "")
	return method, r.Replace(path)
}

func (b *authBundle) hostileHTTP(t *testing.T, taskID string) {
	patterns := httpapi.Patterns(httpapi.New(b.srv.Service(), httpapi.Config{}))
	if len(patterns) < 40 {
		t.Fatalf("only %d routes enumerated", len(patterns))
	}
	for _, p := range patterns {
		if _, ok := httpRoutes[p]; !ok {
			t.Errorf("HTTP route %s has no hostile cases: add it to httpRoutes", p)
		}
	}
	big := `{"objective":"` + strings.Repeat("x", int(httpapi.DefaultMaxBodyBytes)) + `"}`
	for _, p := range patterns {
		c := httpRoutes[p]
		if c.open {
			continue
		}
		method, path := concrete(p, taskID)
		if s, body := b.httpDo(t, "", method, path, ""); s != http.StatusUnauthorized {
			t.Errorf("%s without a token: %d %s; want 401", p, s, body)
		}
		op, _ := httpapi.RouteOp(p)
		if role, tok := b.below(op); tok != "" {
			if s, body := b.httpDo(t, tok, method, path, ""); s != http.StatusForbidden {
				t.Errorf("%s as a %s: %d %s; want 403", p, role, s, body)
			}
		}
		if c.body {
			if s, body := b.httpDo(t, b.tokens["admin"], method, path, `{"x":`); s != http.StatusBadRequest {
				t.Errorf("%s with a malformed body: %d %.200s; want 400", p, s, body)
			}
			if s, body := b.httpDo(t, b.tokens["admin"], method, path, big); s != http.StatusRequestEntityTooLarge {
				t.Errorf("%s with an oversized body: %d %.200s; want 413", p, s, body)
			}
		}
	}
	for _, c := range hostileRequests(taskID) {
		if c.route == "" {
			continue
		}
		method, path := concrete(c.route, taskID)
		s, body := b.httpDo(t, b.tokens[c.as], method, path, c.body)
		want := trellis.HTTPStatus(c.want)
		if c.want == trellis.CodeUnauthorized {
			want = http.StatusForbidden // an authenticated caller refused
		}
		if s != want || strings.Contains(body, "hunter2") || strings.Contains(body, "Secret") {
			t.Errorf("http %s (%s): %d %.300s; want %d", c.route, c.name, s, body, want)
		}
	}
}

func (b *authBundle) hostileMCP(t *testing.T, taskID string) {
	ctx := b.ctx
	sessions := map[string]*mcp.ClientSession{}
	for _, name := range []string{"admin", "worker", "reader"} {
		cs, err := b.mcpSession(b.tokens[name])
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		sessions[name] = cs
	}
	list, err := sessions["admin"].ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, tool := range list.Tools {
		listed = append(listed, tool.Name)
		if !slices.Contains(mcpTools, tool.Name) {
			t.Errorf("MCP tool %s has no hostile cases: add it to mcpTools", tool.Name)
		}
	}
	if len(listed) < 20 {
		t.Fatalf("only %d tools listed", len(listed))
	}
	unauthorized := regexp.MustCompile(`^unauthorized: `)
	for _, tool := range listed {
		op := mcpapi.ToolOp(tool)
		if role, _ := b.below(op); role != "" {
			msg, err := mcpCall(ctx, sessions[role], tool, map[string]any{})
			if err != nil || !unauthorized.MatchString(msg) {
				t.Errorf("%s as a %s: %q %v; want unauthorized", tool, role, msg, err)
			}
		}
		msg, err := mcpCall(ctx, sessions["admin"], tool, map[string]any{"zz_hostile": 1})
		if err != nil || !strings.HasPrefix(msg, "invalid: ") {
			t.Errorf("%s with an unknown argument: %q %v; want invalid", tool, msg, err)
		}
	}
	for _, c := range hostileRequests(taskID) {
		if c.tool == "" {
			continue
		}
		var args map[string]any
		must(t, json.Unmarshal([]byte(c.body), &args))
		msg, err := mcpCall(ctx, sessions[c.as], c.tool, args)
		if err != nil || !strings.HasPrefix(msg, string(c.want)+": ") || strings.Contains(msg, "hunter2") || strings.Contains(msg, "Secret") {
			t.Errorf("mcp %s (%s): %q %v; want %s", c.tool, c.name, msg, err, c.want)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
