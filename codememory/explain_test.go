package codememory_test

import (
	"context"
	"strings"
	"testing"

	"github.com/trellis/trellis"
)

// TestExplain: the chat model answers from the retrieved chunks; its
// citations are checked against them, an invented one is reported.
func TestExplain(t *testing.T) {
	t.Parallel()
	svc, _, model, _ := hybridSetup(t, true)
	ctx := context.Background()
	res, err := svc.Explain(ctx, trellis.ExplainRequest{Question: "what aborts the transaction?", Mode: trellis.SearchLexical})
	if err != nil {
		t.Fatal(err)
	}
	if res.Model != "toy-chat" || len(res.Citations) != 1 || res.Citations[0] != res.Evidence[0].ChunkID || len(res.InvalidCitations) != 0 {
		t.Fatalf("explain = %+v", res)
	}
	prompt := model.LastPrompt()
	if !strings.Contains(prompt, "Question: what aborts the transaction?") || !strings.Contains(prompt, res.Evidence[0].ChunkID) || !strings.Contains(prompt, "Rollback aborts") {
		t.Fatalf("prompt = %q", prompt)
	}
	if res.Evidence[0].Content == "" {
		t.Fatal("evidence without content")
	}
}

// TestExplainInvalidCitation: a citation of a chunk that was not retrieved
// is reported as invalid.
func TestExplainInvalidCitation(t *testing.T) {
	t.Parallel()
	svc, _, _, _ := hybridSetupAnswer(t, func(_, user string) string {
		return "Mostly [CITATION chunk_ffffffffffffffff], see also [CITATION " + firstChunkID(user) + "]."
	})
	res, err := svc.Explain(context.Background(), trellis.ExplainRequest{Question: "what aborts the transaction?", Mode: trellis.SearchLexical})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.InvalidCitations) != 1 || res.InvalidCitations[0] != "chunk_ffffffffffffffff" || len(res.Citations) != 1 {
		t.Fatalf("explain = %+v", res)
	}
}

// TestExplainWithoutModel returns the evidence and what to configure;
// bad input and a failing model are clear errors.
func TestExplainWithoutModel(t *testing.T) {
	t.Parallel()
	svc, _, model, _ := hybridSetup(t, false)
	ctx := context.Background()
	res, err := svc.Explain(ctx, trellis.ExplainRequest{Question: "what aborts the transaction?", Mode: trellis.SearchLexical, TopK: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.Model != "" || res.Answer != "" || !strings.Contains(res.Configure, "--chat-url") || len(res.Evidence) == 0 || len(res.Evidence) > 2 ||
		!strings.Contains(res.Prompt, res.Evidence[0].ChunkID) || !strings.Contains(res.System, "CITATION") {
		t.Fatalf("explain without a model = %+v", res)
	}
	if model.ChatRequests.Load() != 0 {
		t.Fatal("a chat model was called")
	}
	for _, tc := range []struct {
		req   trellis.ExplainRequest
		field string
	}{
		{trellis.ExplainRequest{}, "question"},
		{trellis.ExplainRequest{Question: "   "}, "question"},
		{trellis.ExplainRequest{Question: strings.Repeat("x", 1025)}, "question"},
		{trellis.ExplainRequest{Question: "x", TopK: 21}, "k"},
		{trellis.ExplainRequest{Question: "x", Mode: "psychic"}, "mode"},
	} {
		_, err := svc.Explain(ctx, tc.req)
		if te := trellis.AsError(err); te.Code != trellis.CodeInvalid || te.Field != tc.field {
			t.Errorf("Explain(%+v) = %v; want invalid %s", tc.req, err, tc.field)
		}
	}
	nf, err := svc.Explain(ctx, trellis.ExplainRequest{Question: "zzqx wqpv"})
	if err != nil || !nf.NotFound {
		t.Fatalf("nothing found = %+v, %v", nf, err)
	}
}

// TestExplainModelDown: a failing chat model is unavailable, naming it.
func TestExplainModelDown(t *testing.T) {
	t.Parallel()
	svc, _, model, _ := hybridSetup(t, true)
	model.SetDown(true)
	_, err := svc.Explain(context.Background(), trellis.ExplainRequest{Question: "what aborts the transaction?", Mode: trellis.SearchLexical})
	if trellis.ErrorCode(err) != trellis.CodeUnavailable || !strings.Contains(err.Error(), "toy-chat") {
		t.Fatalf("explain with the model down: %v", err)
	}
}
