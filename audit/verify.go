package audit

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
	// Anchors are the server's keyed anchors (ReadAnchors): the log must
	// still hold the heads each recorded (the last MaxAnchorsChecked are
	// checked). AnchorKey checks their MAC; without it, an anchor is
	// checked against its digest only.
	Anchors   []Anchor
	AnchorKey []byte
	// Witness, when set, is an auditor's earlier heads (verify --witness):
	// the log must still hold them.
	Witness *Anchor
	// Projections, when set, are a running server's projections'
	// positions, read before the walk (trellis.ProjectionStatus): each
	// stream must still hold what they applied (see checkProjections).
	Projections []trellis.ProjectionPosition
}

// MaxAnchorsChecked is how many of the newest anchors verify checks.
const MaxAnchorsChecked = 16

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
	// Missing: the stream does not exist.
	Missing bool `json:"missing,omitempty"`
	// Created is when JetStream created the stream.
	Created time.Time `json:"created,omitzero"`
	// LastHash is the hash of the stream's last event (with LastSeq, its
	// head: what an anchor or a witness records).
	LastHash string `json:"last_hash,omitempty"`
	ChainStats
	// Findings is how many findings this stream gave.
	Findings int `json:"findings"`
	// Pruned is how many sequences prune records account for (removed
	// by trellis prune into an archive; see docs/retention.md).
	Pruned uint64 `json:"pruned,omitempty"`
}

// readPruned reads every prune record (the retention log, on the queue
// stream) and returns, per stream, the sequences they account for: the
// events each removed, their fired timers, and the tombstones appended
// with it. The records are events of the log like any other: the walk
// checks their chain, ids and times.
//
// Given the audit key, only records that carry a valid MAC under it are
// trusted (a record appended with NATS credentials alone is not, and the
// sequences it claims stay removals); without a key every record is, as
// verify without a key trusts unkeyed anchors. Only records of the
// streams prunes remove from (events.PrunedStream: the queue's, the
// workflow runs', the agent tasks') are: a record naming another stream
// excuses nothing there. A record on the queue
// stream accounts for sequences stored before it and for at most one
// tombstone per aggregate it names; a record of another stream (workflow
// runs, agent tasks: their tombstones are stored on their own stream,
// before the record, and named in Removed) for the sequences it names.
func readPruned(ctx context.Context, store *events.Store, key []byte) (map[string]*events.SeqRanges, error) {
	out := map[string]*events.SeqRanges{}
	recs, _, err := store.Load(ctx, events.StreamQueue, events.RetentionFilter)
	if errors.Is(err, events.ErrNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	for _, r := range recs {
		var p events.PrunedPayload
		if r.Type != events.PrunedType || r.DecodePayload(&p) != nil || !events.PrunedStream(p.Stream) || r.Stream != events.StreamQueue {
			continue // the walk reports a record that does not decode
		}
		if len(key) > 0 && !p.Signed(key) {
			continue // not made by a prune holding the server's key
		}
		s := out[p.Stream]
		if s == nil {
			s = &events.SeqRanges{}
			out[p.Stream] = s
		}
		for _, g := range p.Removed {
			if p.Stream == r.Stream {
				g[1] = min(g[1], r.Seq-1) // a prune removes what was stored before its record
			}
			s.Add(g[0], g[1])
		}
		if p.Stream == r.Stream {
			s.Add(r.Seq+1, r.Seq+uint64(min(max(p.Tombstones, 0), len(p.Aggregates))))
		}
	}
	return out, nil
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
	// Heads are the log's heads when the walk began (Verify): keep
	// HeadsDigest, or the heads (verify --witness), to check later that
	// no event up to them went missing.
	Heads       []AnchorHead `json:"heads,omitempty"`
	HeadsDigest string       `json:"heads_digest,omitempty"`
	// AnchorsChecked counts the anchors (and witness) compared with the
	// log; Keyed is true when an export's trailer MAC was checked.
	AnchorsChecked int   `json:"anchors_checked"`
	Keyed          bool  `json:"keyed,omitempty"`
	Millis         int64 `json:"millis"`
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
		if sv != nil {
			sv.Findings++
		}
		return onFinding(f)
	}
	heads, err := ReadHeads(ctx, store)
	if err != nil {
		return nil, command.StoreError("verify", err)
	}
	rep.Heads, rep.HeadsDigest = heads.Heads, heads.Digest
	// The anchored aggregate heads are looked up as the walk passes their
	// sequences; only those it does not meet are read again after it.
	var aggregates []anchoredAggregate
	anchors := opts.Anchors[max(0, len(opts.Anchors)-MaxAnchorsChecked):]
	for _, a := range anchors {
		if anchorIntact(a, opts.AnchorKey) {
			for _, hd := range a.Aggregates {
				aggregates = append(aggregates, anchoredAggregate{head: hd, at: a.Time, what: "the anchor"})
			}
		}
	}
	anchoredHeads := newHeadsToFind(newestAggregateHeads(aggregates))
	pruned, err := readPruned(ctx, store, opts.AnchorKey)
	if err != nil {
		return nil, command.StoreError("verify: read the prune records", err)
	}
	continued, err := readContinued(ctx, store, opts.AnchorKey)
	if err != nil {
		return nil, command.StoreError("verify: read the prune records", err)
	}
	for _, name := range streams {
		sv, err := verifyStream(ctx, store, name, opts, anchoredHeads, pruned[name], continued[name], emit)
		if err != nil {
			return nil, command.StoreError("verify "+name, err)
		}
		rep.Streams = append(rep.Streams, *sv)
	}
	check := func(a Anchor, key []byte, what string) error {
		rep.AnchorsChecked++
		fs, err := checkAnchor(ctx, store, a, key, what, pruned)
		if err != nil {
			return command.StoreError("verify anchors", err)
		}
		for _, f := range fs {
			if err := emit(nil, f); err != nil {
				return err
			}
		}
		return nil
	}
	for _, a := range anchors {
		if err := check(a, opts.AnchorKey, "the anchor"); err != nil {
			return nil, err
		}
	}
	fs, err := checkAggregateHeads(ctx, store, anchoredHeads.left(), pruned)
	if err != nil {
		return nil, command.StoreError("verify anchors", err)
	}
	for _, f := range fs {
		if err := emit(nil, f); err != nil {
			return nil, err
		}
	}
	if opts.Witness != nil {
		if err := check(*opts.Witness, nil, "the witness"); err != nil {
			return nil, err
		}
	}
	rep.Millis = time.Since(start).Milliseconds()
	return rep, nil
}

