package codememory_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/codememory"
	"github.com/trellis/trellis/embedding"
	"github.com/trellis/trellis/embedding/embeddingtest"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/explain"
	"github.com/trellis/trellis/handlers"
	"github.com/trellis/trellis/internal/servicetest"
)

const txGo = `package db

// Tx is a database transaction.
type Tx struct{ done bool }

// Rollback aborts the transaction.
func (tx *Tx) Rollback() error {
	tx.done = true
	return nil
}

// Commit makes the transaction's changes durable.
func (tx *Tx) Commit() error {
	tx.done = true
	return nil
}
`

const wrapPy = `class TextWrapper:
    """Wraps paragraphs."""

    def wrap(self, text):
        """Split text into lines of at most width characters."""
        return text.split()
`

// hybridSetup starts NATS, the toy model endpoint and a service using it,
// and ingests a two-file repository.
func hybridSetup(t *testing.T, chat bool) (*handlers.Service, *eventstest.Bundle, *embeddingtest.Server, string) {
	t.Helper()
	return hybridSetupWith(t, chat, nil)
}

// hybridSetupAnswer is hybridSetup with a chat model answering with answer.
func hybridSetupAnswer(t *testing.T, answer func(system, user string) string) (*handlers.Service, *eventstest.Bundle, *embeddingtest.Server, string) {
	t.Helper()
	return hybridSetupWith(t, true, answer)
}

var chunkIDRE = regexp.MustCompile(`chunk_[0-9a-f]{16}`)

// firstChunkID is the first chunk id of a prompt.
func firstChunkID(prompt string) string { return chunkIDRE.FindString(prompt) }

func hybridSetupWith(t *testing.T, chat bool, answer func(system, user string) string) (*handlers.Service, *eventstest.Bundle, *embeddingtest.Server, string) {
	t.Helper()
	model := embeddingtest.Start(t, embeddingtest.Options{Answer: answer, Synonyms: map[string]string{"revert": "aborts", "pending": "transaction", "work": "transaction"}})
	emb, err := embedding.NewOpenAI(embedding.OpenAIConfig{URL: model.URL, Model: "toy", Retries: -1})
	if err != nil {
		t.Fatal(err)
	}
	code := codememory.Config{Embedder: emb}
	if chat {
		c, err := explain.NewOpenAIChat(explain.OpenAIChatConfig{URL: model.URL, Model: "toy-chat", Retries: -1})
		if err != nil {
			t.Fatal(err)
		}
		code.Chat = c
	}
	b := eventstest.Start(t)
	svc := handlers.NewService(b.Store, handlers.ServiceConfig{DataDir: t.TempDir(), Code: code})
	if err := svc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Close() })
	root := t.TempDir()
	servicetest.WriteFiles(t, root, map[string]string{"db/tx.go": txGo, "lib/text.py": wrapPy})
	if _, err := codememory.Ingest(context.Background(), b.Store, codememory.IngestConfig{Root: root, Repo: "demo"}); err != nil {
		t.Fatal(err)
	}
	return svc, b, model, root
}

