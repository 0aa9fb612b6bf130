package features

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cucumber/godog"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/codememory"
	"github.com/trellis/trellis/embedding"
	"github.com/trellis/trellis/embedding/embeddingtest"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/explain"
)

type codeState struct {
	explain *trellis.ExplainResult
	repo    string
	result  *trellis.SearchResult
	chunkID string
	events  int
	lastSeq uint64
}

func codeSteps(sc *godog.ScenarioContext, w *world) {
	cs := &codeState{}
	files := map[string]string{
		"lib/text.py":   "\"\"\"Text helpers.\"\"\"\nimport textwrap\n\n\nclass TextWrapper:\n    \"\"\"Wraps paragraphs.\"\"\"\n\n    def wrap(self, text):\n        \"\"\"Split text into lines of at most width characters.\"\"\"\n        return textwrap.wrap(text)\n",
		"lib/reader.go": "package lib\n\n// Reader reads.\ntype Reader struct{}\n\n// Read reads bytes into p.\nfunc (r *Reader) Read(p []byte) (int, error) { return 0, nil }\n",
		"docs/guide.md": "# Guide\n\nHow to use the helpers.\n\n## Wrapping\n\nCall TextWrapper.wrap.\n",
	}
	ingest := func() error {
		ctx, cancel := ctxT()
		defer cancel()
		before, err := w.srv().Store().LastSeq(ctx, events.StreamChunks)
		if err != nil {
			return err
		}
		sum, err := codememory.Ingest(ctx, w.srv().Store(), codememory.IngestConfig{Root: cs.repo, Repo: "demo"})
		if err != nil {
			return err
		}
		cs.events = sum.Events
		cs.lastSeq = before
		return nil
	}
	search := func(q string) error {
		ctx, cancel := ctxT()
		defer cancel()
		client, err := w.cl()
		if err != nil {
			return err
		}
		cs.result, err = client.Search(ctx, trellis.SearchRequest{Query: q, Repo: "demo"})
		return err
	}
	sc.Step(`^a repository with a Python text module, a Go reader and a Markdown guide$`, func() error {
		dir, err := os.MkdirTemp(w.sw.Dir(), "repo-")
		if err != nil {
			return err
		}
		cs.repo = dir
		for p, c := range files {
			if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(dir, p), []byte(c), 0o644); err != nil {
				return err
			}
		}
		return nil
	})
	sc.Step(`^the agent ingests the repository as "demo"$`, ingest)
	sc.Step(`^the agent searches for "([^"]*)"$`, search)
	sc.Step(`^the first result cites the method "([^"]*)" in "([^"]*)" with its lines$`, func(name, path string) error {
		if cs.result.NotFound {
			return fmt.Errorf("not found")
		}
		h := cs.result.Results[0]
		if h.Name != name || h.SourcePath != path || h.StartLine <= 0 || h.EndLine < h.StartLine || !strings.HasPrefix(h.ChunkID, "chunk_") {
			return fmt.Errorf("first result = %+v", h)
		}
		cs.chunkID = h.ChunkID
		return nil
	})
	sc.Step(`^showing that chunk prints its full source$`, func() error {
		ctx, cancel := ctxT()
		defer cancel()
		client, err := w.cl()
		if err != nil {
			return err
		}
		c, err := client.Chunk(ctx, cs.chunkID)
		if err != nil {
			return err
		}
		if !strings.Contains(c.Content, "def wrap(self, text):") {
			return fmt.Errorf("chunk content = %q", c.Content)
		}
		return nil
	})
	sc.Step(`^the agent ingests the repository again without changes$`, ingest)
	sc.Step(`^no event was appended$`, func() error {
		if cs.events != 0 {
			return fmt.Errorf("%d events appended", cs.events)
		}
		return nil
	})
	sc.Step(`^a line is added at the top of "([^"]*)" and the repository is ingested again$`, func(p string) error {
		full := filepath.Join(cs.repo, p)
		data, err := os.ReadFile(full)
		if err != nil {
			return err
		}
		if err := os.WriteFile(full, append([]byte("# -*- coding: utf-8 -*-\n"), data...), 0o644); err != nil {
			return err
		}
		return ingest()
	})
	sc.Step(`^searching for "([^"]*)" cites the same chunk id$`, func(q string) error {
		if err := search(q); err != nil {
			return err
		}
		if cs.result.NotFound || cs.result.Results[0].ChunkID != cs.chunkID {
			return fmt.Errorf("result = %+v; want chunk %s", cs.result.Results, cs.chunkID)
		}
		return nil
	})
	sc.Step(`^a running Trellis server with an embedding model and a chat model$`, func() error {
		model, stop := embeddingtest.New(embeddingtest.Options{Synonyms: map[string]string{
			"cut": "split", "passage": "text", "rows": "lines", "wider": "width", "limit": "most"}})
		w.sw.OnClose(stop)
		emb, err := embedding.NewOpenAI(embedding.OpenAIConfig{URL: model.URL, Model: "toy-embed"})
		if err != nil {
			return err
		}
		chat, err := explain.NewOpenAIChat(explain.OpenAIChatConfig{URL: model.URL, Model: "toy-chat"})
		if err != nil {
			return err
		}
		return w.runningServerWith(codememory.Config{Embedder: emb, Chat: chat, EmbedInterval: time.Hour})
	})
	sc.Step(`^the server has embedded the new chunks$`, func() error {
		ctx, cancel := ctxT()
		defer cancel()
		sum, err := w.srv().Service().EmbedPending(ctx)
		if err != nil {
			return err
		}
		if sum.Embedded == 0 || sum.Vectors != sum.Chunks {
			return fmt.Errorf("embedding = %+v", sum)
		}
		return nil
	})
	sc.Step(`^the search was hybrid$`, func() error {
		if cs.result.Mode != trellis.SearchHybrid {
			return fmt.Errorf("search mode %q", cs.result.Mode)
		}
		return nil
	})
	sc.Step(`^the agent asks explain_code "([^"]*)"$`, func(q string) error {
		ctx, cancel := ctxT()
		defer cancel()
		c, err := w.cl()
		if err != nil {
			return err
		}
		cs.explain, err = c.Explain(ctx, trellis.ExplainRequest{Question: q, Repo: "demo"})
		return err
	})
	sc.Step(`^the answer cites that chunk and every citation is valid$`, func() error {
		e := cs.explain
		if e.Model != "toy-chat" || len(e.Citations) == 0 || e.Citations[0] != cs.chunkID || len(e.InvalidCitations) != 0 {
			return fmt.Errorf("explain = %+v; want a valid citation of %s", e, cs.chunkID)
		}
		return nil
	})
	sc.Step(`^the answer is "not found" with suggestions for the next search$`, func() error {
		if !cs.result.NotFound || len(cs.result.Suggestions) == 0 {
			return fmt.Errorf("result = %+v", cs.result)
		}
		return nil
	})
}
