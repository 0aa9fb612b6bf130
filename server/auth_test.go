package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/auth"
	"github.com/trellis/trellis/client"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/server"
	"github.com/trellis/trellis/taskqueue"
)

// authBundle is a server with --auth and a token per role.
type authBundle struct {
	srv    *server.Server
	ctx    context.Context
	tokens map[string]string // name -> token: admin, reader, worker (queue default), other (worker)
	http   *http.Client
}

func startAuth(t *testing.T, cfg server.Config) *authBundle {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	cfg.DataDir = t.TempDir()
	cfg.NATSAddr, cfg.HTTPAddr = "127.0.0.1:0", "127.0.0.1:0"
	cfg.Auth, cfg.ServeAPI, cfg.SyncInterval = true, true, time.Second
	srv, err := server.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	admin, err := auth.ReadSecret(srv.Info().AdminTokenFile)
	if err != nil {
		t.Fatal(err)
	}
	b := &authBundle{srv: srv, ctx: ctx, tokens: map[string]string{"admin": admin}, http: &http.Client{Timeout: 30 * time.Second}}
	for name, req := range map[string]auth.CreateRequest{
		"reader": {Name: "reader", Role: "reader"},
		"worker": {Name: "worker", Role: "worker", Queues: []string{"default"}},
		"other":  {Name: "other", Role: "worker"},
	} {
		c, err := srv.Auth().Create(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		b.tokens[name] = c.Token
	}
	return b
}

// natsClient connects to the server's NATS port with a token (as the CLI
// does) and returns the API client; err is the connect error.
func (b *authBundle) natsClient(t *testing.T, token string, opts ...nats.Option) (*client.API, *nats.Conn, error) {
	t.Helper()
	o := []nats.Option{nats.Timeout(2 * time.Second), nats.MaxReconnects(-1), nats.ReconnectWait(100 * time.Millisecond)}
	if token != "" {
		o = append(o, nats.Token(token), nats.CustomInboxPrefix(auth.InboxPrefix(token)))
	}
	nc, err := nats.Connect(b.srv.Info().NATSURL, append(o, opts...)...)
	if err != nil {
		return nil, nil, err
	}
	t.Cleanup(nc.Close)
	return client.NewAPI(nc, 10*time.Second).WithToken(token), nc, nil
}

// httpDo sends a request with the token (if any) and returns the status
// and body.
func (b *authBundle) httpDo(t *testing.T, token, method, path, body string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(b.ctx, method, b.srv.Info().HTTPURL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := b.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(raw)
}

// bearer adds a token to every request of an MCP client.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// mcpSession opens an MCP session over HTTP with the token.
func (b *authBundle) mcpSession(token string) (*mcp.ClientSession, error) {
	tr := &mcp.StreamableClientTransport{Endpoint: b.srv.Info().MCPURL, MaxRetries: -1, HTTPClient: &http.Client{Transport: bearer{token}}}
	return mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).Connect(b.ctx, tr, nil)
}

// mcpCall calls a tool and returns "" on success or the tool error's text.
func mcpCall(ctx context.Context, cs *mcp.ClientSession, tool string, args map[string]any) (string, error) {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return "", err
	}
	if res.IsError {
		var sb strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				sb.WriteString(tc.Text)
			}
		}
		return sb.String(), nil
	}
	return "", nil
}

