package server

import (
	"path/filepath"
	"testing"
	"time"
)

// TestRetentionConfigCarriesThePace: serve's --prune-rate reaches the
// retention loop's prunes (retention.Options.RemoveRate).
func TestRetentionConfigCarriesThePace(t *testing.T) {
	t.Parallel()
	rc, err := retentionConfig(Config{Retention: time.Hour, Archive: filepath.Join(t.TempDir(), "archive"), PruneRate: 250})
	if err != nil {
		t.Fatal(err)
	}
	if rc == nil || rc.Options.RemoveRate != 250 {
		t.Fatalf("retention config %+v; want its prunes paced at 250 a second", rc)
	}
}
