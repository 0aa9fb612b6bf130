package audit

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/command"
	"github.com/trellis/trellis/events"
)

// ExportFormat is the version of the audit export format.
const ExportFormat = 1

// An audit export is JSON Lines: a header, then in stream order one line
// per event (or per range of deleted sequences, or per message that is not
// an event), then a trailer that counts the lines and carries the SHA-256
// of every byte before it. Each event line holds the envelope with its
// payload inline and the event's hash, so the export is checked offline
// (VerifyFile): the lines' hashes, every aggregate's chain within the
// export, the sequences' continuity, and the trailer.

// ExportHeader is the first line of an export.
type ExportHeader struct {
	Format  int            `json:"trellis_audit_export"`
	Created time.Time      `json:"created"`
	Since   *time.Time     `json:"since,omitempty"`
	Until   *time.Time     `json:"until,omitempty"`
	Streams []ExportStream `json:"streams"`
}

// ExportStream is the range of one stream an export holds.
type ExportStream struct {
	Stream string `json:"stream"`
	// From and To are the first and last sequence in the export's window
	// (To < From: none).
	From uint64 `json:"from"`
	To   uint64 `json:"to"`
	// FirstSeq is the stream's first sequence when exported (above 1: the
	// messages before it were purged or expired).
	FirstSeq uint64 `json:"first_seq"`
}

// ExportLine is an event line (Event set), a deleted range (Gap set) or a
// message that is not an event (Bad set).
type ExportLine struct {
	Stream  string     `json:"stream"`
	Seq     uint64     `json:"seq,omitempty"`
	Subject string     `json:"subject,omitempty"`
	Stored  *time.Time `json:"stored,omitempty"`
	Hash    string     `json:"hash,omitempty"`
	// MsgID is the message's Nats-Msg-Id ("" when it had none: see
	// FindingForeign).
	MsgID string `json:"msg_id,omitempty"`
	// Scheduler, BatchID and BatchSeq are the message's Nats-Scheduler,
	// Nats-Batch-Id and Nats-Batch-Sequence headers (a timer's message,
	// an atomic batch): verify accounts for fired timers with them.
	Scheduler string           `json:"scheduler,omitempty"`
	BatchID   string           `json:"batch_id,omitempty"`
	BatchSeq  uint64           `json:"batch_seq,omitempty"`
	Event     *events.Envelope `json:"event,omitempty"`
	Gap       *[2]uint64       `json:"gap,omitempty"`
	Bad       string           `json:"bad,omitempty"`
	// Omitted, in a prune's archive (see retention/), is a range of
	// sequences the archive leaves out on purpose: they stay in the live
	// log, or an earlier archive holds them. Neither a removal nor an
	// event: the live log's verify accounts for every removed sequence.
	Omitted *[2]uint64 `json:"omitted,omitempty"`
}

// ExportTrailer is the last line of an export.
type ExportTrailer struct {
	Trailer struct {
		// Lines counts the lines before the trailer (the header included).
		Lines int `json:"lines"`
		// Events counts the event lines.
		Events int `json:"events"`
		// Digest is "sha256-" + the hex SHA-256 of every byte before the
		// trailer line.
		Digest string `json:"digest"`
		// MAC is the hex HMAC-SHA256 of the digest under the anchor key
		// of the server's data directory, when the export could read it:
		// verify --file --anchor-key then detects a trailer recomputed
		// after lines were changed or dropped.
		MAC string `json:"mac,omitempty"`
	} `json:"trailer"`
}

// ExportResult reports an export.
type ExportResult struct {
	// Keyed is true when the trailer carries a MAC under the anchor key.
	Keyed   bool           `json:"keyed"`
	Events  int            `json:"events"`
	Lines   int            `json:"lines"`
	Digest  string         `json:"digest"`
	Bytes   int64          `json:"bytes"`
	Streams []ExportStream `json:"streams"`
}

