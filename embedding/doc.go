// Package embedding turns text into vectors for hybrid code search. It
// holds the [Embedder] interface, the
// contextual text a chunk is embedded as ([ContextualText]: "File:",
// "Type:", "Name:", "---", content), and [OpenAI], a provider for any
// OpenAI-compatible /v1/embeddings endpoint (Ollama, llama.cpp server,
// vLLM, OpenAI): batched requests, retries with backoff on 5xx, 429 and
// network errors, a timeout per request, and clear errors for an
// unreachable endpoint, 4xx answers and vectors of the wrong dimension.
//
// It knows nothing of NATS or the log: the handlers record the vectors it
// returns as events, so a replay never calls a provider again.
//
// It decides nothing of the log and appends no events.
package embedding
