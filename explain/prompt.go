package explain

import (
	"fmt"
	"strings"
)

// SystemPrompt is the instruction to the model.
const SystemPrompt = "You are an expert coding assistant analyzing retrieved code chunks.\n\n" +
	"INSTRUCTIONS:\n" +
	"1. Evaluate if the provided chunks actually answer the user's question\n" +
	"2. If YES:\n" +
	"   - Write a clear answer synthesizing information from the chunks\n" +
	"   - Cite sources using the format: [CITATION chunk_id]\n" +
	"   - Explain your reasoning\n" +
	"3. If NO:\n" +
	"   - Explain what's missing\n" +
	"   - List specific file paths or code elements needed\n" +
	"   - Suggest what to search for next\n\n" +
	"RULES:\n" +
	"- Only use information from provided chunks\n" +
	"- Always cite chunk IDs for claims\n" +
	"- Be specific about what you found or didn't find\n" +
	"- If uncertain, say so\n"

// Chunk is one piece of evidence.
type Chunk struct {
	ChunkID    string `json:"chunk_id"`
	SourcePath string `json:"source_path"`
	StartLine  int    `json:"start_line"`
	EndLine    int    `json:"end_line"`
	ChunkType  string `json:"chunk_type"`
	Name       string `json:"name"`
	Content    string `json:"content"`
}

// MaxChunkBytes cuts each chunk's content in the prompt.
const MaxChunkBytes = 8 << 10

// UserPrompt is the user message: the question and the chunks.
func UserPrompt(question string, chunks []Chunk) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Question: %s\n\nRetrieved Chunks (%d total):\n\n", question, len(chunks))
	for _, c := range chunks {
		content := c.Content
		if len(content) > MaxChunkBytes {
			content = content[:MaxChunkBytes] + "\n... (cut)"
		}
		fmt.Fprintf(&b, "[%s] %s (lines %d-%d), %s %s\n```\n%s\n```\n\n", c.ChunkID, c.SourcePath, c.StartLine, c.EndLine, c.ChunkType, c.Name, content)
	}
	b.WriteString("Analysis:")
	return b.String()
}