func verifyStream(ctx context.Context, store *events.Store, stream string, opts VerifyOptions, anchored *headsToFind, pruned *events.SeqRanges, continued map[uint64]events.Continuation, emit func(*StreamVerification, Finding) error) (*StreamVerification, error) {
	if pruned == nil {
		pruned = &events.SeqRanges{}
	}
	info, err := store.StreamInfo(ctx, stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		// Trellis creates every stream at start and never deletes one.
		sv := &StreamVerification{Stream: stream, Missing: true}
		if err := emit(sv, Finding{Kind: FindingRemoved, Stream: stream,
			Detail: "the stream does not exist: Trellis creates it at start and never deletes it, so it was deleted (with every event it held)"}); err != nil {
			return nil, err
		}
		return sv, checkProjections(ctx, store, stream, nil, opts.Projections, func(f Finding) error { return emit(sv, f) })
	}
	if err != nil {
		return nil, err
	}
	st := info.State
	sv := &StreamVerification{Stream: stream, FirstSeq: st.FirstSeq, LastSeq: st.LastSeq, Deleted: uint64(st.NumDeleted),
		Limits: limitsOf(info.Config), Created: info.Created.UTC()}
	if st.LastSeq > 0 {
		if rec, err := store.Get(ctx, stream, st.LastSeq); err == nil {
			sv.LastHash = events.Hash(rec.Envelope)
		}
	}
	if err := checkProjections(ctx, store, stream, info, opts.Projections, func(f Finding) error { return emit(sv, f) }); err != nil {
		return nil, err
	}
	from, err := firstSeqSince(ctx, store, stream, opts.Since)
	if err != nil {
		return nil, err
	}
	sv.From = from
	whole := from == 1
	headGone := st.LastSeq > 0 && st.FirstSeq > 1
	// A head a prune removed (every sequence before the first one
	// accounted for by a prune record) is not gone: the walk checks its
	// sequences against the records like any other deleted range.
	headPruned := headGone && pruned.Covers(1, st.FirstSeq-1)
	if headPruned {
		headGone = false
	}
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
	check.continued = continued
	snapshots := newSnapshotCheck(store, stream, continued)
	timers := newTimerLedger()
	gaps := func(from, to uint64) error {
		// Sequences a prune record accounts for were pruned, not removed.
		for _, r := range pruned.Minus(from, to) {
			for _, g := range timers.gap(r[0], r[1]) {
				check.gap(g[0], g[1])
				if err := emit(sv, gapFinding(stream, g[0], g[1])); err != nil {
					return err
				}
			}
		}
		return nil
	}
	start := max(from, st.FirstSeq)
	if headPruned {
		start = from
	}
	err = walkWindow(ctx, store, stream, start, st.LastSeq, func(m events.Message) error {
		anchored.met(m)
		if pruned.Covers(m.Seq, m.Seq) {
			// A trusted prune record accounts for it, and its prune has
			// not finished removing it (a tombstone whose task's events
			// are already gone, say): it is pruned, in the record's
			// archive, and not checked here.
			timers.stored(m.Seq, metaOf(m))
			return nil
		}
		findings, err := checkMessage(ctx, check, timers, m, whole)
		if err != nil {
			return err
		}
		sfs, err := snapshots.check(ctx, m)
		if err != nil {
			return err
		}
		for _, f := range append(findings, sfs...) {
			if err := emit(sv, f); err != nil {
				return err
			}
		}
		return nil
	}, gaps)
	if err != nil {
		return nil, err
	}
	if len(timers.pending) > 0 {
		// A timer that fired during the walk: its message is stored after
		// the walk's end.
		err := store.Scan(ctx, stream, events.ScanRange{From: st.LastSeq + 1}, func(m events.Message) error {
			if m.Scheduler != "" {
				timers.fire(metaOf(m))
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	for _, g := range timers.unexplained() {
		check.gap(g[0], g[1])
		if err := emit(sv, gapFinding(stream, g[0], g[1])); err != nil {
			return nil, err
		}
	}
	for _, r := range pruned.Ranges() {
		if r[0] >= from && r[0] <= st.LastSeq {
			sv.Pruned += min(r[1], st.LastSeq) - r[0] + 1
		}
	}
	sv.ChainStats = check.stats
	sv.Snapshots = snapshots.checked
	sv.TimersFired = timers.fired
	return sv, nil
}

// metaOf is what verify reads of a message besides its envelope.
func metaOf(m events.Message) meta {
	return meta{MsgID: m.MsgID, Scheduler: m.Scheduler, BatchID: m.BatchID, BatchSeq: m.BatchSeq, Stored: m.Stored}
}

// checkMessage checks one message read from the log.
func checkMessage(ctx context.Context, check *chainCheck, timers *timerLedger, m events.Message, whole bool) ([]Finding, error) {
	return checkStored(ctx, check, timers, m.Recorded, metaOf(m), m.Bad, 0, whole)
}

// checkStored checks one stored message (read from the log, or an export
// line at line): what it is, its identity and times, its chain link.
// whole is true when the check began at the stream's first message (a
// timer's message then always has its timer's deleted sequence before it).
func checkStored(ctx context.Context, check *chainCheck, timers *timerLedger, rec events.Recorded, m meta, bad error, line int, whole bool) ([]Finding, error) {
	timers.stored(rec.Seq, m)
	at := func(kind, aggregate, detail string) Finding {
		return Finding{Kind: kind, Stream: rec.Stream, Seq: rec.Seq, Line: line, Subject: rec.Subject, Aggregate: aggregate, EventID: rec.ID, Detail: detail}
	}
	if isTimerSubject(rec.Subject) {
		// A timer waiting to fire: outside the chain, stored in the batch
		// that decided it, under its event's id.
		if bad != nil {
			return []Finding{at(FindingMalformed, "", "a timer that is not a Trellis event: "+bad.Error())}, nil
		}
		check.stats.Timers++
		if m.BatchID == "" || m.MsgID != rec.ID {
			return []Finding{at(FindingForeign, "", "a timer stored outside the atomic batch that decides every Trellis timer, or under another message id: published from outside Trellis")}, nil
		}
		return nil, nil
	}
	ref, ok := aggregateOf(rec.Subject)
	switch {
	case bad != nil && errors.Is(bad, events.ErrBlob) && ok:
		fs, err := check.check(ctx, itemOf(rec, line, false), ref)
		return append(fs, at(FindingAltered, ref.name, "its large payload is missing from the blob bucket or does not match its digest")), err
	case bad != nil:
		return []Finding{at(FindingMalformed, "", "not a Trellis event: "+bad.Error())}, nil
	case !ok:
		return []Finding{at(FindingMalformed, "", "no Trellis aggregate has this subject")}, nil
	}
	it := itemOf(rec, line, true)
	var fs []Finding
	if m.Scheduler != "" {
		switch {
		case !timerTarget(m.Scheduler, rec.Subject, rec.Type):
			fs = append(fs, at(FindingForeign, ref.name, fmt.Sprintf("it claims to come from timer %s, which publishes nothing on this subject", m.Scheduler)))
		case !timers.fire(m) && whole:
			fs = append(fs, at(FindingForeign, ref.name, "it claims to come from a timer, but no fired timer of its batch was stored before it: published from outside Trellis"))
		default:
			it.Scheduled = true
		}
	}
	cfs, err := check.check(ctx, it, ref)
	if err != nil {
		return nil, err
	}
	fs = append(cfs, fs...)
	return append(fs, identityFindings(rec, m, ref.name, line)...), nil
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
		it := itemOf(m.Recorded, 0, m.Bad == nil)
		it.Scheduled = m.Scheduler != "" && m.Prev == ""
		out = append(out, it)
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
