package retention_test

import (
	"context"
	"testing"
	"time"

	"github.com/trellis/trellis/audit"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/retention"
)

// testAnchorKey is the anchor key the keyed prunes sign with.
const testAnchorKey = "0123456789abcdef0123456789abcdef"

// pruneKeyed prunes every event stored so far (older than a minute as of
// an hour from now), signing with testAnchorKey, into an archive
// directory of the test's.
func pruneKeyed(t *testing.T, ctx context.Context, store *events.Store) *retention.Result {
	t.Helper()
	res, err := retention.Prune(ctx, store, retention.Options{OlderThan: time.Minute, Archive: t.TempDir(), Now: later, Key: []byte(testAnchorKey)})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// verifyKeyed runs audit verify on the live log with testAnchorKey and
// fails the test on any finding (when names the moment).
func verifyKeyed(t *testing.T, ctx context.Context, store *events.Store, when string) {
	t.Helper()
	var fs []audit.Finding
	if _, err := audit.Verify(ctx, store, audit.VerifyOptions{AnchorKey: []byte(testAnchorKey)}, func(f audit.Finding) error { fs = append(fs, f); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(fs) > 0 {
		t.Fatalf("verify %s: %v", when, fs)
	}
}

// verifyPruned verifies the live log after a keyed prune, and every
// archive the prune wrote.
func verifyPruned(t *testing.T, ctx context.Context, store *events.Store, res *retention.Result) {
	t.Helper()
	verifyKeyed(t, ctx, store, "after the prune")
	for _, ar := range res.Archives {
		if fs, _ := verifyArchive(t, ar.File); len(fs) > 0 {
			t.Fatalf("verify --file %s: %v", ar.File, fs)
		}
	}
}
