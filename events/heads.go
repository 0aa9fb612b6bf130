package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Reads of aggregates' last events, gathered.
//
// On a stream synced on every write, the server stores each write with
// the stream's store locked until its fsync returns, and a direct get
// waits for that lock; it is also answered inline by the reading
// connection's server-side loop, so what the connection sends after it
// (the appends of the same process) waits too. N reads sent one after
// the other each wait for a write: a worker pool whose slots each read a
// task before running it (see taskqueue.Handler.HoldDispatched) ran at
// the pace of the stream's fsyncs, and its outcomes, arriving too few at
// a time to share a batch, went out as single writes. LastSeqOf gathers
// the reads that wait at the same moment into one multi-subject direct
// get (multi_last), which the server answers under one hold of the lock:
// one wait for the whole group.

// headsBatch bounds the filters of one gathered read. The server answers
// at most 1,024 subjects per request (each filter may match several: an
// aggregate's event types are subjects of their own); a request it
// refuses as too large, or as one it does not know (a server older than
// multi_last), is read filter by filter.
const headsBatch = 32

// maxDirectAnswers is the most messages the server sends for one
// multi_last request.
const maxDirectAnswers = 1024

// headRead is one caller's filter in a gathered read.
type headRead struct {
	filter string
	seq    uint64
	err    error
	// sent is when the gathered request that answered it was sent.
	sent time.Time
	done chan struct{}
}

// headReader gathers one stream's reads: while one request is in flight,
// the reads that arrive wait and go together in the next.
type headReader struct {
	mu      sync.Mutex
	waiting []*headRead
	running bool
}

// LastSeqOf returns the stream sequence of the last event matching filter
// (an aggregate's subject filter), 0 when none matches as the server
// answering sees it (a replica of a replicated stream may lag: a caller
// that must not miss an event reads 0 as "unknown" and loads from the
// stream's leader). The payload is not read. Concurrent calls on one
// stream share requests (see above).
func (s *Store) LastSeqOf(ctx context.Context, stream, filter string) (uint64, error) {
	seq, _, err := s.LastSeqRead(ctx, stream, filter)
	return seq, err
}

// LastSeqRead is LastSeqOf that also returns when the request that
// answered it was sent: what it read of the log is at least that recent
// (a read waiting for an earlier gathered request to end is not made
// before that one ends).
func (s *Store) LastSeqRead(ctx context.Context, stream, filter string) (seq uint64, sent time.Time, err error) {
	if filter == "" || strings.ContainsAny(filter, " \t\r\n") || strings.HasPrefix(filter, ".") || strings.HasSuffix(filter, ".") || strings.Contains(filter, "..") {
		return 0, time.Time{}, fmt.Errorf("last of %q: malformed subject filter", filter)
	}
	r := &headRead{filter: filter, done: make(chan struct{})}
	hr := s.headReader(stream)
	hr.mu.Lock()
	hr.waiting = append(hr.waiting, r)
	if !hr.running {
		hr.running = true
		go s.readHeads(stream, hr)
	}
	hr.mu.Unlock()
	select {
	case <-r.done:
		return r.seq, r.sent, r.err
	case <-ctx.Done():
		// The gathered read goes on for the others; its answer to this
		// caller is dropped.
		return 0, time.Time{}, fmt.Errorf("last of %s: %w", filter, ctx.Err())
	}
}

func (s *Store) headReader(stream string) *headReader {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.heads == nil {
		s.heads = map[string]*headReader{}
	}
	hr, ok := s.heads[stream]
	if !ok {
		hr = &headReader{}
		s.heads[stream] = hr
	}
	return hr
}

// readHeads answers the waiting reads, headsBatch at a time, until none
// waits.
func (s *Store) readHeads(stream string, hr *headReader) {
	for {
		hr.mu.Lock()
		n := min(len(hr.waiting), headsBatch)
		if n == 0 {
			hr.running = false
			hr.mu.Unlock()
			return
		}
		group := hr.waiting[:n:n]
		hr.waiting = append([]*headRead(nil), hr.waiting[n:]...)
		hr.mu.Unlock()
		sent := time.Now()
		s.readHeadGroup(stream, group)
		for _, r := range group {
			r.sent = sent
			close(r.done)
		}
	}
}

