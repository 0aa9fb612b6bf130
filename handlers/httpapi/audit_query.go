package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/trellis/trellis"
)

// auditQuery serves GET /v1/audit: an audit query across aggregates
// (queue, graph or stream; since, until, actor, type). By default it
// answers one page, {"events": [...], "next_cursor"}, like every list
// (limit, cursor). With format=jsonl it streams every matching event as
// application/x-ndjson, one per line, page by page (flushed after each, so
// neither side holds more than a page); a failure after the first byte
// cuts the response, so a client never mistakes a partial answer for a
// whole one.
func (s *server) auditQuery(w http.ResponseWriter, r *http.Request) error {
	q, err := queryParams(r, "queue", "graph", "stream", "since", "until", "actor", "type", "limit", "cursor", "format")
	if err != nil {
		return err
	}
	req := trellis.AuditQuery{Queue: q["queue"], Graph: q["graph"], Stream: q["stream"], Since: q["since"], Until: q["until"],
		Actor: q["actor"], Type: q["type"], Cursor: q["cursor"]}
	if v, ok := q["limit"]; ok {
		if req.Limit, err = strconv.Atoi(v); err != nil {
			return trellis.FieldError("limit", "%q is not an integer (0 or omitted: %d; at most %d)", truncateQuery(v), trellis.DefaultAuditLimit, trellis.MaxAuditLimit)
		}
	}
	switch q["format"] {
	case "", "json":
		page, err := s.svc.AuditQuery(r.Context(), req)
		if err != nil {
			return fmt.Errorf("audit: %w", err)
		}
		return s.writeJSON(w, r, http.StatusOK, page)
	case "jsonl":
		if _, ok := q["limit"]; ok {
			return trellis.FieldError("limit", "pages are for format=json; format=jsonl streams every event")
		}
		if req.Cursor != "" {
			return trellis.FieldError("cursor", "pages are for format=json; format=jsonl streams every event")
		}
	default:
		return trellis.FieldError("format", "unknown format %q; json (one page) or jsonl (every event, streamed)", truncateQuery(q["format"]))
	}
	req.Limit = trellis.MaxAuditLimit // pages as large as allowed: fewer reads of the log
	nw := &ndjsonWriter{w: w}
	rc := http.NewResponseController(w)
	for {
		page, err := s.svc.AuditQuery(r.Context(), req)
		if err != nil {
			return fmt.Errorf("audit: %w", err)
		}
		nw.start()
		for _, ev := range page.Events {
			line, err := json.Marshal(ev)
			if err != nil {
				return fmt.Errorf("audit: encode: %w", err)
			}
			if _, err := nw.Write(append(line, '\n')); err != nil {
				return fmt.Errorf("audit: write: %w", err)
			}
		}
		_ = rc.Flush()
		if page.NextCursor == "" {
			return nil
		}
		req.Cursor = page.NextCursor
	}
}
