package codememory

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/command"
	"github.com/trellis/trellis/embedding"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/explain"
	"github.com/trellis/trellis/projections"
)

// Config configures code memory: its search index, hybrid search and
// explain.
type Config struct {
	// Embedder, when set, enables hybrid search: every chunk's contextual
	// text is embedded once, recorded as a chunks_embedded event, and
	// searched by the vector projection; queries fuse BM25 and vector
	// results by Reciprocal Rank Fusion. Nil: lexical search only.
	Embedder embedding.Embedder
	// EmbedInterval > 0 runs a background embedder that embeds new chunks
	// every interval (trellis serve: 2 s). One-shot commands call
	// EmbedPending instead.
	EmbedInterval time.Duration
	// EmbedBatch is how many chunks one embedding round sends (default 256).
	EmbedBatch int
	// Chat, when set, answers explain requests; nil: explain returns the
	// evidence it would send and says what to configure.
	Chat explain.Chat
	// Dir holds the search and vector indexes (handlers.NewService sets
	// it to <data>/index).
	Dir string
	// SearchTimeout bounds how long a search waits for the indexes to
	// catch up (default 2 min: indexing a large ingest takes a while).
	SearchTimeout time.Duration
	// Logger receives projection and embedding warnings (default
	// slog.Default()).
	Logger *slog.Logger
}

// Service is the code memory domain as the transports see it: the
// search index and, with an embedder, the vector index and the embedder
// that fills it. Ingest is the command side (a function of the store).
type Service struct {
	store     *events.Store
	cfg       Config
	search    *projections.Search
	searchRun *projections.Runner
	vectors   *projections.Vectors
	vectorRun *projections.Runner
	embedMu   sync.Mutex
	stop      chan struct{}
	done      chan struct{}
}

var _ trellis.CodeService = (*Service)(nil)

