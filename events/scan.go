package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Message is a stored message as Scan reads it: the event, when the stream
// stored it, and whether it could be read as an event at all.
type Message struct {
	Recorded
	// Stored is when the stream stored the message: JetStream's own
	// timestamp, set by the server (the envelope's Time is when the
	// command decided the event; the two differ by the append's latency).
	Stored time.Time
	// MsgID is the message's Nats-Msg-Id header: Trellis sends one with
	// every append (the event id, or an idempotency key), so a message
	// without one was published from outside Trellis.
	MsgID string
	// Scheduler is the Nats-Scheduler header the server sets on a message
	// it published from a message schedule (a timer): the timer's subject.
	// Clients cannot set it (except to purge a schedule).
	Scheduler string
	// BatchID and BatchSeq are the Nats-Batch-Id and Nats-Batch-Sequence
	// headers of a message appended in an atomic batch; a message the
	// server published from a timer keeps the timer's.
	BatchID  string
	BatchSeq uint64
	// Bad is set when the message is not an envelope, or its large
	// payload cannot be resolved (missing, or not matching its digest):
	// Recorded then holds what could be read (at least Stream, Subject and
	// Seq).
	Bad error
}

// ScanRange bounds a Scan. The zero value reads the whole stream as it is
// when the scan starts.
type ScanRange struct {
	// Filter is a subject filter ("" for every subject).
	Filter string
	// From is the first sequence to read (1 when 0). It wins over Since.
	From uint64
	// Since, when set and From is 0, starts at the first message stored
	// at or after it.
	Since time.Time
	// To is the last sequence to read (0: the stream's last sequence when
	// the scan starts, so a scan ends even while appends go on).
	To uint64
	// Until, when set, ends the scan before the first message stored after
	// it.
	Until time.Time
}

// ErrStopScan, returned by a Scan callback, ends the scan early without an
// error.
var ErrStopScan = errors.New("stop scan")

// scanBatch and scanBytes bound one direct-get round trip of Scan: its
// memory does not grow with the stream.
const (
	scanBatch = 1024
	scanBytes = 4 << 20
)

// Scan calls fn for every message of stream within r, in stream order,
// with the time the stream stored it. It reads with batched direct gets
// (no consumer), holding at most one batch (scanBatch messages, about
// scanBytes) in memory. Deleted messages are stepped over: a reader sees
// them as gaps in the sequences. Unlike Read, a message that is not an
// event is passed on with Bad set rather than stopping the scan.
func (s *Store) Scan(ctx context.Context, stream string, r ScanRange, fn func(Message) error) error {
	to := r.To
	if to == 0 {
		last, err := s.LastSeq(ctx, stream)
		if err != nil {
			return err
		}
		to = last
	}
	from := r.From
	var since *time.Time
	if from == 0 {
		if !r.Since.IsZero() {
			t := r.Since.UTC()
			since = &t
		} else {
			from = 1
		}
	}
	// visit handles one message; done reports the end of the range.
	visit := func(m Message) (done bool, err error) {
		if m.Seq > to || (!r.Until.IsZero() && m.Stored.After(r.Until)) {
			return true, nil
		}
		if m.Bad == nil && m.PayloadRef != nil {
			if err := s.Resolve(ctx, &m.Recorded); errors.Is(err, ErrBlob) {
				m.Bad = err
			} else if err != nil {
				return true, err
			}
		}
		if err := fn(m); errors.Is(err, ErrStopScan) {
			return true, nil
		} else if err != nil {
			return true, err
		}
		from = m.Seq + 1
		return false, nil
	}
	for {
		if since == nil && from > to {
			return nil
		}
		req := map[string]any{"batch": scanBatch, "max_bytes": scanBytes}
		if since != nil {
			req["start_time"] = since
		} else {
			req["seq"] = from
		}
		if r.Filter != "" {
			req["next_by_subj"] = r.Filter
		}
		msgs, err := s.directRaw(ctx, stream, req)
		if err != nil {
			return err
		}
		if len(msgs) == 0 {
			// Nothing more, or a replica that lags behind the stream
			// (direct gets may be answered by any replica): ask the
			// stream's leader for the next message.
			m, ok, err := s.leaderNext(ctx, stream, r.Filter, from, since)
			if err != nil || !ok {
				return err
			}
			msgs = []Message{m}
		}
		since = nil
		for _, m := range msgs {
			if done, err := visit(m); done || err != nil {
				return err
			}
		}
	}
}

