package audit

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/auth"
	"github.com/trellis/trellis/command"
	"github.com/trellis/trellis/events"
)

// auditScanBudget bounds the events one page reads: a page of a selective
// query (one actor in a busy stream) ends after this many, with a cursor,
// so no request runs unbounded.
const auditScanBudget = 20000

// AuditQuery implements trellis.AuditService.
// The token stream is for admins: its events hold the tokens' hashes,
// which token list keeps from everyone else.
func (s *Service) AuditQuery(ctx context.Context, req trellis.AuditQuery) (*trellis.AuditPage, error) {
	if stream, _, _, err := auditTarget(req); err == nil && stream == events.StreamAuth {
		if err := auth.Allow(ctx, "token.list"); err != nil {
			return nil, err
		}
	}
	return QueryPage(ctx, s.store, req)
}

// auditCursor is where the next page of a query starts, and where the
// query ends (the stream's end when the first page was read, so a query
// ends while appends go on).
type auditCursor struct{ next, to uint64 }

const auditCursorPrefix = "a1:"

func (c auditCursor) encode() string {
	return base64.RawURLEncoding.EncodeToString([]byte(fmt.Sprintf("%s%d:%d", auditCursorPrefix, c.next, c.to)))
}

func decodeAuditCursor(s string) (auditCursor, error) {
	bad := trellis.FieldError("cursor", "%q is not an audit cursor: pass the next_cursor of the previous page unchanged", s)
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return auditCursor{}, bad
	}
	rest, ok := strings.CutPrefix(string(raw), auditCursorPrefix)
	a, b, ok2 := strings.Cut(rest, ":")
	next, err1 := strconv.ParseUint(a, 10, 64)
	to, err2 := strconv.ParseUint(b, 10, 64)
	if !ok || !ok2 || err1 != nil || err2 != nil || next == 0 || next > to+1 {
		return auditCursor{}, bad
	}
	return auditCursor{next: next, to: to}, nil
}

// auditTarget resolves the query's stream and subject filter.
func auditTarget(req trellis.AuditQuery) (stream, filter, what string, err error) {
	switch {
	case req.Queue != "":
		return events.StreamQueue, "trellis.queue." + req.Queue + ".>", "queue " + req.Queue, nil
	case req.Graph != "":
		if !isGraphID(req.Graph) {
			return "", "", "", trellis.FieldError("graph", "%q is not a graph id (g + 20 lowercase hex digits, as vine import prints)", req.Graph)
		}
		return events.StreamVine, events.GraphFilter(req.Graph), "graph " + req.Graph, nil
	}
	stream, err = ValidStream("stream", req.Stream)
	return stream, "", "stream " + stream, err
}

