package mcpapi_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/handlers/mcpapi"
)

// brokenQueue is a queue service whose reads fail inside the server (a
// disk, a driver), with detail a caller must not see.
type brokenQueue struct{ trellis.QueueService }

func (brokenQueue) Show(context.Context, string) (*trellis.Task, error) {
	return nil, errors.New("open /srv/trellis/secret/board.db: input/output error on trellis.queue.x")
}

// TestInternalErrorsAreNotEchoed: an internal error reaches the agent as
// "internal" with a reference id only; the detail (a path, a subject)
// goes to the server's log under that reference, as over HTTP and NATS.
func TestInternalErrorsAreNotEchoed(t *testing.T) {
	t.Parallel()
	var logged bytes.Buffer
	srv := mcpapi.NewServerWith(brokenQueue{}, mcpapi.Config{Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "v0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	got := callErr(t, ctx, cs, "queue_show", map[string]any{"task_id": events.NewID(time.Now())})
	if !strings.HasPrefix(got, "internal: ") || strings.Contains(got, "/srv/trellis") || strings.Contains(got, "trellis.queue") || !strings.Contains(got, "ref ") {
		t.Fatalf("the agent sees %q; want internal with a reference and no detail", got)
	}
	ref := strings.Fields(got[strings.Index(got, "ref ")+4:])[0]
	ref = strings.TrimRight(ref, ");,")
	if !strings.Contains(logged.String(), ref) || !strings.Contains(logged.String(), "board.db") {
		t.Fatalf("the log %q lacks reference %s or the detail", logged.String(), ref)
	}
}