// readHeadGroup reads the last events of a group's filters in one
// request, or filter by filter when the server refuses it as too large.
func (s *Store) readHeadGroup(stream string, group []*headRead) {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.RequestTimeout)
	defer cancel()
	filters := make([]string, 0, len(group))
	seen := map[string]bool{}
	for _, r := range group {
		if !seen[r.filter] {
			seen[r.filter] = true
			filters = append(filters, r.filter)
		}
	}
	last, err := s.multiLast(ctx, stream, filters)
	if errors.Is(err, errNotGathered) {
		for _, r := range group {
			rec, ok, err := s.lastMatching(ctx, stream, r.filter)
			if ok {
				r.seq = rec.Seq
			}
			r.err = err
		}
		return
	}
	for _, r := range group {
		r.seq, r.err = last[r.filter], err
	}
}

// errNotGathered: the server refused a multi_last read as too large (it
// matched more subjects than one answer holds) or as a request it does
// not know.
var errNotGathered = errors.New("multi_last read refused")

// multiLast asks for the last message of every subject matching filters
// and returns, per filter, the highest sequence among them (absent: none
// matched), asking again after AttemptTimeout of silence (a direct get
// goes to any replica, and one cut off answers nothing) until ctx ends.
func (s *Store) multiLast(ctx context.Context, stream string, filters []string) (map[string]uint64, error) {
	for {
		actx, acancel := context.WithTimeout(ctx, s.cfg.AttemptTimeout)
		out, err := s.multiLastOnce(actx, stream, filters)
		acancel()
		if err == nil || !errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
			return out, err
		}
	}
}

// multiLastOnce is one attempt of multiLast.
func (s *Store) multiLastOnce(ctx context.Context, stream string, filters []string) (map[string]uint64, error) {
	body, err := json.Marshal(map[string]any{"multi_last": filters})
	if err != nil {
		return nil, err
	}
	// Room for every answer the server may send (see headsBatch): a
	// subscription whose channel is full drops messages.
	inbox, next, unsub, err := s.directReplies(maxDirectAnswers)
	if err != nil {
		return nil, fmt.Errorf("last of %d aggregates: subscribe: %w", len(filters), err)
	}
	defer unsub()
	if err := s.nc.PublishRequest("$JS.API.DIRECT.GET."+stream, inbox, body); err != nil {
		return nil, fmt.Errorf("last of %d aggregates: %w", len(filters), err)
	}
	out := map[string]uint64{}
	for {
		msg, err := next(ctx)
		if err != nil {
			return nil, fmt.Errorf("last of %d aggregates on %s: %w", len(filters), stream, err)
		}
		switch kind, err := classifyDirect(msg); kind {
		case directMsg:
		case directEnd, directNone: // the end of the answer; none: no subject matched any filter
			return out, nil
		case directRefused:
			return nil, fmt.Errorf("%w: %w", errNotGathered, err)
		default:
			return nil, fmt.Errorf("last of %d aggregates on %s: %w", len(filters), stream, err)
		}
		subject := msg.Header.Get("Nats-Subject")
		seq, err := strconv.ParseUint(msg.Header.Get("Nats-Sequence"), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("last of %d aggregates on %s: bad sequence header: %w", len(filters), stream, err)
		}
		for _, f := range filters {
			if subjectMatches(f, subject) && seq > out[f] {
				out[f] = seq
			}
		}
	}
}

// subjectMatches reports whether subject matches the NATS subject filter
// (tokens separated by dots; "*" matches one token, a final ">" one or
// more).
func subjectMatches(filter, subject string) bool {
	for {
		ft, frest, fmore := strings.Cut(filter, ".")
		st, srest, smore := strings.Cut(subject, ".")
		switch {
		case ft == ">" && !fmore:
			return st != ""
		case ft != "*" && ft != st:
			return false
		case !fmore || !smore:
			return fmore == smore
		}
		filter, subject = frest, srest
	}
}