func countEmbedded(t *testing.T, b *eventstest.Bundle) int {
	t.Helper()
	n := 0
	err := b.Store.Read(context.Background(), events.StreamChunks, "trellis.chunks.*.*."+events.ChunksEmbedded, 0, func(rec events.Recorded) error {
		var p events.ChunksEmbeddedPayload
		if err := rec.DecodePayload(&p); err != nil {
			return err
		}
		for _, v := range p.Vectors {
			if _, err := events.DecodeVector(v.Vector, p.Dims); err != nil {
				return err
			}
		}
		n += len(p.Vectors)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestHybridSearch: chunk vectors are computed once per chunk, recorded in
// the log and fused with BM25; a paraphrase that shares no word with the
// code finds it; filters narrow both sides; a replay rebuilds the vectors
// from the log without calling the model.
func TestHybridSearch(t *testing.T) {
	t.Parallel()
	svc, b, model, root := hybridSetup(t, false)
	ctx := context.Background()
	sum, err := svc.EmbedPending(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Embedded == 0 || sum.Vectors != sum.Chunks || model.EmbeddedTexts.Load() != int64(sum.Embedded) || countEmbedded(t, b) != sum.Embedded {
		t.Fatalf("embed = %+v, model saw %d texts, log holds %d vectors", sum, model.EmbeddedTexts.Load(), countEmbedded(t, b))
	}
	const paraphrase = "revert pending work"
	lex, err := svc.Search(ctx, trellis.SearchRequest{Query: paraphrase, Mode: trellis.SearchLexical})
	if err != nil {
		t.Fatal(err)
	}
	if !lex.NotFound && lex.Results[0].Name == "Tx.Rollback" {
		t.Fatalf("the lexical ranking already finds the paraphrase: the test proves nothing (%+v)", lex.Results[0])
	}
	res, err := svc.Search(ctx, trellis.SearchRequest{Query: paraphrase})
	if err != nil {
		t.Fatal(err)
	}
	if res.Mode != trellis.SearchHybrid || res.NotFound || res.Results[0].Name != "Tx.Rollback" {
		t.Fatalf("hybrid search = %+v", res)
	}
	// Filters apply to both sides.
	res, err = svc.Search(ctx, trellis.SearchRequest{Query: paraphrase, PathPrefix: "lib/", Mode: trellis.SearchHybrid})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range res.Results {
		if !strings.HasPrefix(h.SourcePath, "lib/") {
			t.Fatalf("path filter let %s through", h.SourcePath)
		}
	}
	// A question naming a chunk keeps the lexical order.
	res, _ = svc.Search(ctx, trellis.SearchRequest{Query: "Tx.Commit"})
	if res.Results[0].Name != "Tx.Commit" {
		t.Fatalf("literal = %+v", res.Results[0])
	}
	// Nothing new: nothing embedded.
	texts := model.EmbeddedTexts.Load()
	if again, err := svc.EmbedPending(ctx); err != nil || again.Embedded != 0 {
		t.Fatalf("second embed = %+v, %v", again, err)
	}
	// A changed file: only its new chunks are embedded.
	time.Sleep(10 * time.Millisecond)
	servicetest.WriteFiles(t, root, map[string]string{"db/tx.go": txGo + "\n// Done reports whether the transaction ended.\nfunc (tx *Tx) Done() bool { return tx.done }\n"})
	ing, err := codememory.Ingest(ctx, b.Store, codememory.IngestConfig{Root: root, Repo: "demo"})
	if err != nil {
		t.Fatal(err)
	}
	third, err := svc.EmbedPending(ctx)
	if err != nil || third.Embedded != ing.ChunksAdded || model.EmbeddedTexts.Load() != texts+int64(ing.ChunksAdded) {
		t.Fatalf("embed after change = %+v (ingest added %d), %v", third, ing.ChunksAdded, err)
	}
	// Replay: the vectors come from the log, the model is not called.
	texts = model.EmbeddedTexts.Load()
	if _, err := svc.Replay(ctx); err != nil {
		t.Fatal(err)
	}
	if model.EmbeddedTexts.Load() != texts {
		t.Fatalf("replay called the model: %d texts, was %d", model.EmbeddedTexts.Load(), texts)
	}
	if after, err := svc.EmbedPending(ctx); err != nil || after.Embedded != 0 || after.Vectors != after.Chunks {
		t.Fatalf("after replay = %+v, %v", after, err)
	}
	res, err = svc.Search(ctx, trellis.SearchRequest{Query: paraphrase})
	if err != nil || res.Results[0].Name != "Tx.Rollback" || model.EmbeddedTexts.Load() != texts+1 {
		t.Fatalf("hybrid after replay = %+v, %v; model saw %d texts (want %d: the query)", res, err, model.EmbeddedTexts.Load(), texts+1)
	}
}

// TestHybridProviderDown: an unreachable or failing model is a clear
// unavailable error, and nothing is recorded.
func TestHybridProviderDown(t *testing.T) {
	t.Parallel()
	svc, b, model, _ := hybridSetup(t, false)
	ctx := context.Background()
	model.SetDown(true)
	_, err := svc.EmbedPending(ctx)
	if trellis.ErrorCode(err) != trellis.CodeUnavailable || !strings.Contains(err.Error(), "503") {
		t.Fatalf("embed with the model down: %v", err)
	}
	if n := countEmbedded(t, b); n != 0 {
		t.Fatalf("%d vectors recorded", n)
	}
	if _, err := svc.Search(ctx, trellis.SearchRequest{Query: "revert pending work", Mode: trellis.SearchHybrid}); trellis.ErrorCode(err) != trellis.CodeUnavailable {
		t.Fatalf("hybrid search with the model down: %v", err)
	}
	// Lexical search does not need the model.
	if res, err := svc.Search(ctx, trellis.SearchRequest{Query: "aborts the transaction"}); err != nil || res.Mode != trellis.SearchLexical {
		t.Fatalf("default search without vectors = %+v, %v", res, err)
	}
	model.SetDown(false)
	if sum, err := svc.EmbedPending(ctx); err != nil || sum.Embedded == 0 {
		t.Fatalf("embed after recovery = %+v, %v", sum, err)
	}
}

// TestSearchModes: hybrid without a model and unknown modes are refused.
func TestSearchModes(t *testing.T) {
	t.Parallel()
	svc, _ := servicetest.Start(t)
	ctx := context.Background()
	_, err := svc.Search(ctx, trellis.SearchRequest{Query: "x", Mode: trellis.SearchHybrid})
	if trellis.ErrorCode(err) != trellis.CodeUnavailable || !strings.Contains(err.Error(), "--embed-url") {
		t.Fatalf("hybrid without a model: %v", err)
	}
	_, err = svc.Search(ctx, trellis.SearchRequest{Query: "x", Mode: "semantic"})
	if te := trellis.AsError(err); te.Code != trellis.CodeInvalid || te.Field != "mode" {
		t.Fatalf("unknown mode: %v", err)
	}
	if sum, err := svc.EmbedPending(ctx); sum != nil || err != nil {
		t.Fatalf("embed without a model = %+v, %v", sum, err)
	}
}
