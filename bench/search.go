package bench

import (
	"bufio"
	"context"
	"embed"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/codememory"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/handlers"
	"github.com/trellis/trellis/projections"
)

// evalData holds the search evaluation: the questions and the Python part
// of the corpus (the Go part is read from the Go installation).
//
//go:embed all:testdata/searcheval
var evalData embed.FS

const evalDir = "testdata/searcheval"

// goCodebases are the Go packages of the evaluation corpus, read from
// $(go env GOROOT)/src.
var goCodebases = []string{"net/http", "database/sql", "log/slog", "archive/tar"}

// Halves of the evaluation (see the split rule in questions.tsv).
const (
	HalfTuning  = "tuning"
	HalfHeldOut = "held-out"
	HalfAll     = "all"
)

// Question kinds.
const (
	KindLiteral     = "literal"
	KindParaphrased = "paraphrased"
	KindConceptual  = "conceptual"
)

// Question is one evaluation question.
type Question struct {
	// Number is the 1-based position among the questions of the file.
	Number   int    `json:"number"`
	Codebase string `json:"codebase"`
	Kind     string `json:"kind"`
	Text     string `json:"question"`
	// Answers are PATH#QUALIFIED_NAME; any one answers the question.
	Answers []string `json:"answers"`
	// Half is HalfTuning (odd numbers) or HalfHeldOut (even numbers).
	Half string `json:"half"`
}

// Questions reads the evaluation questions and applies the split rule
// recorded in the file: odd numbers tune, even numbers are held out.
func Questions() ([]Question, error) {
	f, err := evalData.Open(evalDir + "/questions.tsv")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var qs []Question
	sc := bufio.NewScanner(f)
	line := 0
	for sc.Scan() {
		line++
		t := sc.Text()
		if strings.TrimSpace(t) == "" || strings.HasPrefix(t, "#") {
			continue
		}
		cols := strings.Split(t, "\t")
		if len(cols) != 4 {
			return nil, fmt.Errorf("questions.tsv line %d: %d columns, want 4", line, len(cols))
		}
		switch cols[1] {
		case KindLiteral, KindParaphrased, KindConceptual:
		default:
			return nil, fmt.Errorf("questions.tsv line %d: unknown kind %q", line, cols[1])
		}
		q := Question{Number: len(qs) + 1, Codebase: cols[0], Kind: cols[1], Text: cols[2], Answers: strings.Fields(cols[3])}
		if len(q.Answers) == 0 {
			return nil, fmt.Errorf("questions.tsv line %d: no answer", line)
		}
		q.Half = HalfTuning
		if q.Number%2 == 0 {
			q.Half = HalfHeldOut
		}
		qs = append(qs, q)
	}
	return qs, sc.Err()
}

// SearchConfig configures the search evaluation.
type SearchConfig struct {
	// GoSrc is the Go source tree the Go codebases are read from (default
	// $(go env GOROOT)/src).
	GoSrc string
	// Half is the half to report: HalfHeldOut (default), HalfTuning or
	// HalfAll.
	Half string
	// Service, when set, configures the service (an embedder for hybrid
	// search); DataDir is always a temporary directory.
	Service handlers.ServiceConfig
}

// Figures are retrieval figures over a set of questions.
type Figures struct {
	Questions int     `json:"questions"`
	MRR       float64 `json:"mrr_at_10"`
	Hit1      float64 `json:"hit_at_1"`
	Hit10     float64 `json:"hit_at_10"`
}

// RankerFigures are one ranker's figures, overall and per kind.
type RankerFigures struct {
	Ranker string             `json:"ranker"`
	All    Figures            `json:"all"`
	ByKind map[string]Figures `json:"by_kind"`
}

// QuestionRanks is where each ranker put a question's first answer (0: not
// in the top 10).
type QuestionRanks struct {
	Question
	Ranks map[string]int `json:"ranks"`
}

