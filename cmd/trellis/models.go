package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/codememory"
	"github.com/trellis/trellis/embedding"
	"github.com/trellis/trellis/explain"
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
func (m *modelFlags) codeConfig() (codememory.Config, error) {
	var cfg codememory.Config
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

// unusedOnServer refuses model flags (or TRELLIS_CHAT_*, TRELLIS_EMBED_*)
// given to a command that a running server answers: the server searches
// and explains with the models it was started with, so the flags would be
// silently ignored. The message says where to set them.
func (m *modelFlags) unusedOnServer(s *session) error {
	if !s.remote {
		return nil
	}
	var given []string
	if m.chatURL != "" || m.chatModel != "" {
		given = append(given, "--chat-url/--chat-model (TRELLIS_CHAT_URL, TRELLIS_CHAT_MODEL)")
	}
	if m.embedURL != "" || m.embedModel != "" {
		given = append(given, "--embed-url/--embed-model (TRELLIS_EMBED_URL, TRELLIS_EMBED_MODEL)")
	}
	if len(given) == 0 {
		return nil
	}
	where := "a running Trellis server"
	if s.ping != nil {
		where = fmt.Sprintf("the running Trellis server (pid %d, data %s)", s.ping.PID, s.ping.DataDir)
	}
	return &trellis.Error{Code: trellis.CodeInvalid, Field: "chat-url", Message: fmt.Sprintf(
		"%s answers this with the models it was started with, so %s given to this command would not be used: "+
			"start the server with them (trellis serve --chat-url URL --chat-model MODEL, or the same environment), "+
			"or run the command without them", where, strings.Join(given, " and "))}
}
