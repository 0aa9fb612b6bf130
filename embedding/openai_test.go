package embedding_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trellis/trellis/embedding"
)

// server is an OpenAI-compatible embeddings endpoint: it answers each
// text with a vector of dims values derived from the text's length, in
// reverse order of index (clients must use "index").
type server struct {
	dims     atomic.Int64
	requests atomic.Int64
	texts    atomic.Int64
	fail     func(n int64) int // status to answer for request n (0: answer)
	auth     atomic.Value
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := s.requests.Add(1)
	s.auth.Store(r.Header.Get("Authorization"))
	if r.URL.Path != "/v1/embeddings" || r.Method != http.MethodPost {
		http.Error(w, `{"error":{"message":"no route"}}`, http.StatusNotFound)
		return
	}
	if s.fail != nil {
		if code := s.fail(n); code != 0 {
			w.WriteHeader(code)
			_, _ = w.Write([]byte(`{"error":{"message":"model overloaded"}}`))
			return
		}
	}
	var req struct {
		Model string   `json:"model"`
		Input []string `json:"input"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model == "" {
		http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
		return
	}
	s.texts.Add(int64(len(req.Input)))
	type item struct {
		Index     int       `json:"index"`
		Embedding []float64 `json:"embedding"`
	}
	var data []item
	for i := len(req.Input) - 1; i >= 0; i-- {
		v := make([]float64, s.dims.Load())
		for k := range v {
			v[k] = float64(len(req.Input[i]) + k)
		}
		data = append(data, item{i, v})
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data, "model": req.Model})
}

func newServer(dims int, fail func(int64) int) *server {
	s := &server{fail: fail}
	s.dims.Store(int64(dims))
	return s
}

func start(t *testing.T, s *server) string {
	t.Helper()
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return ts.URL + "/v1"
}

func TestOpenAIBatchesInOrder(t *testing.T) {
	t.Parallel()
	s := newServer(3, nil)
	e, err := embedding.NewOpenAI(embedding.OpenAIConfig{URL: start(t, s), Model: "m", APIKey: "k1", BatchSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{"a", "bb", "ccc", "dddd", "eeeee"}
	vs, err := e.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 5 || s.requests.Load() != 3 || s.auth.Load() != "Bearer k1" {
		t.Fatalf("%d vectors in %d requests, auth %v", len(vs), s.requests.Load(), s.auth.Load())
	}
	for i, v := range vs {
		if int(v[0]) != len(texts[i]) || len(v) != 3 {
			t.Fatalf("vector %d = %v: out of order", i, v)
		}
	}
	if e.Model() != "openai:m" {
		t.Fatalf("model = %s", e.Model())
	}
}

func TestOpenAIErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		srv      *server
		cfg      embedding.OpenAIConfig
		kind     error
		requests int64
		contains string
	}{
		{"4xx is not retried", newServer(3, func(int64) int { return 401 }), embedding.OpenAIConfig{Retries: 3}, embedding.ErrRejected, 1, "model overloaded"},
		{"5xx is retried, then fails", newServer(3, func(int64) int { return 503 }), embedding.OpenAIConfig{Retries: 2}, embedding.ErrServer, 3, "answered 503"},
		{"429 is retried", newServer(3, func(int64) int { return 429 }), embedding.OpenAIConfig{Retries: 1}, embedding.ErrServer, 2, "429"},
		{"wrong dimension", newServer(3, nil), embedding.OpenAIConfig{Dimensions: 4}, embedding.ErrBadResponse, 1, "dimension 3, want 4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := tc.cfg
			cfg.URL, cfg.Model, cfg.Backoff = start(t, tc.srv), "m", time.Millisecond
			e, err := embedding.NewOpenAI(cfg)
			if err != nil {
				t.Fatal(err)
			}
			_, err = e.Embed(ctx, []string{"x"})
			if !errors.Is(err, tc.kind) || !strings.Contains(err.Error(), tc.contains) {
				t.Fatalf("err = %v; want %v containing %q", err, tc.kind, tc.contains)
			}
			if got := tc.srv.requests.Load(); got != tc.requests {
				t.Fatalf("%d requests, want %d", got, tc.requests)
			}
		})
	}
}

func TestOpenAIRecoversFromOne5xx(t *testing.T) {
	t.Parallel()
	s := newServer(2, func(n int64) int {
		if n == 1 {
			return 500
		}
		return 0
	})
	e, _ := embedding.NewOpenAI(embedding.OpenAIConfig{URL: start(t, s), Model: "m", Backoff: time.Millisecond})
	vs, err := e.Embed(context.Background(), []string{"x"})
	if err != nil || len(vs) != 1 || s.requests.Load() != 2 {
		t.Fatalf("vectors %v, err %v, %d requests", vs, err, s.requests.Load())
	}
}

func TestOpenAIDimensionChangesBetweenCalls(t *testing.T) {
	t.Parallel()
	s := newServer(3, nil)
	e, _ := embedding.NewOpenAI(embedding.OpenAIConfig{URL: start(t, s), Model: "m"})
	if _, err := e.Embed(context.Background(), []string{"x"}); err != nil {
		t.Fatal(err)
	}
	s.dims.Store(5)
	if _, err := e.Embed(context.Background(), []string{"x"}); !errors.Is(err, embedding.ErrBadResponse) {
		t.Fatalf("err = %v; want a dimension error", err)
	}
}

func TestOpenAITimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(func() { close(release); ts.Close() })
	e, _ := embedding.NewOpenAI(embedding.OpenAIConfig{URL: ts.URL, Model: "m", Timeout: 20 * time.Millisecond, Retries: -1})
	_, err := e.Embed(context.Background(), []string{"x"})
	if !errors.Is(err, embedding.ErrTimeout) || !strings.Contains(err.Error(), "did not answer within") {
		t.Fatalf("err = %v; want a timeout", err)
	}
}

func TestOpenAIUnreachable(t *testing.T) {
	t.Parallel()
	ts := httptest.NewServer(http.NotFoundHandler())
	url := ts.URL
	ts.Close()
	e, _ := embedding.NewOpenAI(embedding.OpenAIConfig{URL: url, Model: "m", Retries: -1})
	_, err := e.Embed(context.Background(), []string{"x"})
	if !errors.Is(err, embedding.ErrUnreachable) || !strings.Contains(err.Error(), "unreachable") {
		t.Fatalf("err = %v; want unreachable", err)
	}
}

func TestOpenAIBadResponses(t *testing.T) {
	t.Parallel()
	for name, body := range map[string]string{
		"not json":     "<html>",
		"too few":      `{"data":[]}`,
		"empty vector": `{"data":[{"index":0,"embedding":[]}]}`,
	} {
		body := body
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(body)) }))
			t.Cleanup(ts.Close)
			e, _ := embedding.NewOpenAI(embedding.OpenAIConfig{URL: ts.URL + "/v1/embeddings", Model: "m"})
			if _, err := e.Embed(context.Background(), []string{"x"}); !errors.Is(err, embedding.ErrBadResponse) {
				t.Fatalf("err = %v; want a bad response", err)
			}
		})
	}
}

func TestNewOpenAIValidates(t *testing.T) {
	t.Parallel()
	for _, cfg := range []embedding.OpenAIConfig{{Model: "m"}, {URL: "ftp://x", Model: "m"}, {URL: "http://x"}} {
		if _, err := embedding.NewOpenAI(cfg); err == nil {
			t.Fatalf("NewOpenAI(%+v) accepted", cfg)
		}
	}
}

func TestContextualText(t *testing.T) {
	t.Parallel()
	got := embedding.ContextualText("net/http/fs.go", "function", "FileServer", "func FileServer() {}")
	want := "File: net/http/fs.go\nType: function\nName: FileServer\n---\nfunc FileServer() {}"
	if got != want {
		t.Fatalf("ContextualText = %q", got)
	}
}