// SearchReport is the result of RunSearch.
type SearchReport struct {
	Half      string          `json:"half"`
	Questions int             `json:"questions"`
	Codebases int             `json:"codebases"`
	Chunks    int             `json:"chunks"`
	Skipped   []string        `json:"skipped_files"`
	Rankers   []RankerFigures `json:"rankers"`
	PerQuery  []QuestionRanks `json:"per_question"`
	// EmbedSeconds is the time spent computing chunk vectors, apart from
	// the ingest.
	EmbedSeconds  float64 `json:"embed_seconds"`
	EmbedModel    string  `json:"embed_model,omitempty"`
	IngestSeconds float64 `json:"ingest_seconds"`
	// Verbose prints every question's ranks.
	Verbose bool `json:"-"`
}

// Ranker names.
const (
	RankerBM25    = "plain BM25"
	RankerLexical = "Trellis lexical"
	RankerHybrid  = "Trellis hybrid"
)

// Print writes the report as a table.
func (r *SearchReport) Print(w io.Writer) {
	fmt.Fprintf(w, "search evaluation, %s half: %d questions over %d codebases in Go and Python, %d chunks (ingest %.1f s, embedding %.1f s)\n",
		r.Half, r.Questions, r.Codebases, r.Chunks, r.IngestSeconds, r.EmbedSeconds)
	fmt.Fprintf(w, "%-16s %7s %6s %6s   %8s %11s %10s  (MRR@10 by kind)\n", "ranker", "MRR@10", "hit@1", "hit@10", KindLiteral, KindParaphrased, KindConceptual)
	for _, f := range r.Rankers {
		fmt.Fprintf(w, "%-16s %7.3f %6.3f %6.3f   %8.3f %11.3f %10.3f\n", f.Ranker, f.All.MRR, f.All.Hit1, f.All.Hit10,
			f.ByKind[KindLiteral].MRR, f.ByKind[KindParaphrased].MRR, f.ByKind[KindConceptual].MRR)
	}
	if r.EmbedModel == "" {
		fmt.Fprintln(w, "Trellis hybrid: no embedding endpoint configured (--embed-url, --embed-model); the built-in embedders tried did not raise the held-out MRR (docs/code-memory.md)")
	} else {
		fmt.Fprintf(w, "Trellis hybrid: %s, RRF k=%d over BM25 and vector top %d\n", r.EmbedModel, projections.RRFK, 50)
	}
	if len(r.Rankers) > 0 {
		k := r.Rankers[0].ByKind
		fmt.Fprintf(w, "questions per kind: %d literal, %d paraphrased, %d conceptual\n", k[KindLiteral].Questions, k[KindParaphrased].Questions, k[KindConceptual].Questions)
	}
	if !r.Verbose {
		return
	}
	for _, q := range r.PerQuery {
		fmt.Fprintf(w, "%3d %-11s", q.Number, q.Kind)
		for _, f := range r.Rankers {
			fmt.Fprintf(w, " %2d", q.Ranks[f.Ranker])
		}
		fmt.Fprintf(w, "  %s -> %s\n", q.Text, q.Answers[0])
	}
}

// Figures returns the named ranker's figures.
func (r *SearchReport) Figures(ranker string) (RankerFigures, bool) {
	for _, f := range r.Rankers {
		if f.Ranker == ranker {
			return f, true
		}
	}
	return RankerFigures{}, false
}

