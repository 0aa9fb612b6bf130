package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/trellis/trellis/events"
)

// seqBefore returns the last sequence of stream stored before t (0 when
// the stream held nothing then), with one direct get by start time. It is
// where a fold "as of t" stops and where a window starting at t begins.
// (Issue 15's events.Store.SeqAtTime answers the same question, at or
// before t; once both are merged this can call it.)
func seqBefore(ctx context.Context, store *events.Store, stream string, t time.Time) (uint64, error) {
	req, err := json.Marshal(map[string]any{"start_time": t.UTC().Format(time.RFC3339Nano)})
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, store.Config().RequestTimeout)
	defer cancel()
	msg, err := store.Conn().RequestWithContext(ctx, "$JS.API.DIRECT.GET."+stream, req)
	if err != nil {
		return 0, fmt.Errorf("%s: sequence at %s: %w", stream, t.Format(time.RFC3339), err)
	}
	if len(msg.Data) == 0 && msg.Header != nil {
		switch msg.Header.Get("Status") {
		case "404": // nothing stored at or after t: everything is before
			return store.LastSeq(ctx, stream)
		case "503":
			return 0, fmt.Errorf("%s: sequence at %s: %w", stream, t.Format(time.RFC3339), nats.ErrNoResponders)
		case "":
		default:
			return 0, fmt.Errorf("%s: sequence at %s: direct get status %s %s", stream, t.Format(time.RFC3339), msg.Header.Get("Status"), msg.Header.Get("Description"))
		}
	}
	seq, err := strconv.ParseUint(msg.Header.Get("Nats-Sequence"), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: sequence at %s: bad sequence header: %w", stream, t.Format(time.RFC3339), err)
	}
	return seq - 1, nil
}
