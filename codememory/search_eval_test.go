package codememory_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/codememory"
	"github.com/trellis/trellis/internal/servicetest"
)

// evalQuestions are developer questions about this repository's own code,
// each answered by one function or method (path and name suffix).
var evalQuestions = []struct {
	query, path, name string
}{
	{"append an event only if the aggregate's last sequence is still the expected one", "events/store.go", "Append"},
	{"fold queue events into a task packet", "taskqueue/events.go", "Apply|Fold"},
	{"claim the oldest queued task for a worker", "taskqueue/claim.go", "Next"},
	{"detect that a worker's lease expired from a redelivered dispatch", "taskqueue/claim.go", "ClaimDispatched"},
	{"jaccard similarity of two token sets", "memory/similarity.go", "Jaccard"},
	{"render a checkpoint as markdown", "projections/checkpoints.go", "RenderCheckpoint"},
	{"exponential backoff with jitter between retries", "taskqueue/finish.go", "ExponentialBackoff"},
	{"infer a fact's category from keywords", "memory/category.go", "Category"},
	{"write a file atomically through a temporary file and rename", "projections/file.go", "WriteFileAtomic"},
	{"start the embedded nats server with jetstream", "events/embedded.go", "StartEmbedded"},
	{"decode a JSON request strictly rejecting unknown fields", "decode.go", "DecodeRequest"},
	{"lock the data directory so only one process uses it", "server/lock.go", "lockDataDir"},
	{"send heartbeats to extend the lease while a handler runs", "workers/pool.go", "heartbeat"},
	{"detect a hand edit of a vine file and record it", "vinegraph/handler.go", "reconcile"},
	{"group duplicate facts transitively with union find", "memory/group.go", "GroupDuplicates"},
	{"map an error code to an http status", "error.go", "HTTPStatus"},
}

// TestSearchRankingMRR measures MRR@10 on the evaluation set over this
// repository's source and holds a floor against regressions.
func TestSearchRankingMRR(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("ingests the repository")
	}
	svc, b := servicetest.Start(t)
	ctx := context.Background()
	root, _ := filepath.Abs("..")
	if _, err := codememory.Ingest(ctx, b.Store, codememory.IngestConfig{Root: root, Repo: "trellis"}); err != nil {
		t.Fatal(err)
	}
	var mrr float64
	for _, q := range evalQuestions {
		res, err := svc.Search(ctx, trellis.SearchRequest{Query: q.query, TopK: 10, FileType: ".go"})
		if err != nil {
			t.Fatal(err)
		}
		rank := 0
		for i, h := range res.Results {
			for _, name := range strings.Split(q.name, "|") {
				if rank == 0 && h.SourcePath == q.path && (h.Name == name || strings.HasSuffix(h.Name, "."+name)) {
					rank = i + 1
				}
			}
			if rank > 0 {
				break
			}
		}
		if rank > 0 {
			mrr += 1 / float64(rank)
		}
		t.Logf("rank %2d  %s", rank, q.query)
	}
	mrr /= float64(len(evalQuestions))
	t.Logf("MRR@10 = %.3f over %d questions", mrr, len(evalQuestions))
	if mrr < 0.55 {
		t.Fatalf("MRR@10 %.3f fell below the 0.55 floor", mrr)
	}
}
