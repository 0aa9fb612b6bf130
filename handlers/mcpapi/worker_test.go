package mcpapi_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/handlers/mcpapi"
)

// TestLocalWorkerIdentity: over a transport without HTTP (in-memory, as
// stdio) a call without a worker acts as "mcp:<client name>@<host>:<parent
// pid>": queue_next and queue_done of one client match, a second server in
// the same process (a restarted `trellis mcp` under the same agent) keeps
// the identity, a client with another name gets another one, a configured
// worker (TRELLIS_WORKER) replaces the default, and an explicit worker
// argument wins over everything.
func TestLocalWorkerIdentity(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	want := localWorker(t, "mcpapi-test")

	cs := b.connect(t, ctx)
	added := callTask(t, ctx, cs, "queue_add", map[string]any{"objective": "default worker"})
	next := callTask(t, ctx, cs, "queue_next", nil)
	if next.TaskID != added.TaskID || next.ClaimedBy != want {
		t.Fatalf("next = %+v; want claimed by %q", next, want)
	}

	// Another client, another name: another identity, so it cannot finish
	// the claim without naming the claimant.
	other := connectAs(t, ctx, b.srv, "other-agent")
	msg := callErr(t, ctx, other, "queue_done", map[string]any{"task_id": added.TaskID, "what_was_done": "not mine"})
	if !strings.HasPrefix(msg, "conflict: ") || !strings.Contains(msg, want) {
		t.Fatalf("done by another client = %q; want a conflict naming %s", msg, want)
	}

	// The same agent restarting its MCP server: a new server in the same
	// process, a new connection; the claim is still its own.
	restarted := connectAs(t, ctx, mcpapi.NewServer(b.svc, "test"), "mcpapi-test")
	done := callTask(t, ctx, restarted, "queue_done", map[string]any{"task_id": added.TaskID, "what_was_done": "ok"})
	if done.Status != trellis.StatusDone || done.ClaimedBy != want {
		t.Fatalf("done after restart = %+v", done)
	}

	// A configured worker replaces the default for every client.
	pinned := connectAs(t, ctx, mcpapi.NewServerWith(b.svc, mcpapi.Config{Version: "test", Worker: "pinned-7"}), "any-client")
	callTask(t, ctx, pinned, "queue_add", map[string]any{"objective": "pinned"})
	if got := callTask(t, ctx, pinned, "queue_next", nil); got.ClaimedBy != "pinned-7" {
		t.Fatalf("configured worker: claimed by %q", got.ClaimedBy)
	}
	// An explicit argument wins over the configured worker.
	callTask(t, ctx, pinned, "queue_add", map[string]any{"objective": "explicit"})
	if got := callTask(t, ctx, pinned, "queue_next", map[string]any{"worker": "explicit-1"}); got.ClaimedBy != "explicit-1" {
		t.Fatalf("explicit worker: claimed by %q", got.ClaimedBy)
	}
}

// TestNewServerWithRejectsBadWorker: a configured default worker that is
// not a worker id is a programming error caught when the server is built.
func TestNewServerWithRejectsBadWorker(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Fatal("NewServerWith accepted worker \"has space\"")
		}
	}()
	mcpapi.NewServerWith(nil, mcpapi.Config{Worker: "has space"})
}

// connectAs opens an in-memory MCP session to srv as a client named name.
func connectAs(t *testing.T, ctx context.Context, srv *mcp.Server, name string) *mcp.ClientSession {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatalf("server connect: %v", err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: name, Version: "v0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatalf("client connect: %v", err)
	}
	t.Cleanup(func() {
		_ = cs.Close()
		_ = ss.Wait()
	})
	return cs
}

// headerTransport adds headers to every request.
type headerTransport struct{ h http.Header }

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.h {
		r.Header[k] = v
	}
	return http.DefaultTransport.RoundTrip(r)
}