// TestRolesOnEverySurface: for every role (and no token, and a bad
// token), a read, a worker operation and an admin operation on HTTP, MCP
// over HTTP, the NATS API and /metrics are allowed or refused exactly as
// the contract says: HTTP 401 without a valid token and 403 for a role
// that may not, code "unauthorized"; NATS connections without a valid
// token are refused and API calls of a role that may not answer
// "unauthorized"; MCP tool errors start with "unauthorized".
func TestRolesOnEverySurface(t *testing.T) {
	t.Parallel()
	b := startAuth(t, server.Config{})
	callers := []string{"", "bad", "reader", "worker", "admin"}
	token := func(c string) string {
		if c == "bad" {
			return "trellis_not-a-real-token-0000000000000000000000000"
		}
		return b.tokens[c]
	}
	level := map[string]int{"": -1, "bad": -1, "reader": 0, "worker": 1, "admin": 2}
	ops := []struct {
		name string
		need int // 0 reader, 1 worker, 2 admin
		http func(tok string) (int, string)
		nats func(c *client.API) error
		tool string
		args map[string]any
	}{
		{"read", 0,
			func(tok string) (int, string) { return b.httpDo(t, tok, "GET", "/v1/queue/tasks", "") },
			func(c *client.API) error { _, err := c.List(b.ctx, trellis.ListRequest{}); return err },
			"queue_list", map[string]any{}},
		{"metrics", 0,
			func(tok string) (int, string) { return b.httpDo(t, tok, "GET", "/metrics", "") },
			func(c *client.API) error {
				_, err := c.Show(b.ctx, events.NewID(time.Now()))
				return ignoreNotFound(err)
			},
			"queue_show", map[string]any{"task_id": events.NewID(time.Now())}},
		{"claim", 1,
			func(tok string) (int, string) {
				return b.httpDo(t, tok, "POST", "/v1/queue/next", `{"queue":"default"}`)
			},
			func(c *client.API) error { _, err := c.Next(b.ctx, trellis.NextRequest{}); return err },
			"queue_next", map[string]any{}},
		{"admin", 2,
			func(tok string) (int, string) {
				return b.httpDo(t, tok, "POST", "/v1/queues/default/controls", `{"action":"resume"}`)
			},
			func(c *client.API) error { _, err := c.Replay(b.ctx); return err },
			"queue_add", map[string]any{"objective": "by an admin"}},
	}
	for _, caller := range callers {
		tok := token(caller)
		var client *client.API
		var cerr error
		client, _, cerr = b.natsClient(t, tok)
		if level[caller] < 0 {
			if cerr == nil {
				t.Errorf("NATS accepted a connection with %q token", caller)
			}
		} else if cerr != nil {
			t.Fatalf("NATS refused %s: %v", caller, cerr)
		}
		cs, merr := b.mcpSession(tok)
		if level[caller] < 0 {
			if merr == nil {
				t.Errorf("MCP session opened with %q token", caller)
				cs.Close()
			}
		} else if merr != nil {
			t.Fatalf("MCP refused %s: %v", caller, merr)
		}
		for _, op := range ops {
			allowed := level[caller] >= op.need
			status, body := op.http(tok)
			switch {
			case allowed && status >= 400:
				t.Errorf("HTTP %s as %q: %d %s", op.name, caller, status, body)
			case !allowed && level[caller] < 0 && status != http.StatusUnauthorized:
				t.Errorf("HTTP %s as %q: %d, want 401", op.name, caller, status)
			case !allowed && level[caller] >= 0 && status != http.StatusForbidden:
				t.Errorf("HTTP %s as %q: %d, want 403", op.name, caller, status)
			case !allowed && op.name != "metrics" && !strings.Contains(body, `"code":"unauthorized"`):
				t.Errorf("HTTP %s as %q: body %s", op.name, caller, body)
			}
			if client != nil {
				err := op.nats(client)
				if allowed && err != nil {
					t.Errorf("NATS %s as %q: %v", op.name, caller, err)
				}
				if !allowed && trellis.ErrorCode(err) != trellis.CodeUnauthorized {
					t.Errorf("NATS %s as %q: %v, want unauthorized", op.name, caller, err)
				}
			}
			if cs != nil {
				text, err := mcpCall(b.ctx, cs, op.tool, op.args)
				if err != nil {
					t.Fatalf("MCP %s: %v", op.tool, err)
				}
				if op.name == "metrics" {
					text = strings.TrimPrefix(text, "not_found")
					if strings.HasPrefix(text, ":") || strings.Contains(text, "not_found") {
						text = ""
					}
				}
				if allowed && text != "" {
					t.Errorf("MCP %s as %q: %s", op.tool, caller, text)
				}
				if !allowed && !strings.HasPrefix(text, "unauthorized") {
					t.Errorf("MCP %s as %q: %q, want an unauthorized tool error", op.tool, caller, text)
				}
			}
		}
		if cs != nil {
			cs.Close()
		}
	}
	if status, _ := b.httpDo(t, "", "GET", "/healthz", ""); status != http.StatusOK {
		t.Errorf("healthz without a token: %d", status)
	}
}

