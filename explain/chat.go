package explain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/trellis/trellis/embedding"
)

// Chat is a chat model.
type Chat interface {
	// Model names the model.
	Model() string
	// Complete returns the model's answer to a system and a user message.
	Complete(ctx context.Context, system, user string) (string, error)
}

// OpenAIChatConfig configures an OpenAI-compatible chat endpoint.
type OpenAIChatConfig struct {
	// URL is the base URL ("http://localhost:11434/v1") or the full
	// ".../v1/chat/completions" URL. Required.
	URL string
	// Model is sent with every request. Required.
	Model string
	// APIKey, when set, is sent as a bearer token.
	APIKey string
	// Timeout bounds one request (default 120 s).
	Timeout time.Duration
	// Retries on 5xx, 429, timeouts and network errors (default 2; -1 never).
	Retries int
	// Temperature (default 0: the most deterministic answer).
	Temperature float64
	// Client is the HTTP client (default: a new one).
	Client *http.Client
}

// OpenAIChat is a Chat over an OpenAI-compatible /v1/chat/completions
// endpoint. Its errors are those of package embedding (ErrUnreachable,
// ErrTimeout, ErrRejected, ErrServer, ErrBadResponse).
type OpenAIChat struct {
	cfg OpenAIChatConfig
	url string
}

// NewOpenAIChat validates cfg and returns the client.
func NewOpenAIChat(cfg OpenAIChatConfig) (*OpenAIChat, error) {
	if strings.TrimSpace(cfg.URL) == "" {
		return nil, errors.New("chat endpoint: the URL is empty (set --chat-url or TRELLIS_CHAT_URL)")
	}
	if !strings.HasPrefix(cfg.URL, "http://") && !strings.HasPrefix(cfg.URL, "https://") {
		return nil, fmt.Errorf("chat endpoint: URL %q must start with http:// or https://", cfg.URL)
	}
	if strings.TrimSpace(cfg.Model) == "" {
		return nil, errors.New("chat endpoint: the model is empty (set --chat-model or TRELLIS_CHAT_MODEL)")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 120 * time.Second
	}
	if cfg.Retries == 0 {
		cfg.Retries = 2
	}
	if cfg.Retries < 0 {
		cfg.Retries = 0
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{}
	}
	url := strings.TrimRight(cfg.URL, "/")
	if !strings.HasSuffix(url, "/chat/completions") {
		url += "/chat/completions"
	}
	return &OpenAIChat{cfg: cfg, url: url}, nil
}

// Model implements Chat.
func (c *OpenAIChat) Model() string { return c.cfg.Model }

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Complete implements Chat.
func (c *OpenAIChat) Complete(ctx context.Context, system, user string) (string, error) {
	body, err := json.Marshal(map[string]any{
		"model":       c.cfg.Model,
		"messages":    []chatMessage{{"system", system}, {"user", user}},
		"temperature": c.cfg.Temperature,
	})
	if err != nil {
		return "", err
	}
	var resp struct {
		Choices []struct {
			Message chatMessage `json:"message"`
		} `json:"choices"`
	}
	if err := embedding.Post(ctx, c.cfg.Client, c.url, c.cfg.APIKey, body, c.cfg.Timeout, c.cfg.Retries, &resp); err != nil {
		return "", err
	}
	if len(resp.Choices) == 0 || strings.TrimSpace(resp.Choices[0].Message.Content) == "" {
		return "", &embedding.Error{Kind: embedding.ErrBadResponse, Message: "chat endpoint " + c.url + " returned no answer"}
	}
	return resp.Choices[0].Message.Content, nil
}
