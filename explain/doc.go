// Package explain answers a question about code from retrieved chunks
// (the explain mode): it builds the prompt
// (the explain instructions, the chunks with their ids), asks a chat model
// through the [Chat] interface ([OpenAIChat] speaks to any
// OpenAI-compatible /v1/chat/completions endpoint), and checks the answer's
// citations ("[CITATION chunk_id]") against the chunks it was given.
//
// It is pure apart from the chat client: no NATS, no index.
//
// It decides whether an answer's citations hold; it appends no events (code
// memory records what explain returns).
package explain
