package embedding

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Embedder turns texts into vectors.
type Embedder interface {
	// Model names the model and everything that changes its vectors
	// ("openai:nomic-embed-text"); vectors of different models are never
	// mixed.
	Model() string
	// Embed returns one vector per text, in order, all of the same
	// dimension.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// Error is a provider failure. Kind says what went wrong.
type Error struct {
	// Kind is one of the Err* kinds.
	Kind error
	// Status is the HTTP status, when there was an answer.
	Status int
	// Message says what happened, for a person.
	Message string
}

// Error kinds, matched with errors.Is.
var (
	// ErrUnreachable: no connection could be made (refused, DNS, TLS).
	ErrUnreachable = errors.New("endpoint unreachable")
	// ErrTimeout: the request took longer than the timeout.
	ErrTimeout = errors.New("endpoint timed out")
	// ErrRejected: the endpoint answered 4xx (bad key, unknown model, bad input); not retried.
	ErrRejected = errors.New("endpoint rejected the request")
	// ErrServer: the endpoint answered 5xx (or 429) after every retry.
	ErrServer = errors.New("endpoint failed")
	// ErrBadResponse: the answer is not what the protocol says (undecodable,
	// missing vectors, wrong dimension).
	ErrBadResponse = errors.New("endpoint answered badly")
)

func (e *Error) Error() string { return e.Message }

// Is matches the error's kind.
func (e *Error) Is(target error) bool { return target == e.Kind }

func errorf(kind error, status int, format string, args ...any) *Error {
	return &Error{Kind: kind, Status: status, Message: fmt.Sprintf(format, args...)}
}

// ContextualText is the text a chunk is embedded as (priority
// 3): its file, type and name above its content, so the vector knows where
// the code lives and what it is.
func ContextualText(path, chunkType, name, content string) string {
	var b strings.Builder
	b.Grow(len(content) + len(path) + len(name) + 32)
	b.WriteString("File: ")
	b.WriteString(path)
	b.WriteString("\nType: ")
	b.WriteString(chunkType)
	b.WriteString("\n")
	if name != "" {
		b.WriteString("Name: ")
		b.WriteString(name)
		b.WriteString("\n")
	}
	b.WriteString("---\n")
	b.WriteString(content)
	return b.String()
}
