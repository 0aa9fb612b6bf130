package eventstest

import (
	"context"
	"testing"

	"github.com/trellis/trellis/events"
)

// Load returns every event of stream matching filter, failing the test
// when the store cannot read them.
func Load(t testing.TB, ctx context.Context, store *events.Store, stream, filter string) []events.Recorded {
	t.Helper()
	recs, _, err := store.Load(ctx, stream, filter)
	if err != nil {
		t.Fatalf("load %s: %v", filter, err)
	}
	return recs
}
