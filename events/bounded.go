package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
)

// singleLoads is how many of an aggregate's new events a load fetches one
// direct get at a time before it switches to batches.
//
// A batched direct get filtered by a wildcard subject (every aggregate's
// filter is one) does not stop at the aggregate's last event: the server
// goes on reading the stream to its end to find that nothing more
// matches. With a backlog behind the aggregate (tasks added ahead of the
// pool that works them) every load then read the whole backlog, and a
// pool's throughput fell as its queue grew (954 tasks/s with 2,000 tasks
// queued, 532 with 8,000). A single get reads only up to the next
// matching event, and the load knows where to stop: it asks for the
// aggregate's last event first (the server finds it from its subject
// index). Aggregates with many new events (a long VINE graph folded
// cold) switch to batches after singleLoads of them.
const singleLoads = 8

// lastMatching returns the last event matching filter (ok false when
// none, as the server answering saw it).
func (s *Store) lastMatching(ctx context.Context, stream, filter string) (Recorded, bool, error) {
	return s.directOne(ctx, stream, map[string]any{"last_by_subj": filter})
}

// nextMatching returns the first event at or after seq matching filter.
func (s *Store) nextMatching(ctx context.Context, stream, filter string, seq uint64) (Recorded, bool, error) {
	return s.directOne(ctx, stream, map[string]any{"seq": seq, "next_by_subj": filter})
}

// directOne sends one unbatched direct get and decodes its answer, asking
// again after AttemptTimeout of silence (any replica answers a direct
// get, one cut off never) until RequestTimeout.
func (s *Store) directOne(ctx context.Context, stream string, req map[string]any) (Recorded, bool, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return Recorded{}, false, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	var msg *nats.Msg
	for {
		actx, acancel := context.WithTimeout(ctx, s.cfg.AttemptTimeout)
		msg, err = s.nc.RequestWithContext(actx, "$JS.API.DIRECT.GET."+stream, body)
		acancel()
		if err == nil || !errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		return Recorded{}, false, fmt.Errorf("load %s: %w", stream, err)
	}
	if len(msg.Data) == 0 && msg.Header != nil {
		switch st := msg.Header.Get("Status"); st {
		case "":
		case "404":
			return Recorded{}, false, nil
		case "503":
			return Recorded{}, false, fmt.Errorf("load %s: %w", stream, nats.ErrNoResponders)
		default:
			return Recorded{}, false, fmt.Errorf("load %s: direct get status %s %s", stream, st, msg.Header.Get("Description"))
		}
	}
	rec, err := decodeDirect(msg)
	if err != nil {
		return Recorded{}, false, err
	}
	return rec, true, nil
}

// loadBounded reads the events matching filter from seq from up to and
// including last, the aggregate's last event: one get per event for the
// first singleLoads of them, batches after that. done is false when a
// replica answered that nothing more matched before last (it lags behind
// the one that answered last): the caller reads as before.
func (s *Store) loadBounded(ctx context.Context, stream, filter string, from uint64, last Recorded) (out []Recorded, next uint64, done bool, err error) {
	for range singleLoads {
		if from == last.Seq {
			return append(out, last), 0, true, nil
		}
		rec, ok, err := s.nextMatching(ctx, stream, filter, from)
		if err != nil {
			return nil, 0, false, err
		}
		if !ok || rec.Seq > last.Seq {
			return out, from, false, nil
		}
		out = append(out, rec)
		if rec.Seq == last.Seq {
			return out, 0, true, nil
		}
		from = rec.Seq + 1
	}
	return out, from, false, nil
}