// ExportOptions bounds an export (zero times: unbounded).
type ExportOptions struct {
	Since, Until time.Time
	// Key, when set, is the anchor key: the trailer carries the digest's
	// MAC under it.
	Key []byte
}

// Export writes the events every domain stream stored within
// [opts.Since, opts.Until] to w as an audit export. It streams: memory
// holds one scan batch, whatever the size of the log.
func Export(ctx context.Context, store *events.Store, opts ExportOptions, w io.Writer) (*ExportResult, error) {
	if !opts.Since.IsZero() && !opts.Until.IsZero() && opts.Until.Before(opts.Since) {
		return nil, trellis.FieldError("until", "%s is before since %s", opts.Until.Format(time.RFC3339Nano), opts.Since.Format(time.RFC3339Nano))
	}
	hdr := ExportHeader{Format: ExportFormat, Created: time.Now().UTC()}
	if !opts.Since.IsZero() {
		t := opts.Since.UTC()
		hdr.Since = &t
	}
	if !opts.Until.IsZero() {
		t := opts.Until.UTC()
		hdr.Until = &t
	}
	for _, spec := range events.Streams() {
		r, err := exportRange(ctx, store, spec.Name, opts)
		if err != nil {
			return nil, command.StoreError("export "+spec.Name, err)
		}
		hdr.Streams = append(hdr.Streams, r)
	}
	ew := newExportWriter(w)
	if err := ew.line(hdr); err != nil {
		return nil, err
	}
	res := &ExportResult{Streams: hdr.Streams}
	for _, r := range hdr.Streams {
		if r.To < r.From {
			continue
		}
		gap := func(from, to uint64) error {
			return ew.line(ExportLine{Stream: r.Stream, Gap: &[2]uint64{from, to}})
		}
		err := walkWindow(ctx, store, r.Stream, r.From, r.To, func(m events.Message) error {
			stored := m.Stored.UTC()
			l := ExportLine{Stream: r.Stream, Seq: m.Seq, Subject: m.Subject, Stored: &stored, MsgID: m.MsgID,
				Scheduler: m.Scheduler, BatchID: m.BatchID, BatchSeq: m.BatchSeq}
			if m.Bad != nil {
				l.Bad = m.Bad.Error()
				if m.ID != "" {
					env := m.Envelope
					l.Event = &env
				}
			} else {
				env := m.Envelope
				env.PayloadRef = nil // the payload is inline: the export stands alone
				l.Event, l.Hash = &env, events.Hash(env)
				res.Events++
			}
			return ew.line(l)
		}, gap)
		if err != nil {
			return nil, command.StoreError("export "+r.Stream, err)
		}
	}
	var tr ExportTrailer
	tr.Trailer.Lines, tr.Trailer.Events, tr.Trailer.Digest = ew.lines, res.Events, ew.digest()
	res.Lines, res.Digest = ew.lines, tr.Trailer.Digest
	if opts.Key != nil {
		tr.Trailer.MAC = exportMAC(opts.Key, tr.Trailer.Digest)
		res.Keyed = true
	}
	if err := ew.line(tr); err != nil {
		return nil, err
	}
	if err := ew.bw.Flush(); err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	res.Bytes = ew.n
	return res, nil
}

// exportRange is the window of one stream.
func exportRange(ctx context.Context, store *events.Store, stream string, opts ExportOptions) (ExportStream, error) {
	info, err := store.StreamInfo(ctx, stream)
	if err != nil {
		return ExportStream{}, err
	}
	r := ExportStream{Stream: stream, From: max(info.State.FirstSeq, 1), To: info.State.LastSeq, FirstSeq: info.State.FirstSeq}
	from, err := firstSeqSince(ctx, store, stream, opts.Since)
	if err != nil {
		return r, err
	}
	r.From = max(r.From, from)
	if !opts.Until.IsZero() {
		cut, err := store.SeqAtTime(ctx, stream, opts.Until)
		if err != nil {
			return r, err
		}
		r.To = min(r.To, cut)
	}
	return r, nil
}

