package handlers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/command"
	"github.com/trellis/trellis/events"
)

// VerifyCacheSize bounds the aggregates whose last event a verify keeps in
// memory while it walks the log; the others are spilled to a temporary
// file (see headStore).
const VerifyCacheSize = 65536

// VerifyOptions configures Verify.
type VerifyOptions struct {
	// Since, when set, verifies the events the log stored from then on
	// (each still checked against its aggregate's previous event, read
	// back from the log when it lies before Since).
	Since time.Time
	// Streams limits the walk to these streams (default every domain
	// stream, events.Streams).
	Streams []string
	// CacheSize bounds the aggregates kept in memory (default
	// VerifyCacheSize); the others are spilled to a temporary file.
	CacheSize int
}

// StreamVerification is what Verify saw on one stream.
type StreamVerification struct {
	Stream string `json:"stream"`
	// FirstSeq and LastSeq are the stream's first and last sequence when
	// the walk began (JetStream keeps the last sequence when the last
	// message is deleted).
	FirstSeq uint64 `json:"first_seq"`
	LastSeq  uint64 `json:"last_seq"`
	// From is the first sequence walked.
	From uint64 `json:"from"`
	// Deleted is JetStream's count of deleted messages inside the stream
	// (interior gaps), for the whole stream.
	Deleted uint64 `json:"deleted"`
	// Limits names the stream's retention limits when it has any (max
	// age, messages, bytes): with them, messages before FirstSeq may have
	// expired rather than been removed.
	Limits string `json:"limits,omitempty"`
	ChainStats
	// Findings is how many findings this stream gave.
	Findings int `json:"findings"`
}

// VerifyReport is the result of Verify or VerifyFile.
type VerifyReport struct {
	// OK is true when nothing was removed, altered, reordered, duplicated
	// or malformed (unchained links do not count against it).
	OK bool `json:"ok"`
	// Findings is how many findings were reported.
	Findings int                  `json:"findings"`
	Streams  []StreamVerification `json:"streams"`
	// Digest is an export's SHA-256 over its lines (VerifyFile).
	Digest string `json:"digest,omitempty"`
	Millis int64  `json:"millis"`
}

// Verify walks every domain stream (or opts.Streams) in order and checks
// the log against tampering: JetStream's own evidence (sequences deleted
// from a stream, inside or at its end, and a stream that no longer starts
// at #1) and every aggregate's hash chain (each event's prev against the
// hash of its aggregate's previous event). Each finding goes to onFinding
// as it is found, with its position (stream, sequence, aggregate); the
// report sums up. Memory is bounded: at most opts.CacheSize aggregates'
// last events (the rest in a temporary file), one scan batch and the
// deleted ranges found. With opts.Since, each aggregate's earlier events
// are read back from the log when it first shows (one lookup per
// aggregate).
func Verify(ctx context.Context, store *events.Store, opts VerifyOptions, onFinding func(Finding) error) (*VerifyReport, error) {
	start := time.Now()
	streams := opts.Streams
	if len(streams) == 0 {
		for _, s := range events.Streams() {
			streams = append(streams, s.Name)
		}
	}
	if opts.CacheSize <= 0 {
		opts.CacheSize = VerifyCacheSize
	}
	rep := &VerifyReport{OK: true, Streams: []StreamVerification{}}
	emit := func(sv *StreamVerification, f Finding) error {
		rep.OK = false
		rep.Findings++
		sv.Findings++
		return onFinding(f)
	}
	for _, name := range streams {
		sv, err := verifyStream(ctx, store, name, opts, emit)
		if err != nil {
			return nil, command.StoreError("verify "+name, err)
		}
		rep.Streams = append(rep.Streams, *sv)
	}
	rep.Millis = time.Since(start).Milliseconds()
	return rep, nil
}

