package embedding

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strings"
	"time"
)

// OpenAIConfig configures an OpenAI-compatible embeddings endpoint.
type OpenAIConfig struct {
	// URL is the endpoint's base URL ("http://localhost:11434/v1") or the
	// full embeddings URL (".../v1/embeddings"). Required.
	URL string
	// Model is the model name sent with every request. Required.
	Model string
	// APIKey, when set, is sent as "Authorization: Bearer <key>".
	APIKey string
	// BatchSize is the most texts per request (default 64).
	BatchSize int
	// Timeout bounds one request (default 60 s).
	Timeout time.Duration
	// Retries is how often a request failing with 5xx, 429, a timeout or a
	// network error is retried, with exponential backoff (default 3; -1:
	// never).
	Retries int
	// Backoff is the first retry's delay (default 500 ms), doubled each time.
	Backoff time.Duration
	// Dimensions, when > 0, is the vector dimension every answer must have;
	// otherwise the first answer's dimension is required of all later ones.
	Dimensions int
	// MaxTextBytes cuts longer texts (default 16 KiB: a chunk's limit).
	MaxTextBytes int
	// Client is the HTTP client (default: a new one).
	Client *http.Client
}

// OpenAI is an Embedder over an OpenAI-compatible /v1/embeddings
// endpoint.
type OpenAI struct {
	cfg  OpenAIConfig
	url  string
	dims int
}

// NewOpenAI validates cfg and returns the provider.
func NewOpenAI(cfg OpenAIConfig) (*OpenAI, error) {
	if strings.TrimSpace(cfg.URL) == "" {
		return nil, errors.New("embedding endpoint: the URL is empty (set --embed-url or TRELLIS_EMBED_URL)")
	}
	if !strings.HasPrefix(cfg.URL, "http://") && !strings.HasPrefix(cfg.URL, "https://") {
		return nil, fmt.Errorf("embedding endpoint: URL %q must start with http:// or https://", cfg.URL)
	}
	if strings.TrimSpace(cfg.Model) == "" {
		return nil, errors.New("embedding endpoint: the model is empty (set --embed-model or TRELLIS_EMBED_MODEL)")
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 64
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 60 * time.Second
	}
	if cfg.Retries == 0 {
		cfg.Retries = 3
	}
	if cfg.Retries < 0 {
		cfg.Retries = 0
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = 500 * time.Millisecond
	}
	if cfg.MaxTextBytes <= 0 {
		cfg.MaxTextBytes = 16 << 10
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{}
	}
	url := strings.TrimRight(cfg.URL, "/")
	if !strings.HasSuffix(url, "/embeddings") {
		url += "/embeddings"
	}
	return &OpenAI{cfg: cfg, url: url, dims: cfg.Dimensions}, nil
}

// Model implements Embedder.
func (o *OpenAI) Model() string { return "openai:" + o.cfg.Model }

type embedRequest struct {
	Model string   `json:"model"`
	Input []string `json:"input"`
}

type embedResponse struct {
	Data []struct {
		Index     int       `json:"index"`
		Embedding []float64 `json:"embedding"`
	} `json:"data"`
}

// Embed implements Embedder: batches of BatchSize texts, each retried on
// transient failures.
func (o *OpenAI) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += o.cfg.BatchSize {
		batch := texts[start:min(start+o.cfg.BatchSize, len(texts))]
		vs, err := o.embedBatch(ctx, batch)
		if err != nil {
			return nil, err
		}
		out = append(out, vs...)
	}
	return out, nil
}

