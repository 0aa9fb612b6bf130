package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/trellis/trellis"
)

// livePing is how often an idle live feed sends a ping with its positions
// (keeping proxies from closing it and telling the client where to resume).
const livePing = 15 * time.Second

// liveWriteTimeout bounds one write of a live feed to a slow client; the
// server's own write timeout would otherwise end every feed.
const liveWriteTimeout = 30 * time.Second

// live serves GET /v1/events/live: a live tail of the log as server-sent
// events.
//
// Query: stream (comma-separated: queue, vine, chunks, memory, tasks,
// workflows or stream names; default all), type (comma-separated), actor,
// aggregate, and the starting point: after (resume: "queue:120,vine:7", the last
// sequence received per stream), since (RFC 3339 or a duration ago: 15m),
// or tail (the last N events of each stream, at most 1000); by default
// only new events. payloads=true includes payloads up to 16 KiB.
//
// Messages: "hello" {"start": {stream: seq}} first; "event" (a
// trellis.LiveEvent, with id "<stream>:<seq>"); "ready" once the backlog
// is sent; "ping" {"positions": {stream: seq}} when idle; "lagged" when
// the client fell too far behind (the feed ends; resume with after=).
func (s *server) live(w http.ResponseWriter, r *http.Request) error {
	q, err := queryParams(r, "stream", "type", "actor", "aggregate", "after", "since", "tail", "payloads")
	if err != nil {
		return err
	}
	req, err := parseLive(q, time.Now())
	if err != nil {
		return err
	}
	feed, err := s.svc.OpenLive(r.Context(), req)
	if err != nil {
		return fmt.Errorf("live feed: %w", err)
	}
	defer feed.Close()
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	send := func(event, id string, v any) bool {
		data, err := json.Marshal(v)
		if err != nil {
			s.log.Error("live feed: encode", "err", err)
			return false
		}
		if err := rc.SetWriteDeadline(time.Now().Add(liveWriteTimeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return false
		}
		var b strings.Builder
		if id != "" {
			b.WriteString("id: " + id + "\n")
		}
		b.WriteString("event: " + event + "\ndata: ")
		b.Write(data)
		b.WriteString("\n\n")
		_, err = w.Write([]byte(b.String()))
		return err == nil
	}
	flush := func() bool { return rc.Flush() == nil }
	if !send("hello", "", map[string]any{"start": feed.Start()}) || !flush() {
		return nil
	}
	ping := time.NewTicker(livePing)
	defer ping.Stop()
	for {
		select {
		case <-r.Context().Done():
			return nil
		case <-s.cfg.Done:
			return nil // the server is shutting down; the client reconnects elsewhere or later
		case <-feed.Lagged():
			send("lagged", "", map[string]any{"message": "the client fell too far behind; resume with after= the last sequence received per stream"})
			flush()
			return nil
		case <-ping.C:
			body := map[string]any{}
			if pos, ok := feed.Positions(); ok {
				body["positions"] = pos
			}
			if !send("ping", "", body) || !flush() {
				return nil
			}
		case it := <-feed.Items():
			ok := true
			if it.Event != nil {
				ok = send("event", it.Event.Stream+":"+strconv.FormatUint(it.Event.Seq, 10), it.Event)
			} else if it.Ready {
				ok = send("ready", "", map[string]any{})
			}
			if !ok {
				return nil
			}
			if len(feed.Items()) == 0 && !flush() {
				return nil
			}
		}
	}
}

// parseLive reads a live feed's query.
func parseLive(q map[string]string, now time.Time) (trellis.LiveRequest, error) {
	req := trellis.LiveRequest{Actor: q["actor"], Aggregate: q["aggregate"]}
	if v := q["stream"]; v != "" {
		req.Streams = strings.Split(v, ",")
	}
	if v := q["type"]; v != "" {
		req.Types = strings.Split(v, ",")
	}
	if v, ok := q["after"]; ok {
		req.After = map[string]uint64{}
		for _, part := range strings.Split(v, ",") {
			name, seq, ok := strings.Cut(part, ":")
			n, err := strconv.ParseUint(seq, 10, 64)
			if !ok || err != nil {
				return req, trellis.FieldError("after", "%q is not stream:sequence (e.g. queue:120,vine:7)", truncateQuery(part))
			}
			req.After[name] = n
		}
	}
	if v, ok := q["since"]; ok {
		t, err := trellis.ParseTimeArg("since", v, now)
		if err != nil {
			return req, err
		}
		req.Since = t
	}
	if v, ok := q["tail"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil {
			return req, trellis.FieldError("tail", "%q is not an integer (0 to %d)", truncateQuery(v), trellis.MaxLiveTail)
		}
		req.Tail = n
	}
	if v, ok := q["payloads"]; ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return req, trellis.FieldError("payloads", "%q is not true or false", truncateQuery(v))
		}
		req.Payloads = b
	}
	return req, nil
}
