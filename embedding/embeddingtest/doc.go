// Package embeddingtest runs a real HTTP server speaking the OpenAI
// embeddings and chat-completions protocol, with a small deterministic
// model, for tests of hybrid search and explain: the peer protocol, no
// network beyond loopback, no mocks of Trellis's own parts.
//
// Its embedding model hashes a text's words into Dims dimensions after
// mapping synonyms onto one word (Options.Synonyms), so that a paraphrase
// and the code it describes share dimensions while sharing no word. Its
// chat model answers with Options.Answer, by default a sentence citing
// the first chunk id of the prompt.
//
// It decides nothing of Trellis's and appends no events.
package embeddingtest
