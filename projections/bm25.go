package projections

import (
	"fmt"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/mapping"
	index "github.com/blevesearch/bleve_index_api"

	"github.com/trellis/trellis/events"
)

// PlainBM25 is the baseline Trellis's ranking is measured against: bleve's
// BM25 over each chunk's content alone, with the same code analyzer
// (identifiers split, stemmed), and nothing else: no name, path or doc
// fields, no re-ranking. It is built for `trellis bench search`.
type PlainBM25 struct {
	idx bleve.Index
}

// NewPlainBM25 returns an empty baseline index in dir (a new directory).
// It is an on-disk (scorch) index: bleve's in-memory index has no field
// length statistics and silently scores with TF-IDF instead of BM25.
func NewPlainBM25(dir string) (*PlainBM25, error) {
	m, err := plainMapping()
	if err != nil {
		return nil, err
	}
	idx, err := bleve.New(dir, m)
	if err != nil {
		return nil, fmt.Errorf("baseline index: %w", err)
	}
	return &PlainBM25{idx: idx}, nil
}

func plainMapping() (mapping.IndexMapping, error) {
	m, err := indexMapping()
	if err != nil {
		return nil, err
	}
	im := m.(*mapping.IndexMappingImpl)
	im.ScoringModel = index.BM25Scoring
	doc := bleve.NewDocumentMapping()
	f := bleve.NewTextFieldMapping()
	f.Analyzer, f.Store, f.IncludeTermVectors = codeAnalyzer, false, false
	doc.AddFieldMappingsAt("content", f)
	im.DefaultMapping = doc
	return im, nil
}

// Add indexes chunks.
func (p *PlainBM25) Add(chunks []events.ChunkRecord) error {
	b := p.idx.NewBatch()
	for _, c := range chunks {
		if err := b.Index(c.ChunkID, map[string]any{"content": c.Content}); err != nil {
			return err
		}
	}
	return p.idx.Batch(b)
}

// Query returns the ids of the k best chunks for text, best first.
func (p *PlainBM25) Query(text string, k int) ([]string, error) {
	q := bleve.NewMatchQuery(text)
	q.SetField("content")
	res, err := p.idx.Search(bleve.NewSearchRequestOptions(q, k, 0, false))
	if err != nil {
		return nil, fmt.Errorf("baseline search: %w", err)
	}
	ids := make([]string, len(res.Hits))
	for i, h := range res.Hits {
		ids[i] = h.ID
	}
	return ids, nil
}

// Close releases the index.
func (p *PlainBM25) Close() error { return p.idx.Close() }