// exportWriter writes lines and hashes every byte.
type exportWriter struct {
	bw    *bufio.Writer
	h     hash.Hash
	lines int
	n     int64
}

func newExportWriter(w io.Writer) *exportWriter {
	return &exportWriter{bw: bufio.NewWriterSize(w, 64<<10), h: sha256.New()}
}

func (e *exportWriter) line(v any) error {
	data, err := marshalLine(v)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	e.h.Write(data)
	e.lines++
	e.n += int64(len(data))
	if _, err := e.bw.Write(data); err != nil {
		return fmt.Errorf("export: write: %w", err)
	}
	return nil
}

func (e *exportWriter) digest() string { return "sha256-" + hex.EncodeToString(e.h.Sum(nil)) }

// marshalLine is v as one JSON line (HTML characters not escaped).
func marshalLine(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// maxExportLine bounds one line of an export read back (an event's payload
// may be up to 64 MiB, base64 inflates nothing here: payloads are JSON).
const maxExportLine = 80 << 20

// VerifyFile checks an audit export offline (no server): the header, each
// line against its hash, every aggregate's chain within the export, the
// sequences' continuity per stream (a missing line is a removal, a
// declared gap a removal in the log before the export), and the trailer
// (missing: truncated; its counts and digest). Findings carry the line and
// the log position. Memory holds at most VerifyCacheSize aggregates' last
// events (the rest in a temporary file) and one line; a broken link reads
// the file again for that aggregate's events.
func VerifyFile(ctx context.Context, path string, onFinding func(Finding) error) (*VerifyReport, error) {
	return VerifyFileWith(ctx, path, VerifyFileOptions{}, onFinding)
}

// VerifyFileOptions adds checks to VerifyFileWith.
type VerifyFileOptions struct {
	// Key is the anchor key of the data directory the export came from:
	// the trailer must carry the digest's MAC under it.
	Key []byte
	// Witness is an auditor's heads (verify --witness): every head within
	// the export's range must be in it, with its hash, and an export
	// without --until must reach it.
	Witness *Anchor
}

// VerifyFileWith is VerifyFile with the anchor key and a witness.
func VerifyFileWith(ctx context.Context, path string, opts VerifyFileOptions, onFinding func(Finding) error) (*VerifyReport, error) {
	start := time.Now()
	f, err := os.Open(path)
	if err != nil {
		return nil, trellis.FieldError("file", "%v", err)
	}
	defer f.Close()
	rep := &VerifyReport{OK: true, Streams: []StreamVerification{}}
	emit := func(fd Finding) error {
		rep.OK = false
		rep.Findings++
		for i := range rep.Streams {
			if rep.Streams[i].Stream == fd.Stream {
				rep.Streams[i].Findings++
			}
		}
		return onFinding(fd)
	}
	br := bufio.NewReaderSize(f, 64<<10)
	h := sha256.New()
	lineNo := 0
	readLine := func() ([]byte, error) {
		data, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			full := append([]byte(nil), data...)
			for errors.Is(err, bufio.ErrBufferFull) {
				if len(full) > maxExportLine {
					return nil, fmt.Errorf("line %d is longer than %d bytes", lineNo+1, maxExportLine)
				}
				data, err = br.ReadSlice('\n')
				full = append(full, data...)
			}
			data = full
		}
		if len(data) == 0 && err != nil {
			return nil, err
		}
		lineNo++
		return data, nil
	}

	first, err := readLine()
	var hdr ExportHeader
	if err != nil || json.Unmarshal(first, &hdr) != nil || hdr.Format == 0 {
		if errors.Is(err, io.EOF) || len(first) == 0 {
			return nil, trellis.FieldError("file", "%s is empty: not an audit export", path)
		}
		marker := []byte(`{"trellis_audit_export"`)
		if bytes.HasPrefix(first, marker) || (len(first) >= 3 && bytes.HasPrefix(marker, first)) {
			// The header itself was cut short.
			if err := emit(Finding{Kind: FindingTruncated, Line: 1, Detail: "the export ends inside its header: it was cut short"}); err != nil {
				return nil, err
			}
			rep.Millis = time.Since(start).Milliseconds()
			return rep, nil
		}
		return nil, trellis.FieldError("file", "%s is not an audit export: its first line is not an export header", path)
	}
	if hdr.Format != ExportFormat {
		return nil, trellis.FieldError("file", "%s is export format %d; this trellis reads format %d", path, hdr.Format, ExportFormat)
	}
	h.Write(first)
	type streamState struct {
		sv     *StreamVerification
		check  *chainCheck
		timers *timerLedger
		whole  bool
		expect uint64
		to     uint64
	}
	states := map[string]*streamState{}
	src := &fileSource{path: path}
	for _, r := range hdr.Streams {
		rep.Streams = append(rep.Streams, StreamVerification{Stream: r.Stream, FirstSeq: r.FirstSeq, LastSeq: r.To, From: r.From})
	}
	for i, r := range hdr.Streams {
		whole := r.From <= 1 && r.FirstSeq <= 1
		heads := newHeadStore(VerifyCacheSize)
		defer heads.close()
		states[r.Stream] = &streamState{sv: &rep.Streams[i], check: newChainCheck(src, heads, true, !whole), timers: newTimerLedger(), whole: whole, expect: r.From, to: r.To}
	}
	nEvents := 0
	var trailer *ExportTrailer
	witnessed := map[string]AnchorHead{} // stream -> head to find
	found := map[string]string{}         // stream -> hash found at the head's seq
	if opts.Witness != nil {
		rep.AnchorsChecked++
		if opts.Witness.Digest != HeadsDigest(opts.Witness.Heads) {
			if err := emit(Finding{Kind: FindingAltered, Detail: "the witness does not match its digest: it was altered"}); err != nil {
				return nil, err
			}
		}
		for _, hd := range opts.Witness.Heads {
			witnessed[hd.Stream] = hd
		}
	}
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		data, err := readLine()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, trellis.FieldError("file", "%s: %v", path, err)
		}
		if trailer != nil {
			if err := emit(Finding{Kind: FindingTruncated, Line: lineNo, Detail: "a line after the trailer: the export was appended to"}); err != nil {
				return nil, err
			}
			break
		}
		if bytes.HasPrefix(data, []byte(`{"trailer"`)) {
			var tr ExportTrailer
			if json.Unmarshal(data, &tr) == nil {
				trailer = &tr
				rep.Digest = "sha256-" + hex.EncodeToString(h.Sum(nil))
				var problems []string
				if tr.Trailer.Lines != lineNo-1 {
					problems = append(problems, fmt.Sprintf("it counts %d lines before it, the file has %d", tr.Trailer.Lines, lineNo-1))
				}
				if tr.Trailer.Events != nEvents {
					problems = append(problems, fmt.Sprintf("it counts %d events, the file has %d", tr.Trailer.Events, nEvents))
				}
				if tr.Trailer.Digest != rep.Digest {
					problems = append(problems, "its digest does not match the lines before it")
				}
				if opts.Key != nil {
					rep.Keyed = true
					switch {
					case tr.Trailer.MAC == "":
						problems = append(problems, "it carries no MAC under the anchor key: it was written without the key, or recomputed after the export was changed")
					case !hmac.Equal([]byte(tr.Trailer.MAC), []byte(exportMAC(opts.Key, rep.Digest))):
						problems = append(problems, "its MAC does not match the lines before it under the anchor key: the export was changed and its trailer recomputed")
					}
				}
				for _, p := range problems {
					if err := emit(Finding{Kind: FindingAltered, Line: lineNo, Detail: "trailer: " + p}); err != nil {
						return nil, err
					}
				}
				continue
			}
		}
		h.Write(data)
		var l ExportLine
		if err := json.Unmarshal(data, &l); err != nil {
			kind := FindingAltered
			if !bytes.HasSuffix(data, []byte("\n")) {
				kind = FindingTruncated // a last line cut short
			}
			if err := emit(Finding{Kind: kind, Line: lineNo, Detail: "the line is not JSON: " + err.Error()}); err != nil {
				return nil, err
			}
			continue
		}
		st := states[l.Stream]
		if st == nil {
			if err := emit(Finding{Kind: FindingAltered, Line: lineNo, Stream: l.Stream, Seq: l.Seq, Detail: "the line names a stream the header does not list"}); err != nil {
				return nil, err
			}
			continue
		}
		at := l.Seq
		if l.Gap != nil {
			at = l.Gap[0]
		}
		if l.Omitted != nil {
			at = l.Omitted[0]
		}
		switch {
		case at < st.expect:
			if err := emit(Finding{Kind: FindingReordered, Line: lineNo, Stream: l.Stream, Seq: at, Detail: fmt.Sprintf("out of order: the export is past #%d here", st.expect-1)}); err != nil {
				return nil, err
			}
		case at > st.expect:
			for _, g := range st.timers.gap(st.expect, at-1) {
				st.check.gap(g[0], g[1])
				if err := emit(Finding{Kind: FindingRemoved, Line: lineNo, Stream: l.Stream, Seq: g[0], ToSeq: g[1],
					Detail: fmt.Sprintf("%d event line(s) missing from the export before this line", g[1]-g[0]+1)}); err != nil {
					return nil, err
				}
			}
		}
		if l.Omitted != nil {
			st.expect = max(st.expect, l.Omitted[1]+1)
			st.check.omit(l.Omitted[0], l.Omitted[1])
			continue
		}
		if l.Gap != nil {
			st.expect = max(st.expect, l.Gap[1]+1)
			for _, g := range st.timers.gap(l.Gap[0], l.Gap[1]) {
				st.check.gap(g[0], g[1])
				if err := emit(Finding{Kind: FindingRemoved, Line: lineNo, Stream: l.Stream, Seq: g[0], ToSeq: g[1],
					Detail: fmt.Sprintf("%d message(s) were deleted from the stream before the export", g[1]-g[0]+1)}); err != nil {
					return nil, err
				}
			}
			continue
		}
		st.expect = max(st.expect, l.Seq+1)
		if l.Event != nil && l.Bad != "" {
			if err := emit(Finding{Kind: FindingAltered, Line: lineNo, Stream: l.Stream, Seq: l.Seq, Subject: l.Subject, EventID: l.Event.ID,
				Detail: "the event could not be read whole when exported: " + l.Bad}); err != nil {
				return nil, err
			}
			continue
		}
		if l.Event == nil || l.Bad != "" {
			if err := emit(Finding{Kind: FindingMalformed, Line: lineNo, Stream: l.Stream, Seq: l.Seq, Subject: l.Subject, Detail: "not a Trellis event in the log: " + l.Bad}); err != nil {
				return nil, err
			}
			continue
		}
		nEvents++
		if hd, ok := witnessed[l.Stream]; ok && hd.Seq == l.Seq {
			found[l.Stream] = l.Hash
		}
		rec := events.Recorded{Envelope: *l.Event, Stream: l.Stream, Subject: l.Subject, Seq: l.Seq}
		m := meta{MsgID: l.MsgID, Scheduler: l.Scheduler, BatchID: l.BatchID, BatchSeq: l.BatchSeq}
		if l.Stored != nil {
			m.Stored = *l.Stored
		}
		if ref, ok := aggregateOf(l.Subject); ok || isTimerSubject(l.Subject) {
			if h := events.Hash(rec.Envelope); h != l.Hash {
				if err := emit(Finding{Kind: FindingAltered, Line: lineNo, Stream: l.Stream, Seq: l.Seq, Subject: l.Subject, Aggregate: ref.name, EventID: l.Event.ID,
					Detail: fmt.Sprintf("the event does not match the hash on its line (%s, recomputed %s)", short(l.Hash), short(h))}); err != nil {
					return nil, err
				}
			}
		}
		fs, err := checkStored(ctx, st.check, st.timers, rec, m, nil, lineNo, st.whole)
		if err != nil {
			return nil, err
		}
		for _, fd := range fs {
			if err := emit(fd); err != nil {
				return nil, err
			}
		}
	}
	for _, r := range hdr.Streams {
		st := states[r.Stream]
		for _, g := range st.timers.unexplained() {
			st.check.gap(g[0], g[1])
			if err := emit(Finding{Kind: FindingRemoved, Stream: r.Stream, Seq: g[0], ToSeq: g[1],
				Detail: fmt.Sprintf("%d message(s) were deleted from the stream (no timer's message accounts for them)", g[1]-g[0]+1)}); err != nil {
				return nil, err
			}
		}
		st.sv.TimersFired = st.timers.fired
		hd, ok := witnessed[r.Stream]
		if !ok || hd.Seq == 0 {
			continue
		}
		var f Finding
		switch h, seen := found[r.Stream]; {
		case seen && h != hd.Hash:
			f = Finding{Kind: FindingAltered, Stream: r.Stream, Seq: hd.Seq, Detail: fmt.Sprintf("the witness names #%d (hash %s) as the stream's last event; the export holds another event there", hd.Seq, short(hd.Hash))}
		case seen:
		case hd.Seq >= r.From && hd.Seq <= r.To, hdr.Until == nil && r.To < hd.Seq:
			f = Finding{Kind: FindingRemoved, Stream: r.Stream, Seq: hd.Seq, Detail: fmt.Sprintf("the witness names #%d (hash %s) as the stream's last event; the export does not hold it", hd.Seq, short(hd.Hash))}
		}
		if f.Detail != "" {
			if err := emit(f); err != nil {
				return nil, err
			}
		}
	}
	if trailer == nil {
		if err := emit(Finding{Kind: FindingTruncated, Line: lineNo, Detail: fmt.Sprintf("the export ends at line %d without its trailer: it was cut short", lineNo)}); err != nil {
			return nil, err
		}
	}
	for _, r := range hdr.Streams {
		st := states[r.Stream]
		if st.expect <= st.to {
			if err := emit(Finding{Kind: FindingTruncated, Stream: r.Stream, Seq: st.expect, ToSeq: st.to,
				Detail: fmt.Sprintf("the header promises %s up to #%d; the export stops before #%d", r.Stream, st.to, st.expect)}); err != nil {
				return nil, err
			}
		}
		st.sv.ChainStats = st.check.stats
	}
	rep.Millis = time.Since(start).Milliseconds()
	return rep, nil
}

// fileSource reads an aggregate back from an export file.
type fileSource struct{ path string }

func (s *fileSource) aggregate(ctx context.Context, stream string, ref aggRef, _ uint64) ([]chainItem, error) {
	f, err := os.Open(s.path)
	if err != nil {
		return nil, fmt.Errorf("read back %s: %w", ref.key, err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	var out []chainItem
	for line := 1; ; line++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		data, err := br.ReadBytes('\n')
		if len(data) == 0 && err != nil {
			break
		}
		if line == 1 || !bytes.Contains(data, []byte(`"event"`)) {
			continue
		}
		var l ExportLine
		if json.Unmarshal(data, &l) != nil || l.Event == nil || l.Stream != stream || l.Bad != "" {
			continue
		}
		if r, ok := aggregateOf(l.Subject); !ok || r.key != ref.key {
			continue
		}
		it := itemOf(events.Recorded{Envelope: *l.Event, Stream: l.Stream, Subject: l.Subject, Seq: l.Seq}, line, true)
		it.Scheduled = l.Scheduler != "" && l.Event.Prev == ""
		out = append(out, it)
	}
	return out, nil
}