// RunSearch runs the search evaluation: it copies the corpus into a
// temporary tree, ingests it through a Service on store, builds the plain
// BM25 baseline over the same chunks, and ranks every question of the
// chosen half with each ranker: plain BM25, Trellis lexical, and Trellis
// hybrid when the service has chunk vectors.
func RunSearch(ctx context.Context, store *events.Store, cfg SearchConfig) (*SearchReport, error) {
	if cfg.GoSrc == "" {
		cfg.GoSrc = filepath.Join(goroot(), "src")
	}
	if cfg.Half == "" {
		cfg.Half = HalfHeldOut
	}
	switch cfg.Half {
	case HalfHeldOut, HalfTuning, HalfAll:
	default:
		return nil, trellis.FieldError("half", "must be %s, %s or %s, got %q", HalfHeldOut, HalfTuning, HalfAll, cfg.Half)
	}
	all, err := Questions()
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "trellis-search-eval-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	corpus := filepath.Join(tmp, "corpus")
	if err := buildCorpus(cfg.GoSrc, corpus); err != nil {
		return nil, err
	}
	scfg := cfg.Service
	scfg.DataDir = filepath.Join(tmp, "data")
	if scfg.ReadTimeout <= 0 {
		// Indexing the corpus on a busy machine takes longer than a
		// read's default wait: the catch-up below waits for all of it.
		scfg.ReadTimeout = 5 * time.Minute
	}
	svc := handlers.NewService(store, scfg)
	if err := svc.Start(ctx); err != nil {
		return nil, err
	}
	defer svc.Close()
	rep := &SearchReport{Half: cfg.Half, Skipped: []string{}}
	sum, err := codememory.Ingest(ctx, store, codememory.IngestConfig{Root: corpus, Repo: "eval"})
	if err != nil {
		return nil, err
	}
	rep.IngestSeconds = sum.Seconds
	for _, s := range sum.Skipped {
		rep.Skipped = append(rep.Skipped, s.Path+": "+s.Reason)
	}
	if err := svc.CatchUp(ctx); err != nil {
		return nil, err
	}
	hybrid := false
	if svc.Embedder() != nil {
		es, err := svc.EmbedPending(ctx)
		if err != nil {
			return nil, err
		}
		rep.EmbedSeconds, rep.EmbedModel, hybrid = es.Seconds, es.Model, true
	}

	// Every chunk, for the baseline and for naming answers.
	chunks := map[string]events.ChunkRecord{}
	err = store.Read(ctx, events.StreamChunks, "trellis.chunks.eval.>", 0, func(rec events.Recorded) error {
		var added []events.ChunkRecord
		var removed []string
		switch rec.Type {
		case events.ChunksAdded:
			var p events.ChunksAddedPayload
			if err := rec.DecodePayload(&p); err != nil {
				return err
			}
			added = p.Chunks
		case events.FileIndexed:
			var p events.FileIndexedPayload
			if err := rec.DecodePayload(&p); err != nil {
				return err
			}
			added, removed = p.Added, p.Removed
		}
		for _, c := range added {
			chunks[c.ChunkID] = c
		}
		for _, id := range removed {
			delete(chunks, id)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	rep.Chunks = len(chunks)
	known := map[string]bool{}
	recs := make([]events.ChunkRecord, 0, len(chunks))
	for _, c := range chunks {
		recs = append(recs, c)
		for _, n := range strings.Split(c.Name, ", ") {
			known[c.SourcePath+"#"+n] = true
		}
	}
	var missing []string
	for _, q := range all {
		found := false
		for _, a := range q.Answers {
			found = found || known[a]
		}
		if !found {
			missing = append(missing, fmt.Sprintf("%d (%s)", q.Number, strings.Join(q.Answers, " ")))
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("the corpus holds no answer to questions %s (a changed Go version?)", strings.Join(missing, ", "))
	}
	base, err := projections.NewPlainBM25(filepath.Join(tmp, "bm25"))
	if err != nil {
		return nil, err
	}
	defer base.Close()
	if err := base.Add(recs); err != nil {
		return nil, err
	}

	type rankerFn struct {
		name string
		ids  func(q string) ([]string, error)
	}
	viaService := func(mode string) func(string) ([]string, error) {
		return func(q string) ([]string, error) {
			res, err := svc.Search(ctx, trellis.SearchRequest{Query: q, TopK: 10, Repo: "eval", Mode: mode})
			if err != nil {
				return nil, err
			}
			ids := make([]string, len(res.Results))
			for i, h := range res.Results {
				ids[i] = h.ChunkID
			}
			return ids, nil
		}
	}
	rankers := []rankerFn{
		{RankerBM25, func(q string) ([]string, error) { return base.Query(q, 10) }},
		{RankerLexical, viaService(trellis.SearchLexical)},
	}
	if hybrid {
		rankers = append(rankers, rankerFn{RankerHybrid, viaService(trellis.SearchHybrid)})
	}
	answers := func(q Question, id string) bool {
		c, ok := chunks[id]
		if !ok {
			return false
		}
		for _, n := range strings.Split(c.Name, ", ") {
			for _, a := range q.Answers {
				if a == c.SourcePath+"#"+n {
					return true
				}
			}
		}
		return false
	}
	codebases := map[string]bool{}
	for _, q := range all {
		if cfg.Half != HalfAll && q.Half != cfg.Half {
			continue
		}
		codebases[q.Codebase] = true
		qr := QuestionRanks{Question: q, Ranks: map[string]int{}}
		for _, r := range rankers {
			ids, err := r.ids(q.Text)
			if err != nil {
				return nil, fmt.Errorf("%s: question %d: %w", r.name, q.Number, err)
			}
			for i, id := range ids {
				if i < 10 && answers(q, id) {
					qr.Ranks[r.name] = i + 1
					break
				}
			}
		}
		rep.PerQuery = append(rep.PerQuery, qr)
	}
	rep.Questions, rep.Codebases = len(rep.PerQuery), len(codebases)
	for _, r := range rankers {
		rf := RankerFigures{Ranker: r.name, ByKind: map[string]Figures{}}
		rf.All = figures(rep.PerQuery, r.name, "")
		for _, k := range []string{KindLiteral, KindParaphrased, KindConceptual} {
			rf.ByKind[k] = figures(rep.PerQuery, r.name, k)
		}
		rep.Rankers = append(rep.Rankers, rf)
	}
	return rep, nil
}

// figures computes MRR@10, hit@1 and hit@10 of ranker over the questions
// of kind ("" for all).
func figures(qs []QuestionRanks, ranker, kind string) Figures {
	var f Figures
	for _, q := range qs {
		if kind != "" && q.Kind != kind {
			continue
		}
		f.Questions++
		r := q.Ranks[ranker]
		if r > 0 {
			f.MRR += 1 / float64(r)
			f.Hit10++
		}
		if r == 1 {
			f.Hit1++
		}
	}
	if f.Questions > 0 {
		n := float64(f.Questions)
		f.MRR, f.Hit1, f.Hit10 = f.MRR/n, f.Hit1/n, f.Hit10/n
	}
	return f
}

// buildCorpus copies the Go codebases and the embedded Python codebases
// into dir.
func buildCorpus(goSrc, dir string) error {
	for _, pkg := range goCodebases {
		src := filepath.Join(goSrc, filepath.FromSlash(pkg))
		if _, err := os.Stat(src); err != nil {
			return fmt.Errorf("go codebase %s: %w (set the Go source tree)", pkg, err)
		}
		if err := copyTree(os.DirFS(src), ".", filepath.Join(dir, filepath.FromSlash(pkg))); err != nil {
			return err
		}
	}
	sub, err := fs.Sub(evalData, evalDir)
	if err != nil {
		return err
	}
	return copyTree(sub, "python", filepath.Join(dir, "python"))
}

// copyTree copies the regular files under root of fsys into dir.
func copyTree(fsys fs.FS, root, dir string) error {
	return fs.WalkDir(fsys, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p, root), "/")
		target := filepath.Join(dir, filepath.FromSlash(rel))
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
}

// Codebases lists the evaluation's codebases: the Go packages and the
// Python packages.
func Codebases() []string {
	out := append([]string{}, goCodebases...)
	entries, _ := fs.ReadDir(evalData, path.Join(evalDir, "python"))
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, "python/"+e.Name())
		}
	}
	sort.Strings(out)
	return out
}
