package trellis_test

import (
	"bytes"
	"errors"
	"log/slog"
	"regexp"
	"strings"
	"testing"

	"github.com/trellis/trellis"
)

// TestPublicErrorHidesInternalDetail: an internal error's text (a path, a
// subject) reaches the log with a reference id, and the caller sees only
// the reference; other codes pass as they are.
func TestPublicErrorHidesInternalDetail(t *testing.T) {
	t.Parallel()
	var logged bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logged, nil))
	secret := "open /srv/data/secret.env: permission denied on trellis.queue.x"
	got := trellis.PublicError(log, errors.New(secret), "op", "test")
	if got.Code != trellis.CodeInternal || strings.Contains(got.Message, "secret") {
		t.Fatalf("caller sees %+v", got)
	}
	ref := regexp.MustCompile(`ref ([0-9a-f]{12})`).FindStringSubmatch(got.Message)
	if ref == nil {
		t.Fatalf("no reference in %q", got.Message)
	}
	if !strings.Contains(logged.String(), ref[1]) || !strings.Contains(logged.String(), "secret.env") {
		t.Fatalf("log %q lacks the reference %s or the detail", logged.String(), ref[1])
	}
	inv := trellis.FieldError("queue", "bad name %q", "x y")
	if got := trellis.PublicError(log, inv); got.Code != trellis.CodeInvalid || got.Field != "queue" || got.Message != inv.Message {
		t.Fatalf("invalid became %+v", got)
	}
	if trellis.PublicError(log, nil) != nil {
		t.Fatal("nil error became an error")
	}
}