func verifyStream(ctx context.Context, store *events.Store, stream string, opts VerifyOptions, emit func(*StreamVerification, Finding) error) (*StreamVerification, error) {
	info, err := store.StreamInfo(ctx, stream)
	if err != nil {
		return nil, err
	}
	st := info.State
	sv := &StreamVerification{Stream: stream, FirstSeq: st.FirstSeq, LastSeq: st.LastSeq, Deleted: uint64(st.NumDeleted),
		Limits: limitsOf(info.Config)}
	from := uint64(1)
	if !opts.Since.IsZero() {
		cut, err := store.SeqAtTime(ctx, stream, opts.Since.Add(-time.Nanosecond))
		if err != nil {
			return nil, err
		}
		from = cut + 1
	}
	sv.From = from
	whole := from == 1
	headGone := st.LastSeq > 0 && st.FirstSeq > 1
	if whole && headGone {
		f := Finding{Kind: FindingRemoved, Stream: stream, Seq: 1, ToSeq: st.FirstSeq - 1,
			Detail: fmt.Sprintf("the stream starts at #%d: %d messages before it are gone (purged)", st.FirstSeq, st.FirstSeq-1)}
		if sv.Limits != "" {
			f.Detail = fmt.Sprintf("the stream starts at #%d: %d messages before it are gone (the stream has retention limits: %s; they may have expired)", st.FirstSeq, st.FirstSeq-1, sv.Limits)
		}
		if err := emit(sv, f); err != nil {
			return nil, err
		}
	}
	if st.LastSeq == 0 || from > st.LastSeq {
		return sv, nil
	}
	heads := newHeadStore(opts.CacheSize)
	defer heads.close()
	// From inside the log (--since), an aggregate's earlier events are
	// read back from the whole log: only a stream whose head is gone
	// leaves chains anchored before it.
	check := newChainCheck(&logSource{store: store, to: st.LastSeq}, heads, whole, headGone)
	expect := max(from, st.FirstSeq)
	err = store.Scan(ctx, stream, events.ScanRange{From: from, To: st.LastSeq}, func(m events.Message) error {
		if m.Seq > expect {
			check.gap(expect, m.Seq-1)
			if err := emit(sv, gapFinding(stream, expect, m.Seq-1)); err != nil {
				return err
			}
		}
		expect = m.Seq + 1
		findings, err := checkMessage(ctx, check, m)
		if err != nil {
			return err
		}
		for _, f := range findings {
			if err := emit(sv, f); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if expect <= st.LastSeq {
		if err := emit(sv, gapFinding(stream, expect, st.LastSeq)); err != nil {
			return nil, err
		}
	}
	sv.ChainStats = check.stats
	return sv, nil
}

// checkMessage checks one message read from the log.
func checkMessage(ctx context.Context, check *chainCheck, m events.Message) ([]Finding, error) {
	ref, ok := aggregateOf(m.Subject)
	switch {
	case m.Bad != nil && errors.Is(m.Bad, events.ErrBlob) && ok:
		fs, err := check.check(ctx, itemOf(m.Recorded, 0, false), ref)
		return append(fs, Finding{Kind: FindingAltered, Stream: m.Stream, Seq: m.Seq, Subject: m.Subject, Aggregate: ref.name, EventID: m.ID,
			Detail: "its large payload is missing from the blob bucket or does not match its digest"}), err
	case m.Bad != nil:
		return []Finding{{Kind: FindingMalformed, Stream: m.Stream, Seq: m.Seq, Subject: m.Subject, Detail: "not a Trellis event: " + m.Bad.Error()}}, nil
	case !ok:
		return []Finding{{Kind: FindingMalformed, Stream: m.Stream, Seq: m.Seq, Subject: m.Subject, EventID: m.ID, Detail: "no Trellis aggregate has this subject"}}, nil
	}
	fs, err := check.check(ctx, itemOf(m.Recorded, 0, true), ref)
	if m.MsgID == "" {
		fs = append(fs, foreignFinding(m.Recorded, ref.name, 0))
	}
	return fs, err
}

// foreignFinding reports an event stored without a message id.
func foreignFinding(rec events.Recorded, aggregate string, line int) Finding {
	return Finding{Kind: FindingForeign, Stream: rec.Stream, Seq: rec.Seq, Line: line, Subject: rec.Subject, Aggregate: aggregate, EventID: rec.ID,
		Detail: "stored without the message id (Nats-Msg-Id) every Trellis append carries: published from outside Trellis (an edit re-published, or a forged event)"}
}

func gapFinding(stream string, from, to uint64) Finding {
	n := to - from + 1
	return Finding{Kind: FindingRemoved, Stream: stream, Seq: from, ToSeq: to,
		Detail: fmt.Sprintf("%d message(s) deleted from the stream (JetStream shows the sequences as deleted)", n)}
}

// limitsOf describes a stream's retention limits ("" when it keeps
// everything).
func limitsOf(cfg jetstream.StreamConfig) string {
	var parts []string
	if cfg.MaxAge > 0 {
		parts = append(parts, "max age "+cfg.MaxAge.String())
	}
	if cfg.MaxMsgs > 0 {
		parts = append(parts, fmt.Sprintf("max %d messages", cfg.MaxMsgs))
	}
	if cfg.MaxBytes > 0 {
		parts = append(parts, fmt.Sprintf("max %d bytes", cfg.MaxBytes))
	}
	if cfg.MaxMsgsPerSubject > 0 {
		parts = append(parts, fmt.Sprintf("max %d messages per subject", cfg.MaxMsgsPerSubject))
	}
	return strings.Join(parts, ", ")
}

// logSource reads an aggregate back from the log (up to the walk's end).
type logSource struct {
	store *events.Store
	to    uint64
}

func (s *logSource) aggregate(ctx context.Context, stream string, ref aggRef, upTo uint64) ([]chainItem, error) {
	to := s.to
	if upTo > 0 {
		to = min(to, upTo)
	}
	var out []chainItem
	err := s.store.Scan(ctx, stream, events.ScanRange{Filter: ref.read, To: to}, func(m events.Message) error {
		if m.Bad != nil && !errors.Is(m.Bad, events.ErrBlob) {
			return nil
		}
		out = append(out, itemOf(m.Recorded, 0, m.Bad == nil))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read back %s: %w", ref.read, err)
	}
	return out, nil
}

// ValidStream returns the stream name s stands for: a stream name
// (TRELLIS_QUEUE) or its domain (queue).
func ValidStream(field, s string) (string, error) {
	var names []string
	for _, spec := range events.Streams() {
		if s == spec.Name || s == spec.Domain {
			return spec.Name, nil
		}
		names = append(names, spec.Name)
	}
	return "", trellis.FieldError(field, "unknown stream %q; one of %s (or the domain alone: queue, vine, chunks, memory, tasks)", s, strings.Join(names, ", "))
}
