package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/handlers"
	"github.com/trellis/trellis/handlers/httpapi"
)

// testBundle is what a test gets from setup: a real embedded NATS server,
// the service over it, and the API served by httptest.
type testBundle struct {
	nats    *eventstest.Bundle
	svc     *handlers.Service
	server  *httptest.Server
	dataDir string
	ctx     context.Context
}

// setup starts NATS, the service and the HTTP API; cfg (optional) is the
// API's configuration.
func setup(t *testing.T, cfg ...httpapi.Config) *testBundle {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	t.Cleanup(cancel)
	nb := eventstest.Start(t)
	dataDir := t.TempDir()
	svc := handlers.NewService(nb.Store, handlers.ServiceConfig{DataDir: dataDir})
	if err := svc.Start(ctx); err != nil {
		t.Fatalf("start service: %v", err)
	}
	t.Cleanup(func() {
		if err := svc.Close(); err != nil {
			t.Errorf("close service: %v", err)
		}
	})
	var c httpapi.Config
	if len(cfg) > 0 {
		c = cfg[0]
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	srv := httptest.NewServer(httpapi.New(svc, c))
	t.Cleanup(srv.Close)
	return &testBundle{nats: nb, svc: svc, server: srv, dataDir: dataDir, ctx: ctx}
}

// response is a finished HTTP exchange.
type response struct {
	status int
	header http.Header
	body   []byte
}

// do sends a request (see send), failing the test when it cannot.
func (b *testBundle) do(t *testing.T, method, path string, body any) response {
	t.Helper()
	res, err := b.send(method, path, body)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// send sends a request and reads the whole response; it is safe to call
// from any goroutine. body is sent as is when it is a string or []byte,
// encoded as JSON otherwise, and not at all when nil.
func (b *testBundle) send(method, path string, body any) (response, error) {
	var rd io.Reader
	switch v := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(v)
	case []byte:
		rd = bytes.NewReader(v)
	default:
		raw, err := json.Marshal(v)
		if err != nil {
			return response{}, fmt.Errorf("encode request: %w", err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(b.ctx, method, b.server.URL+path, rd)
	if err != nil {
		return response{}, fmt.Errorf("new request: %w", err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := b.server.Client().Do(req)
	if err != nil {
		return response{}, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return response{}, fmt.Errorf("%s %s: read body: %w", method, path, err)
	}
	return response{status: res.StatusCode, header: res.Header, body: raw}, nil
}

// expect fails the test unless the response has the status, and decodes
// its body into v (when v is not nil).
func (r response) expect(t *testing.T, status int, v any) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body %s", r.status, status, r.body)
	}
	if v != nil {
		if err := json.Unmarshal(r.body, v); err != nil {
			t.Fatalf("decode %s: %v", r.body, err)
		}
	}
}

// expectError fails the test unless the response is an error with the
// status, the stable code and the field, and a message containing msg
// (when not empty).
func (r response) expectError(t *testing.T, status int, code trellis.Code, field, msg string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body %.300s", r.status, status, r.body)
	}
	e := r.apiError(t)
	if e.Code != code || e.Field != field {
		t.Errorf("code %q field %q, want %q %q; body %.300s", e.Code, e.Field, code, field, r.body)
	}
	if msg != "" && !strings.Contains(e.Message, msg) {
		t.Errorf("message %q lacks %q", e.Message, msg)
	}
}

// apiError decodes an error-shaped body, failing the test when the body
// does not have exactly that shape.
func (r response) apiError(t *testing.T) *trellis.Error {
	t.Helper()
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("error content type %q; body %s", ct, r.body)
	}
	dec := json.NewDecoder(bytes.NewReader(r.body))
	dec.DisallowUnknownFields()
	var body httpapi.ErrorResponse
	if err := dec.Decode(&body); err != nil || body.Error == nil {
		t.Fatalf("body %s is not the error shape: %v", r.body, err)
	}
	if body.Error.Code == "" || body.Error.Message == "" {
		t.Fatalf("error without code or message: %s", r.body)
	}
	return body.Error
}

// lastSeq is the queue stream's last sequence.
func (b *testBundle) lastSeq(t *testing.T) uint64 {
	t.Helper()
	seq, err := b.svc.Store().LastSeq(b.ctx, events.StreamQueue)
	if err != nil {
		t.Fatalf("last seq: %v", err)
	}
	return seq
}

// addTask adds a task over HTTP.
func (b *testBundle) addTask(t *testing.T, req trellis.AddTaskRequest) *trellis.Task {
	t.Helper()
	var task trellis.Task
	b.do(t, http.MethodPost, "/v1/queue/tasks", req).expect(t, http.StatusCreated, &task)
	return &task
}

// claim claims the next task of queue for worker over HTTP; nil when none.
func (b *testBundle) claim(t *testing.T, queue, worker string) *trellis.Task {
	t.Helper()
	var task *trellis.Task
	b.do(t, http.MethodPost, "/v1/queue/next", trellis.NextRequest{Queue: queue, Worker: worker}).expect(t, http.StatusOK, &task)
	return task
}

// unknownID is a valid task id no task has.
func unknownID() string { return events.NewID(time.Now()) }