// leaderNext asks the stream's leader (the JetStream API, not a direct
// get) for the first message at or after seq (or stored at or after
// since) matching filter.
func (s *Store) leaderNext(ctx context.Context, stream, filter string, seq uint64, since *time.Time) (Message, bool, error) {
	if filter == "" {
		filter = ">"
	}
	req := map[string]any{"next_by_subj": filter}
	if since != nil {
		req["start_time"] = since
	} else {
		req["seq"] = seq
	}
	body, err := json.Marshal(req)
	if err != nil {
		return Message{}, false, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	reply, err := s.nc.RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET."+stream, body)
	if err != nil {
		return Message{}, false, fmt.Errorf("scan %s: %w", stream, err)
	}
	var resp struct {
		Message *struct {
			Subject  string    `json:"subject"`
			Sequence uint64    `json:"seq"`
			Header   []byte    `json:"hdrs"`
			Data     []byte    `json:"data"`
			Time     time.Time `json:"time"`
		} `json:"message"`
		Error *jetstream.APIError `json:"error"`
	}
	if err := json.Unmarshal(reply.Data, &resp); err != nil {
		return Message{}, false, fmt.Errorf("scan %s: %w", stream, err)
	}
	if resp.Error != nil {
		if isMsgNotFound(resp.Error) {
			return Message{}, false, nil
		}
		return Message{}, false, fmt.Errorf("scan %s: %w", stream, resp.Error)
	}
	if resp.Message == nil {
		return Message{}, false, nil
	}
	sm := resp.Message
	m := Message{Stored: sm.Time}
	if len(sm.Header) > 0 {
		if hdr, err := nats.DecodeHeadersMsg(sm.Header); err == nil {
			m.setHeaders(hdr)
		}
	}
	rec, err := Decode(stream, sm.Subject, sm.Sequence, sm.Data)
	m.Recorded = rec
	if err != nil {
		m.Recorded = Recorded{Stream: stream, Subject: sm.Subject, Seq: sm.Sequence}
		m.Bad = fmt.Errorf("%w: not an event envelope: %w", ErrBadEvent, err)
	}
	return m, true, nil
}

// directRaw sends one batched direct-get request and returns its messages
// (none when nothing matches).
func (s *Store) directRaw(ctx context.Context, stream string, req map[string]any) ([]Message, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	batch, ok := req["batch"].(int)
	if !ok {
		batch = scanBatch
	}
	inbox, next, unsub, err := s.directReplies(batch)
	if err != nil {
		return nil, fmt.Errorf("scan %s: subscribe: %w", stream, err)
	}
	defer unsub()
	if err := s.nc.PublishRequest("$JS.API.DIRECT.GET."+stream, inbox, body); err != nil {
		return nil, fmt.Errorf("scan %s: %w", stream, err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	var out []Message
	for {
		msg, err := next(ctx)
		if err != nil {
			return nil, fmt.Errorf("scan %s: %w", stream, err)
		}
		switch kind, err := classifyDirect(msg); kind {
		case directMsg:
		case directNone, directEnd:
			return out, nil
		default:
			return nil, fmt.Errorf("scan %s: %w", stream, err)
		}
		m, err := rawMessage(stream, msg)
		if err != nil {
			return nil, fmt.Errorf("scan %s: %w", stream, err)
		}
		out = append(out, m)
	}
}

// rawMessage reads one direct-get answer.
func rawMessage(stream string, msg *nats.Msg) (Message, error) {
	seq, err := strconv.ParseUint(msg.Header.Get(jetstream.SequenceHeader), 10, 64)
	if err != nil {
		return Message{}, fmt.Errorf("bad sequence header %q: %w", msg.Header.Get(jetstream.SequenceHeader), err)
	}
	stored, err := time.Parse(time.RFC3339Nano, msg.Header.Get(jetstream.TimeStampHeaer))
	if err != nil {
		return Message{}, fmt.Errorf("#%d: bad time stamp header: %w", seq, err)
	}
	subject := msg.Header.Get(jetstream.SubjectHeader)
	rec, err := Decode(stream, subject, seq, msg.Data)
	m := Message{Recorded: rec, Stored: stored}
	m.setHeaders(msg.Header)
	if err != nil {
		m.Recorded = Recorded{Stream: stream, Subject: subject, Seq: seq}
		m.Bad = fmt.Errorf("%w: not an event envelope: %w", ErrBadEvent, err)
	}
	return m, nil
}

// SeqAtTime returns the last sequence of stream stored at or before t (0
// when the stream held nothing then): where a projection as of t stops.
func (s *Store) SeqAtTime(ctx context.Context, stream string, t time.Time) (uint64, error) {
	after := t.UTC().Add(time.Nanosecond)
	msgs, err := s.directRaw(ctx, stream, map[string]any{"batch": 1, "start_time": after})
	if err != nil {
		return 0, err
	}
	if len(msgs) == 0 {
		// Nothing stored after t, or a replica that lags: ask the leader.
		m, ok, err := s.leaderNext(ctx, stream, "", 0, &after)
		if err != nil {
			return 0, err
		}
		if !ok {
			return s.LastSeq(ctx, stream)
		}
		msgs = []Message{m}
	}
	return msgs[0].Seq - 1, nil
}

// StreamInfo returns the stream's configuration and state (first and last
// sequence, message count, deleted messages).
func (s *Store) StreamInfo(ctx context.Context, stream string) (*jetstream.StreamInfo, error) {
	// Looking the stream up fetches its info: one request.
	st, err := s.js.Stream(ctx, stream)
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", stream, err)
	}
	return st.CachedInfo(), nil
}

// setHeaders records the headers verify reads.
func (m *Message) setHeaders(h nats.Header) {
	m.MsgID = h.Get(nats.MsgIdHdr)
	m.Scheduler = h.Get("Nats-Scheduler")
	m.BatchID = h.Get("Nats-Batch-Id")
	m.BatchSeq, _ = strconv.ParseUint(h.Get("Nats-Batch-Sequence"), 10, 64)
}
