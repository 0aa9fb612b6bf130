package embeddingtest

import (
	"encoding/json"
	"hash/fnv"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"unicode"
)

// Options configure the server.
type Options struct {
	// Dims is the vector dimension (default 512).
	Dims int
	// Synonyms map a word onto another before hashing ("undo": "rollback").
	Synonyms map[string]string
	// Answer is the chat model: the reply to a system and a user message
	// (default: cite the first chunk id of the user message).
	Answer func(system, user string) string
}

// Server is the running endpoint. URL is its base URL ("http://.../v1").
type Server struct {
	URL  string
	opts Options
	// EmbedRequests and EmbeddedTexts count embedding calls and texts;
	// ChatRequests counts chat calls.
	EmbedRequests, EmbeddedTexts, ChatRequests atomic.Int64
	mu                                         sync.Mutex
	down                                       bool
	lastPrompt                                 string
}

var chunkIDRE = regexp.MustCompile(`chunk_[0-9a-f]{16}`)

// Start runs a server until the test ends.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	s, stop := New(opts)
	t.Cleanup(stop)
	return s
}

// New runs a server until stop is called.
func New(opts Options) (s *Server, stop func()) {
	if opts.Dims <= 0 {
		opts.Dims = 512
	}
	if opts.Answer == nil {
		opts.Answer = func(_, user string) string {
			id := chunkIDRE.FindString(user)
			return "The code that does this is [CITATION " + id + "]."
		}
	}
	s = &Server{opts: opts}
	ts := httptest.NewServer(s)
	s.URL = ts.URL + "/v1"
	return s, ts.Close
}

// SetDown makes every request fail with 503 (true) or succeed again.
func (s *Server) SetDown(down bool) {
	s.mu.Lock()
	s.down = down
	s.mu.Unlock()
}

// LastPrompt is the user message of the last chat request.
func (s *Server) LastPrompt() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastPrompt
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	down := s.down
	s.mu.Unlock()
	if down {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"error":{"message":"model is loading"}}`))
		return
	}
	switch r.URL.Path {
	case "/v1/embeddings":
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model == "" {
			http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
			return
		}
		s.EmbedRequests.Add(1)
		s.EmbeddedTexts.Add(int64(len(req.Input)))
		data := make([]map[string]any, len(req.Input))
		for i, text := range req.Input {
			data[i] = map[string]any{"object": "embedding", "index": i, "embedding": s.Vector(text)}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data, "model": req.Model})
	case "/v1/chat/completions":
		var req struct {
			Model    string `json:"model"`
			Messages []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model == "" || len(req.Messages) < 2 {
			http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
			return
		}
		s.ChatRequests.Add(1)
		system, user := req.Messages[0].Content, req.Messages[len(req.Messages)-1].Content
		s.mu.Lock()
		s.lastPrompt = user
		s.mu.Unlock()
		_ = json.NewEncoder(w).Encode(map[string]any{"object": "chat.completion", "model": req.Model,
			"choices": []map[string]any{{"index": 0, "message": map[string]string{"role": "assistant", "content": s.opts.Answer(system, user)}, "finish_reason": "stop"}}})
	default:
		http.Error(w, `{"error":{"message":"no such route"}}`, http.StatusNotFound)
	}
}

// stop are words the model ignores.
var stop = map[string]bool{"the": true, "a": true, "an": true, "of": true, "to": true, "and": true, "in": true, "is": true,
	"it": true, "for": true, "on": true, "with": true, "file": true, "type": true, "name": true, "def": true, "self": true,
	"return": true, "func": true, "how": true, "do": true, "i": true, "does": true}

// Vector is the model's embedding of text.
func (s *Server) Vector(text string) []float64 {
	v := make([]float64, s.opts.Dims)
	for _, w := range words(text) {
		if syn, ok := s.opts.Synonyms[w]; ok {
			w = syn
		}
		if stop[w] || len(w) < 2 {
			continue
		}
		h := fnv.New32a()
		h.Write([]byte(w))
		v[h.Sum32()%uint32(s.opts.Dims)]++
	}
	var n float64
	for _, x := range v {
		n += x * x
	}
	if n > 0 {
		for i := range v {
			v[i] /= math.Sqrt(n)
		}
	}
	return v
}

// words splits text into lower-case words, camelCase and snake_case
// apart.
func words(text string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	prev := rune(0)
	for _, r := range text {
		switch {
		case unicode.IsUpper(r) && unicode.IsLower(prev):
			flush()
			cur = append(cur, r)
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			cur = append(cur, r)
		default:
			flush()
		}
		prev = r
	}
	flush()
	return out
}