// New builds code memory on store. Its projections run once the caller
// starts Runners (handlers.Service starts them with the others); Close
// closes its indexes after they stopped.
func New(store *events.Store, cfg Config) *Service {
	if cfg.SearchTimeout <= 0 {
		cfg.SearchTimeout = 2 * time.Minute
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Service{store: store, cfg: cfg, search: projections.NewSearch(cfg.Dir)}
	s.searchRun = projections.NewRunner(store, s.search, cfg.Logger)
	if cfg.Embedder != nil {
		s.vectors = projections.NewVectors(cfg.Dir, cfg.Embedder.Model())
		s.vectorRun = projections.NewRunner(store, s.vectors, cfg.Logger)
	}
	return s
}

// Runners returns the projections' runners: the search index, then the
// vector index when there is an embedder.
func (s *Service) Runners() []*projections.Runner {
	if s.vectorRun == nil {
		return []*projections.Runner{s.searchRun}
	}
	return []*projections.Runner{s.searchRun, s.vectorRun}
}

// Close closes the indexes (their runners stopped before).
func (s *Service) Close() error {
	first := s.search.Close()
	if s.vectors != nil {
		if err := s.vectors.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// waitProjection waits, up to SearchTimeout, until r has applied
// sequence seq (0: everything its stream holds now).
func (s *Service) waitProjection(ctx context.Context, r *projections.Runner, seq uint64) error {
	return command.StoreError("projection "+r.Projection().Name()+" catch-up", r.Await(ctx, seq, s.cfg.SearchTimeout))
}

// EmbedSummary reports an embedding round.
type EmbedSummary struct {
	Model    string  `json:"model"`
	Embedded int     `json:"chunks_embedded"`
	Events   int     `json:"events"`
	Chunks   int     `json:"chunks"`
	Vectors  int     `json:"chunks_with_vectors"`
	Dims     int     `json:"dims"`
	Seconds  float64 `json:"seconds"`
}

// VectorSearch searches the vector projection alone (benchmarks measure
// it apart from the fusion); it needs an embedder.
func (s *Service) VectorSearch(vec []float32, n int, f projections.Filters) ([]projections.Scored, error) {
	if s.vectors == nil {
		return nil, trellis.Errorf(trellis.CodeUnavailable, "no embedding model is configured")
	}
	return s.vectors.Search(vec, n, f)
}

// Embedder returns the configured embedder, or nil.
func (s *Service) Embedder() embedding.Embedder { return s.cfg.Embedder }

// maxEmbedEventBytes bounds the vectors of one chunks_embedded event.
const maxEmbedEventBytes = 600 << 10

// EmbedPending embeds every ingested chunk that has no vector of the
// configured model yet, records the vectors as chunks_embedded events (one
// repository and model per aggregate, appended with its expected last
// sequence), and waits until the vector projection holds them. A chunk is
// embedded once: its vector stays in the log and survives the chunk's
// removal and return. Without an embedder it does nothing and returns nil.
func (s *Service) EmbedPending(ctx context.Context) (*EmbedSummary, error) {
	emb := s.cfg.Embedder
	if emb == nil {
		return nil, nil
	}
	s.embedMu.Lock()
	defer s.embedMu.Unlock()
	start := time.Now()
	sum := &EmbedSummary{Model: emb.Model()}
	batch := s.cfg.EmbedBatch
	if batch <= 0 {
		batch = 256
	}
	skipped := map[string]bool{}
	for {
		if err := s.searchCaughtUp(ctx); err != nil {
			return sum, err
		}
		if err := s.waitProjection(ctx, s.vectorRun, 0); err != nil {
			return sum, err
		}
		all, last := s.vectors.Pending(0)
		var ids []string
		for _, id := range all {
			if !skipped[id] && len(ids) < batch {
				ids = append(ids, id)
			}
		}
		if len(ids) == 0 {
			break
		}
		hits, err := s.search.Hits(ids)
		if err != nil {
			return sum, trellis.Errorf(trellis.CodeInternal, "embed: %w", err)
		}
		var texts []string
		var chunks []projections.Hit
		for _, id := range ids {
			h, ok := hits[id]
			if !ok {
				skipped[id] = true // removed since: nothing to embed
				continue
			}
			chunks = append(chunks, h)
			texts = append(texts, embedding.ContextualText(h.Path, h.ChunkType, h.Name, h.Content))
		}
		if len(texts) == 0 {
			continue
		}
		vecs, err := emb.Embed(ctx, texts)
		if err != nil {
			return sum, providerError("embed chunks", err)
		}
		if len(vecs) != len(chunks) {
			return sum, trellis.Errorf(trellis.CodeUnavailable, "embedding model %s returned %d vectors for %d chunks", emb.Model(), len(vecs), len(chunks))
		}
		byRepo := map[string][]events.ChunkVector{}
		dims := len(vecs[0])
		for i, h := range chunks {
			if len(vecs[i]) != dims {
				return sum, trellis.Errorf(trellis.CodeUnavailable, "embedding model %s returned vectors of dimensions %d and %d", emb.Model(), dims, len(vecs[i]))
			}
			byRepo[h.Repo] = append(byRepo[h.Repo], events.ChunkVector{ChunkID: h.ChunkID, Vector: events.EncodeVector(vecs[i])})
		}
		repos := make([]string, 0, len(byRepo))
		for r := range byRepo {
			repos = append(repos, r)
		}
		sort.Strings(repos)
		conflict := false
		for _, repo := range repos {
			seq := last[repo]
			for _, part := range splitVectors(byRepo[repo]) {
				n, err := s.appendVectors(ctx, repo, emb.Model(), dims, part, seq)
				if errors.Is(err, events.ErrWrongLastSequence) {
					conflict = true // another embedder: reload and re-decide
					break
				}
				if err != nil {
					return sum, err
				}
				seq = n
				sum.Events++
				sum.Embedded += len(part)
			}
			if conflict {
				break
			}
		}
	}
	if err := s.waitProjection(ctx, s.vectorRun, 0); err != nil {
		return sum, err
	}
	sum.Chunks, sum.Vectors, sum.Dims = s.vectors.Stats()
	sum.Seconds = time.Since(start).Seconds()
	return sum, nil
}

// appendVectors appends one chunks_embedded event to the (repo, model)
// aggregate, expecting its last sequence to be seq. The command runner
// builds the event: chained to the aggregate's previous event, its actor
// the authenticated caller (events.ActorFor; "embedder" for the server's
// own background embedder).
func (s *Service) appendVectors(ctx context.Context, repo, model string, dims int, vs []events.ChunkVector, seq uint64) (uint64, error) {
	subject := events.EmbeddingSubject(repo, model)
	filter := strings.TrimSuffix(subject, events.ChunksEmbedded) + ">"
	r := command.New(s.store, command.Kind[struct{}]{
		Name:   "embeddings",
		Stream: events.StreamChunks,
		Filter: func(string) string { return filter },
		Fold:   func(v struct{}, _ events.Recorded) (struct{}, error) { return v, nil },
		Schema: events.ChunksSchema,
	}, command.Config{CacheSize: -1})
	p, err := r.Pending(ctx, command.State[struct{}]{ID: repo, Seq: seq}, "embedder", command.Decision{
		Subject: subject, Type: events.ChunksEmbedded, At: time.Now(),
		Payload: events.ChunksEmbeddedPayload{Model: model, Dims: dims, Vectors: vs},
		MsgID:   events.EmbeddedMsgID(model, vs)})
	if err != nil {
		return 0, command.StoreError("append chunks_embedded", err)
	}
	ack, err := s.store.AppendWithHeaders(ctx, p.Subject, p.Envelope, p.Expect, p.MsgID, p.Header)
	if errors.Is(err, events.ErrWrongLastSequence) {
		return 0, err
	}
	if err != nil {
		return 0, command.StoreError("append chunks_embedded", err)
	}
	return ack.Seq, nil
}

// splitVectors groups vectors into parts that fit one event each.
func splitVectors(vs []events.ChunkVector) [][]events.ChunkVector {
	var parts [][]events.ChunkVector
	var cur []events.ChunkVector
	size := 0
	for _, v := range vs {
		n := len(v.Vector) + len(v.ChunkID) + 32
		if size+n > maxEmbedEventBytes && len(cur) > 0 {
			parts = append(parts, cur)
			cur, size = nil, 0
		}
		cur = append(cur, v)
		size += n
	}
	if len(cur) > 0 {
		parts = append(parts, cur)
	}
	return parts
}

// providerError maps an embedding or chat provider failure onto a coded
// error: unavailable for anything the endpoint did, with its message.
func providerError(what string, err error) error {
	var te *trellis.Error
	if errors.As(err, &te) {
		return err
	}
	return trellis.Errorf(trellis.CodeUnavailable, "%s: %w", what, err)
}

// StartEmbedding runs the background embedder when configured.
func (s *Service) StartEmbedding() {
	if s.cfg.Embedder == nil || s.cfg.EmbedInterval <= 0 {
		return
	}
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(s.done)
		t := time.NewTicker(s.cfg.EmbedInterval)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
			if ids, _ := s.vectors.Pending(1); len(ids) == 0 {
				continue
			}
			ctx, cancel := context.WithCancel(context.Background())
			go func() {
				select {
				case <-s.stop:
					cancel()
				case <-ctx.Done():
				}
			}()
			if _, err := s.EmbedPending(ctx); err != nil && ctx.Err() == nil {
				s.cfg.Logger.Warn("embedding new chunks", "model", s.cfg.Embedder.Model(), "err", err)
			}
			cancel()
		}
	}()
}

// StopEmbedding ends the background embedder and waits for it.
func (s *Service) StopEmbedding() {
	if s.stop == nil {
		return
	}
	close(s.stop)
	<-s.done
	s.stop = nil
}

// EmbedMsgID is the message id of a chunks_embedded event: the same
// vectors of the same model are stored once (audit verify checks it).
func EmbedMsgID(model string, vs []events.ChunkVector) string {
	h := sha256.New()
	h.Write([]byte(model))
	for _, v := range vs {
		h.Write([]byte(v.ChunkID))
	}
	return "emb-" + hex.EncodeToString(h.Sum(nil))[:32]
}