func (o *OpenAI) embedBatch(ctx context.Context, texts []string) ([][]float32, error) {
	in := make([]string, len(texts))
	for i, t := range texts {
		if len(t) > o.cfg.MaxTextBytes {
			t = t[:o.cfg.MaxTextBytes]
		}
		if t == "" {
			t = " "
		}
		in[i] = t
	}
	body, err := json.Marshal(embedRequest{Model: o.cfg.Model, Input: in})
	if err != nil {
		return nil, err
	}
	var resp embedResponse
	if err := post(ctx, o.cfg.Client, o.url, o.cfg.APIKey, body, o.cfg.Timeout, o.cfg.Retries, o.cfg.Backoff, &resp); err != nil {
		return nil, err
	}
	if len(resp.Data) != len(texts) {
		return nil, errorf(ErrBadResponse, 0, "embedding endpoint %s returned %d vectors for %d texts", o.url, len(resp.Data), len(texts))
	}
	out := make([][]float32, len(texts))
	for i, d := range resp.Data {
		idx := d.Index
		if idx < 0 || idx >= len(texts) || out[idx] != nil {
			idx = i
		}
		if len(d.Embedding) == 0 {
			return nil, errorf(ErrBadResponse, 0, "embedding endpoint %s returned an empty vector", o.url)
		}
		if o.dims == 0 {
			o.dims = len(d.Embedding)
		}
		if len(d.Embedding) != o.dims {
			return nil, errorf(ErrBadResponse, 0, "embedding endpoint %s returned a vector of dimension %d, want %d (model %s)", o.url, len(d.Embedding), o.dims, o.cfg.Model)
		}
		v := make([]float32, len(d.Embedding))
		for k, x := range d.Embedding {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return nil, errorf(ErrBadResponse, 0, "embedding endpoint %s returned a vector holding %v", o.url, x)
			}
			v[k] = float32(x)
		}
		out[idx] = v
	}
	return out, nil
}

// post sends body to url and decodes the JSON answer into out, retrying
// transient failures. It is shared by the embeddings and chat clients of
// this package's callers through Post.
func post(ctx context.Context, client *http.Client, url, key string, body []byte, timeout time.Duration, retries int, backoff time.Duration, out any) error {
	var last error
	for attempt := 0; ; attempt++ {
		retry, err := postOnce(ctx, client, url, key, body, timeout, out)
		if err == nil {
			return nil
		}
		last = err
		if !retry || attempt >= retries || ctx.Err() != nil {
			return last
		}
		select {
		case <-ctx.Done():
			return last
		case <-time.After(backoff << attempt):
		}
	}
}

// Post sends a JSON request body to an OpenAI-compatible endpoint and
// decodes the answer into out, with the same timeout, retry and error
// rules as the embeddings provider (explain's chat client uses it).
func Post(ctx context.Context, client *http.Client, url, key string, body []byte, timeout time.Duration, retries int, out any) error {
	if client == nil {
		client = http.DefaultClient
	}
	return post(ctx, client, url, key, body, timeout, retries, 500*time.Millisecond, out)
}

func postOnce(ctx context.Context, client *http.Client, url, key string, body []byte, timeout time.Duration, out any) (retry bool, err error) {
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return false, errorf(ErrUnreachable, 0, "endpoint %s: %v", url, err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := client.Do(req)
	if err != nil {
		var nerr net.Error
		switch {
		case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil, errors.As(err, &nerr) && nerr.Timeout():
			return true, errorf(ErrTimeout, 0, "endpoint %s did not answer within %s", url, timeout)
		case ctx.Err() != nil:
			return false, fmt.Errorf("endpoint %s: %w", url, ctx.Err())
		}
		return true, errorf(ErrUnreachable, 0, "endpoint %s is unreachable: %v", url, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return true, errorf(ErrUnreachable, resp.StatusCode, "endpoint %s: reading the answer: %v", url, err)
	}
	switch {
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return true, errorf(ErrServer, resp.StatusCode, "endpoint %s answered %d: %s", url, resp.StatusCode, apiMessage(data))
	case resp.StatusCode >= 400:
		return false, errorf(ErrRejected, resp.StatusCode, "endpoint %s answered %d: %s", url, resp.StatusCode, apiMessage(data))
	case resp.StatusCode != http.StatusOK:
		return false, errorf(ErrBadResponse, resp.StatusCode, "endpoint %s answered %d", url, resp.StatusCode)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return false, errorf(ErrBadResponse, resp.StatusCode, "endpoint %s: undecodable answer: %v", url, err)
	}
	return false, nil
}

// apiMessage extracts the error message of an OpenAI-style error body
// ({"error": {"message": ...}}), else the body's start.
func apiMessage(data []byte) string {
	var e struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(data, &e) == nil && len(e.Error) > 0 {
		var obj struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(e.Error, &obj) == nil && obj.Message != "" {
			return obj.Message
		}
		var s string
		if json.Unmarshal(e.Error, &s) == nil && s != "" {
			return s
		}
	}
	t := strings.TrimSpace(string(data))
	if len(t) > 300 {
		t = t[:300] + "..."
	}
	if t == "" {
		t = "(empty body)"
	}
	return t
}
