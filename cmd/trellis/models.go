package main

import (
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/embedding"
	"github.com/trellis/trellis/explain"
	"github.com/trellis/trellis/handlers"
)

// modelFlags are the embedding and chat endpoints (flags, else env).
type modelFlags struct {
	embedURL, embedModel, embedKey string
	chatURL, chatModel, chatKey    string
	timeout                        time.Duration
}

func (m *modelFlags) register(root *cobra.Command) {
	f := root.PersistentFlags()
	f.StringVar(&m.embedURL, "embed-url", os.Getenv("TRELLIS_EMBED_URL"), "OpenAI-compatible embeddings endpoint for hybrid code search, e.g. http://localhost:11434/v1 (env TRELLIS_EMBED_URL)")
	f.StringVar(&m.embedModel, "embed-model", os.Getenv("TRELLIS_EMBED_MODEL"), "embedding model name, e.g. nomic-embed-text (env TRELLIS_EMBED_MODEL)")
	f.StringVar(&m.embedKey, "embed-key", "", "API key of the embeddings endpoint (prefer env TRELLIS_EMBED_KEY)")
	f.StringVar(&m.chatURL, "chat-url", os.Getenv("TRELLIS_CHAT_URL"), "OpenAI-compatible chat endpoint for explain, e.g. http://localhost:11434/v1 (env TRELLIS_CHAT_URL)")
	f.StringVar(&m.chatModel, "chat-model", os.Getenv("TRELLIS_CHAT_MODEL"), "chat model name (env TRELLIS_CHAT_MODEL)")
	f.StringVar(&m.chatKey, "chat-key", "", "API key of the chat endpoint (prefer env TRELLIS_CHAT_KEY)")
	f.DurationVar(&m.timeout, "model-timeout", 0, "timeout of one embedding or chat request (default 60 s embeddings, 120 s chat)")
}

// codeConfig builds the embedder and chat client the flags configure
// (none when their URL is empty).
func (m *modelFlags) codeConfig() (handlers.CodeConfig, error) {
	var cfg handlers.CodeConfig
	if m.embedURL != "" || m.embedModel != "" {
		key := m.embedKey
		if key == "" {
			key = os.Getenv("TRELLIS_EMBED_KEY")
		}
		e, err := embedding.NewOpenAI(embedding.OpenAIConfig{URL: m.embedURL, Model: m.embedModel, APIKey: key, Timeout: m.timeout})
		if err != nil {
			return cfg, trellis.FieldError("embed-url", "%v", err)
		}
		cfg.Embedder = e
	}
	if m.chatURL != "" || m.chatModel != "" {
		key := m.chatKey
		if key == "" {
			key = os.Getenv("TRELLIS_CHAT_KEY")
		}
		c, err := explain.NewOpenAIChat(explain.OpenAIChatConfig{URL: m.chatURL, Model: m.chatModel, APIKey: key, Timeout: m.timeout})
		if err != nil {
			return cfg, trellis.FieldError("chat-url", "%v", err)
		}
		cfg.Chat = c
	}
	return cfg, nil
}