// QueryPage answers one page of an audit query from the log: the
// events of the query's stream and subject filter stored within its time
// window, by its actor and of its type when given, in log order. It reads
// with batched direct gets and holds at most one page: a page ends at the
// query's limit, at trellis.MaxAuditPageBytes, or after reading
// auditScanBudget events, with a cursor to continue. A queue or graph
// with no events at all is not found; a window with none is an empty
// page.
func QueryPage(ctx context.Context, store *events.Store, req trellis.AuditQuery) (*trellis.AuditPage, error) {
	if err := req.Normalize(time.Now()); err != nil {
		return nil, err
	}
	stream, filter, what, err := auditTarget(req)
	if err != nil {
		return nil, err
	}
	since, until, _ := req.Window(time.Now())
	var cur auditCursor
	if req.Cursor != "" {
		if cur, err = decodeAuditCursor(req.Cursor); err != nil {
			return nil, err
		}
	} else {
		if filter != "" {
			found := false
			err := store.Scan(ctx, stream, events.ScanRange{Filter: filter}, func(events.Message) error {
				found = true
				return events.ErrStopScan
			})
			if err != nil {
				return nil, command.StoreError("audit", err)
			}
			if !found {
				return nil, trellis.Errorf(trellis.CodeNotFound, "no events for %s", what)
			}
		}
		last, err := store.LastSeq(ctx, stream)
		if err != nil {
			return nil, command.StoreError("audit", err)
		}
		cur.to = last
		if !until.IsZero() {
			cut, err := store.SeqAtTime(ctx, stream, until)
			if err != nil {
				return nil, command.StoreError("audit", err)
			}
			cur.to = min(cur.to, cut)
		}
	}
	page := &trellis.AuditPage{Events: []trellis.AuditEvent{}}
	if cur.to == 0 || (cur.next > cur.to) {
		return page, nil
	}
	r := events.ScanRange{Filter: filter, From: cur.next, To: cur.to, Until: until}
	if cur.next == 0 {
		r.Since = since
	}
	var (
		scanned int
		bytes   int
		lastSeq uint64
		full    bool
	)
	err = store.Scan(ctx, stream, r, func(m events.Message) error {
		scanned++
		lastSeq = m.Seq
		if m.ID != "" && actorMatches(m.Actor, req.Actor) && (req.Type == "" || m.Type == req.Type) {
			ev := auditEventOf(m)
			bytes += len(ev.Payload) + len(ev.Subject) + len(ev.Prev) + len(ev.Hash) + len(ev.Actor) + 256
			page.Events = append(page.Events, ev)
		}
		if len(page.Events) >= req.Limit || bytes >= trellis.MaxAuditPageBytes || scanned >= auditScanBudget {
			full = true
			return events.ErrStopScan
		}
		return nil
	})
	if err != nil {
		return nil, command.StoreError("audit", err)
	}
	if full && lastSeq < cur.to {
		page.NextCursor = auditCursor{next: lastSeq + 1, to: cur.to}.encode()
	}
	return page, nil
}

// auditEventOf is the audit view of a stored event.
func auditEventOf(m events.Message) trellis.AuditEvent {
	ev := trellis.AuditEvent{ID: m.ID, Type: m.Type, AggregateID: m.AggregateID, Time: m.Time, Actor: m.Actor,
		CausationID: m.CausationID, CorrelationID: m.CorrelationID, Schema: m.Schema, Payload: m.Payload,
		Stream: m.Stream, Subject: m.Subject, Seq: m.Seq, Stored: m.Stored.UTC(), Prev: m.Prev}
	if m.Bad == nil {
		ev.Hash = events.Hash(m.Envelope)
	}
	if len(ev.Payload) > trellis.MaxAuditPayloadBytes {
		ev.PayloadBytes, ev.PayloadOmitted, ev.Payload = len(ev.Payload), true, nil
	}
	if len(ev.Payload) == 0 {
		ev.Payload = json.RawMessage("null")
	}
	return ev
}

// All calls fn for every event of the query, page after page (the
// query's own cursor starts it; pages as large as allowed unless the query
// sets a limit), until the last page or an error from fn. It holds one
// page at a time.
func All(ctx context.Context, svc trellis.AuditService, req trellis.AuditQuery, fn func(trellis.AuditEvent) error) error {
	if req.Limit == 0 {
		req.Limit = trellis.MaxAuditLimit
	}
	for {
		page, err := svc.AuditQuery(ctx, req)
		if err != nil {
			return err
		}
		for _, ev := range page.Events {
			if err := fn(ev); err != nil {
				return err
			}
		}
		if page.NextCursor == "" {
			return nil
		}
		if req.Cursor == page.NextCursor {
			return errors.New("audit: a page returned its own cursor")
		}
		req.Cursor = page.NextCursor
	}
}

// actorMatches reports whether an event's actor is the one asked for: the
// same actor, or one of its slots (a worker pool "wB" runs its tasks as
// "wB/0", "wB/1", ...; a token's pool as "token/host-pid/0").
func actorMatches(actor, want string) bool {
	return want == "" || actor == want || strings.HasPrefix(actor, want+"/")
}

// isGraphID reports whether s looks like a graph id ("g" + 20 hex).
func isGraphID(s string) bool {
	if len(s) != 21 || s[0] != 'g' {
		return false
	}
	for _, r := range s[1:] {
		if !strings.ContainsRune("0123456789abcdef", r) {
			return false
		}
	}
	return true
}