func ignoreNotFound(err error) error {
	if trellis.ErrorCode(err) == trellis.CodeNotFound {
		return nil
	}
	return err
}

// TestTheCallerIsTheActor: the token name is the actor of the events a
// call causes and the claimant of what it claims; a worker cannot claim or
// finish under another name, a worker limited to a queue cannot claim
// elsewhere, and a task claimed by one worker cannot be finished by
// another token.
func TestTheCallerIsTheActor(t *testing.T) {
	t.Parallel()
	b := startAuth(t, server.Config{})
	admin, _, err := b.natsClient(t, b.tokens["admin"])
	if err != nil {
		t.Fatal(err)
	}
	worker, _, _ := b.natsClient(t, b.tokens["worker"])
	other, _, _ := b.natsClient(t, b.tokens["other"])
	task, err := admin.Add(b.ctx, trellis.AddTaskRequest{Objective: "who did it"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := worker.Next(b.ctx, trellis.NextRequest{Worker: "other"}); trellis.ErrorCode(err) != trellis.CodeUnauthorized {
		t.Fatalf("claim as another name: %v", err)
	}
	if _, err := worker.Next(b.ctx, trellis.NextRequest{Queue: "elsewhere"}); trellis.ErrorCode(err) != trellis.CodeUnauthorized {
		t.Fatalf("claim outside the token's queues: %v", err)
	}
	claimed, err := worker.Next(b.ctx, trellis.NextRequest{})
	if err != nil || claimed == nil || claimed.ClaimedBy != "worker" {
		t.Fatalf("claim: %+v %v", claimed, err)
	}
	if _, err := other.Done(b.ctx, trellis.DoneRequest{TaskID: task.TaskID, Worker: "worker", WhatWasDone: "x"}); trellis.ErrorCode(err) != trellis.CodeUnauthorized {
		t.Fatalf("finish as the claimant's name: %v", err)
	}
	if _, err := other.Done(b.ctx, trellis.DoneRequest{TaskID: task.TaskID, WhatWasDone: "x"}); trellis.ErrorCode(err) != trellis.CodeConflict {
		t.Fatalf("finish another worker's claim: %v", err)
	}
	// Over HTTP the body names no worker: the token's name is filled in.
	status, body := b.httpDo(t, b.tokens["worker"], "POST", "/v1/queue/tasks/"+task.TaskID+"/done", `{"what_was_done":"done over HTTP"}`)
	if status != http.StatusOK {
		t.Fatalf("done over HTTP: %d %s", status, body)
	}
	recs, err := admin.Audit(b.ctx, task.TaskID)
	if err != nil {
		t.Fatal(err)
	}
	var actors []string
	for _, r := range recs {
		actors = append(actors, r.Type+":"+r.Actor)
	}
	if got := strings.Join(actors, " "); got != "added:admin claimed:worker completed:worker" {
		t.Fatalf("actors = %s", got)
	}
}

// TestRawPublishIsRefused: a token holder, even an admin, connecting to
// NATS directly cannot publish on trellis.>, cannot use JetStream's API
// (read or write the streams), cannot subscribe to events or to other
// clients' replies: only Trellis appends events. Nothing reaches the log.
func TestRawPublishIsRefused(t *testing.T) {
	t.Parallel()
	b := startAuth(t, server.Config{})
	before, err := b.srv.Store().LastSeq(b.ctx, events.StreamQueue)
	if err != nil {
		t.Fatal(err)
	}
	for _, who := range []string{"admin", "worker", "reader"} {
		errs := make(chan error, 16)
		_, nc, err := b.natsClient(t, b.tokens[who], nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { errs <- err }))
		if err != nil {
			t.Fatal(err)
		}
		env, _ := events.NewEnvelope(time.Now(), taskqueue.Added, events.NewID(time.Now()), "intruder", 1, map[string]any{"queue": "default", "objective": "forged"})
		data, _ := json.Marshal(env)
		_ = nc.Publish("trellis.queue.default."+env.AggregateID+".added", data)
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-errs:
			if !errors.Is(err, nats.ErrPermissionViolation) && !strings.Contains(strings.ToLower(err.Error()), "permission") {
				t.Errorf("%s publish: %v", who, err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("%s: the server did not report the refused publish", who)
		}
		js, _ := jetstream.New(nc)
		jctx, cancel := context.WithTimeout(b.ctx, 2*time.Second)
		if _, err := js.Publish(jctx, "trellis.queue.default."+env.AggregateID+".added", data); err == nil {
			t.Errorf("%s: a JetStream publish was acknowledged", who)
		}
		if _, err := js.Stream(jctx, events.StreamQueue); err == nil {
			t.Errorf("%s: read the stream's info through the JetStream API", who)
		}
		cancel()
		for _, subj := range []string{"trellis.>", "trellis.queue.>", "_INBOX.>", "$JS.API.>"} {
			sub, err := nc.SubscribeSync(subj)
			if err == nil {
				_ = nc.Flush()
				select {
				case err := <-errs:
					if !strings.Contains(strings.ToLower(err.Error()), "permission") {
						t.Errorf("%s subscribe %s: %v", who, subj, err)
					}
				case <-time.After(10 * time.Second):
					t.Errorf("%s: subscribe to %s was not refused", who, subj)
				}
				_ = sub.Unsubscribe()
			}
		}
	}
	after, err := b.srv.Store().LastSeq(b.ctx, events.StreamQueue)
	if err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Fatalf("raw publishes reached the log: %d -> %d", before, after)
	}
}

// TestRevocationOnEveryListener: a revoked token stops working on HTTP,
// MCP over HTTP, the NATS API (its connection is closed, its reconnects
// and new connections are refused) and /metrics, without a restart. Each
// listener is polled until it refuses, with a 5 s deadline from the
// revoke; the time each took is logged.
func TestRevocationOnEveryListener(t *testing.T) {
	t.Parallel()
	b := startAuth(t, server.Config{})
	admin, _, _ := b.natsClient(t, b.tokens["admin"])
	tok := b.tokens["reader"]
	client, nc, err := b.natsClient(t, tok)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := b.mcpSession(tok)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if _, err := client.List(b.ctx, trellis.ListRequest{}); err != nil {
		t.Fatal(err)
	}
	if status, _ := b.httpDo(t, tok, "GET", "/metrics", ""); status != 200 {
		t.Fatalf("metrics before revoke: %d", status)
	}
	if _, err := admin.RevokeToken(b.ctx, "reader", "test"); err != nil {
		t.Fatal(err)
	}
	revoked := time.Now()
	deadline := revoked.Add(5 * time.Second)
	checks := map[string]func() bool{
		"http": func() bool {
			s, _ := b.httpDo(t, tok, "GET", "/v1/queue/tasks", "")
			return s == http.StatusUnauthorized
		},
		"metrics": func() bool { s, _ := b.httpDo(t, tok, "GET", "/metrics", ""); return s == http.StatusUnauthorized },
		"mcp": func() bool {
			ctx, cancel := context.WithTimeout(b.ctx, time.Second)
			defer cancel()
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "queue_list", Arguments: map[string]any{}})
			return err != nil
		},
		"nats api": func() bool {
			ctx, cancel := context.WithTimeout(b.ctx, time.Second)
			defer cancel()
			_, err := client.List(ctx, trellis.ListRequest{})
			return err != nil
		},
		"nats connection": func() bool { return !nc.IsConnected() },
		"nats connect":    func() bool { _, _, err := b.natsClient(t, tok); return err != nil },
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for name, refused := range checks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !refused() {
				if time.Now().After(deadline) {
					t.Errorf("%s still accepts the revoked token 5 s after the revoke", name)
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
			mu.Lock()
			t.Logf("%s refuses the revoked token %v after the revoke", name, time.Since(revoked).Round(time.Millisecond))
			mu.Unlock()
		}()
	}
	wg.Wait()
}