// dialHTTP opens an MCP session over streamable HTTP to endpoint as a
// client named name, sending header (may be nil) with every request.
func dialHTTP(t *testing.T, ctx context.Context, endpoint, name string, header http.Header) *mcp.ClientSession {
	t.Helper()
	tr := &mcp.StreamableClientTransport{Endpoint: endpoint, MaxRetries: -1, HTTPClient: &http.Client{Transport: headerTransport{header}}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: name, Version: "v0"}, nil).Connect(ctx, tr, nil)
	if err != nil {
		t.Fatalf("connect over HTTP as %s: %v", name, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// TestHTTPWorkerIdentity: over streamable HTTP a call without a worker acts
// as "mcp:<client name>@<remote host>". A client that reconnects (a new
// MCP session) keeps its identity and can finish its claim; clients with
// other names, or on other hosts, get other identities and cannot; a
// client names itself with the X-Trellis-Worker header or ?worker= on the
// URL; an explicit worker argument wins.
func TestHTTPWorkerIdentity(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	h := mcpapi.HTTPHandler(b.srv)
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	// The same handler seen from another host.
	far := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.RemoteAddr = "192.0.2.7:40000"
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(far.Close)

	addTask := func(cs *mcp.ClientSession) string {
		t.Helper()
		return callTask(t, ctx, cs, "queue_add", map[string]any{"objective": "identity"}).TaskID
	}
	claim := func(cs *mcp.ClientSession, args map[string]any) *trellis.Task {
		t.Helper()
		task := callTask(t, ctx, cs, "queue_next", args)
		if task.TaskID == "" {
			t.Fatal("queue_next claimed nothing")
		}
		return task
	}

	alice := dialHTTP(t, ctx, ts.URL, "alice-agent", nil)
	aliceTask := addTask(alice)
	got := claim(alice, nil)
	if want := "mcp:alice-agent@127.0.0.1"; got.TaskID != aliceTask || got.ClaimedBy != want {
		t.Fatalf("alice claimed %+v; want %s claimed by %s", got, aliceTask, want)
	}
	firstSession := alice.ID()
	if err := alice.Close(); err != nil {
		t.Logf("close: %v", err)
	}

	// Other clients: another name on the same host, the same name on
	// another host. Neither shares alice's identity.
	// bob also claims to come from alice's far host: the handler sets the
	// remote host itself.
	bob := dialHTTP(t, ctx, ts.URL, "bob-agent", http.Header{"X-Trellis-Remote-Host": {"192.0.2.7"}})
	farAlice := dialHTTP(t, ctx, far.URL, "alice-agent", nil)
	before := b.lastSeq(t, ctx)
	for who, cs := range map[string]*mcp.ClientSession{"bob-agent": bob, "alice-agent@192.0.2.7": farAlice} {
		msg := callErr(t, ctx, cs, "queue_done", map[string]any{"task_id": aliceTask, "what_was_done": "not mine"})
		if !strings.HasPrefix(msg, "conflict: ") || !strings.Contains(msg, "mcp:alice-agent@127.0.0.1") {
			t.Fatalf("done by %s = %q; want a conflict naming alice", who, msg)
		}
	}
	if after := b.lastSeq(t, ctx); after != before {
		t.Fatalf("refused finishes changed the log: %d -> %d", before, after)
	}
	addTask(bob)
	if got := claim(bob, nil); got.ClaimedBy != "mcp:bob-agent@127.0.0.1" {
		t.Fatalf("bob claimed as %q", got.ClaimedBy)
	}
	addTask(farAlice)
	if got := claim(farAlice, nil); got.ClaimedBy != "mcp:alice-agent@192.0.2.7" {
		t.Fatalf("alice on another host claimed as %q", got.ClaimedBy)
	}

	// Alice reconnects: a new MCP session, the same identity; she finishes
	// the task she claimed before without naming a worker.
	alice = dialHTTP(t, ctx, ts.URL, "alice-agent", nil)
	if alice.ID() == firstSession {
		t.Fatalf("reconnect reused session %s", firstSession)
	}
	done := callTask(t, ctx, alice, "queue_done", map[string]any{"task_id": aliceTask, "what_was_done": "after reconnect"})
	if done.Status != trellis.StatusDone {
		t.Fatalf("done after reconnect = %+v", done)
	}

	// A client names itself: header or URL parameter. Two clients that
	// choose the same name share it (here: one claims, the other finishes).
	carol := dialHTTP(t, ctx, ts.URL, "alice-agent", http.Header{"X-Trellis-Worker": {"carol"}})
	carolTask := addTask(carol)
	if got := claim(carol, nil); got.ClaimedBy != "carol" || got.TaskID != carolTask {
		t.Fatalf("header-named client claimed %+v", got)
	}
	carolAgain := dialHTTP(t, ctx, ts.URL+"/?worker=carol", "some-other-client", nil)
	if done := callTask(t, ctx, carolAgain, "queue_done", map[string]any{"task_id": carolTask, "what_was_done": "shared by choice"}); done.Status != trellis.StatusDone {
		t.Fatalf("done by the client that chose the same name = %+v", done)
	}
	dave := dialHTTP(t, ctx, ts.URL+"?worker="+url.QueryEscape("dave@ci/7"), "alice-agent", nil)
	addTask(dave)
	if got := claim(dave, nil); got.ClaimedBy != "dave@ci/7" {
		t.Fatalf("URL-named client claimed as %q", got.ClaimedBy)
	}

	// An explicit argument wins over the header.
	addTask(carol)
	if got := claim(carol, map[string]any{"worker": "explicit-2"}); got.ClaimedBy != "explicit-2" {
		t.Fatalf("explicit worker: claimed as %q", got.ClaimedBy)
	}
}

// TestHTTPWorkerBadInput: an X-Trellis-Worker header or ?worker= that is not
// a worker id, or the two disagreeing, is refused with 400 and a message
// naming the source; nothing reaches the MCP server.
func TestHTTPWorkerBadInput(t *testing.T) {
	t.Parallel()
	b, _ := setup(t)
	h := mcpapi.HTTPHandler(b.srv)
	const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"0"}}}`
	for _, c := range []struct {
		name, target, header, want string
	}{
		{"bad header", "/mcp", "has space", "invalid: X-Trellis-Worker: "},
		{"too long header", "/mcp", strings.Repeat("w", 129), "invalid: X-Trellis-Worker: "},
		{"bad query", "/mcp?worker=" + url.QueryEscape("a b"), "", "invalid: worker: "},
		{"empty query", "/mcp?worker=", "", "invalid: worker: "},
		{"disagreeing", "/mcp?worker=alice", "bob", "invalid: worker: "},
	} {
		req := httptest.NewRequest(http.MethodPost, c.target, strings.NewReader(initBody))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if c.header != "" {
			req.Header.Set("X-Trellis-Worker", c.header)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusBadRequest || !strings.HasPrefix(rec.Body.String(), c.want) {
			t.Errorf("%s: %d %q; want 400 starting %q", c.name, rec.Code, rec.Body.String(), c.want)
		}
		if rec.Header().Get("Mcp-Session-Id") != "" {
			t.Errorf("%s: a session was created", c.name)
		}
	}
}
