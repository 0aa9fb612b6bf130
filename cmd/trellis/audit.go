package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/audit"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/handlers"
)

// exitTampered is the exit code of `audit verify` when it found evidence
// of tampering.
const exitTampered = 9

// tamperedError is what `audit verify` returns when it found evidence.
type tamperedError struct {
	findings int
	what     string
}

func (e *tamperedError) Error() string {
	return fmt.Sprintf("tampered: %d finding(s): %s has removed, altered, reordered, duplicated or malformed events (listed above)", e.findings, e.what)
}

// ExitCode implements the exit code contract (see main.run).
func (e *tamperedError) ExitCode() int { return exitTampered }

func (a *app) auditCommand() *cobra.Command {
	var (
		asJSON, asJSONL bool
		q               trellis.AuditQuery
	)
	c := &cobra.Command{
		Use:   "audit [ID]",
		Short: "Show what happened: one aggregate's history (ID), or a queue's, a graph's or a stream's across aggregates",
		Long: "With an ID, prints every event of one aggregate in order: a queue task (ULID), a graph (g…), or GRAPH:TASK.\n" +
			"Without one, prints the events of a queue (--queue), a graph (--graph) or a whole stream (--stream), across\n" +
			"aggregates, in log order, optionally within a window of the time the log stored them (--since, --until: RFC 3339,\n" +
			"a date, or a duration ago such as 90m), by one actor (--actor) or of one type (--type). The output streams: it is\n" +
			"read a page at a time (through the running server's NATS API when one runs), whatever the size of the log.\n\n" +
			"Subcommands: `audit verify` checks the log (or an export) for tampering; `audit export` writes an export for auditors.",
		Example: `  trellis audit 01J... --json
  trellis audit --queue jobs --since 2026-01-02T09:00:00Z --until 2026-01-02T10:00:00Z
  trellis audit --queue jobs --actor agent-7 --type completed --jsonl
  trellis audit --stream memory --since 24h --json
  trellis audit verify
  trellis audit export --since 2026-01-01 --until 2026-02-01 --out january.jsonl`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if asJSON && asJSONL {
				return &usageError{fmt.Errorf("--json and --jsonl cannot be combined")}
			}
			if len(args) == 1 {
				if q.Queue != "" || q.Graph != "" || q.Stream != "" || q.Since != "" || q.Until != "" || q.Actor != "" || q.Type != "" {
					return &usageError{fmt.Errorf("audit ID shows one aggregate whole; --queue, --graph, --stream, --since, --until, --actor and --type query across aggregates, without an ID")}
				}
				return a.auditOne(cmd, args[0], asJSON, asJSONL)
			}
			if q.Queue == "" && q.Graph == "" && q.Stream == "" {
				return &usageError{fmt.Errorf("give an aggregate ID, or one of --queue, --graph or --stream (see trellis audit --help)")}
			}
			return a.auditQuery(cmd, q, asJSON, asJSONL)
		},
	}
	c.Flags().StringVar(&q.Queue, "queue", "", "the events of this queue (its tasks and controls)")
	c.Flags().StringVar(&q.Graph, "graph", "", "the events of this VINE graph (g + 20 hex)")
	c.Flags().StringVar(&q.Stream, "stream", "", "every event of this stream: TRELLIS_QUEUE, TRELLIS_VINE, TRELLIS_CHUNKS, TRELLIS_MEMORY, TRELLIS_TASKS (or queue, vine, ...)")
	c.Flags().StringVar(&q.Since, "since", "", "only events the log stored at or after this time (RFC 3339, a date, or a duration ago: 90m)")
	c.Flags().StringVar(&q.Until, "until", "", "only events the log stored at or before this time (same forms; not before --since)")
	c.Flags().StringVar(&q.Actor, "actor", "", "only events this actor caused (a worker pool's name also matches its slots: wB finds wB/0, wB/1, ...)")
	c.Flags().StringVar(&q.Type, "type", "", "only events of this type (added, claimed, completed, ...)")
	c.Flags().BoolVar(&asJSON, "json", false, "print a JSON list of events")
	c.Flags().BoolVar(&asJSONL, "jsonl", false, "print one JSON event per line")
	c.AddCommand(a.auditVerify(), a.auditExport())
	return c
}

// auditOne prints every event of one aggregate.
func (a *app) auditOne(cmd *cobra.Command, id string, asJSON, asJSONL bool) error {
	if asJSONL {
		s, err := a.openSession(cmd.Context())
		if err != nil {
			return err
		}
		defer s.close()
		recs, err := s.audit(cmd.Context(), id)
		if err != nil {
			return err
		}
		w := bufio.NewWriter(a.stdout)
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		for _, ev := range auditEvents(recs) {
			if err := enc.Encode(ev); err != nil {
				return err
			}
		}
		return w.Flush()
	}
	return a.call(cmd, asJSON, func(ctx context.Context, s *session) (any, error) {
		recs, err := s.audit(ctx, id)
		if err != nil || !asJSON {
			return recs, err
		}
		return auditEvents(recs), nil
	}, func(v any) {
		for _, r := range v.([]events.Recorded) {
			actor := r.Actor
			if actor == "" {
				actor = "-"
			}
			fmt.Fprintf(a.stdout, "%s  #%-6d %-10s %-16s %s\n", r.Time.Format(time.RFC3339Nano), r.Seq, r.Type, actor, string(r.Payload))
		}
	})
}

// auditQuery streams the events of a query across aggregates.
func (a *app) auditQuery(cmd *cobra.Command, q trellis.AuditQuery, asJSON, asJSONL bool) error {
	now := time.Now()
	for _, f := range []struct {
		name string
		v    *string
	}{{"since", &q.Since}, {"until", &q.Until}} {
		t, err := trellis.ParseTimeArg(f.name, *f.v, now)
		if err != nil {
			return err
		}
		if !t.IsZero() {
			*f.v = t.Format(time.RFC3339Nano) // durations count back from this machine's clock
		}
	}
	if err := q.Normalize(now); err != nil {
		return err
	}
	s, err := a.openSession(cmd.Context())
	if err != nil {
		return err
	}
	defer s.close()
	w := bufio.NewWriter(a.stdout)
	defer w.Flush()
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	// --json writes each event as --jsonl does (no HTML escaping), then
	// joins them into one array.
	var one bytes.Buffer
	oneEnc := json.NewEncoder(&one)
	oneEnc.SetEscapeHTML(false)
	n := 0
	err = audit.All(cmd.Context(), s.auditor, q, func(ev trellis.AuditEvent) error {
		n++
		switch {
		case asJSONL:
			return enc.Encode(ev)
		case asJSON:
			sep := ",\n  "
			if n == 1 {
				sep = "[\n  "
			}
			one.Reset()
			if err := oneEnc.Encode(ev); err != nil {
				return err
			}
			_, err := fmt.Fprintf(w, "%s%s", sep, bytes.TrimRight(one.Bytes(), "\n"))
			return err
		}
		actor := ev.Actor
		if actor == "" {
			actor = "-"
		}
		payload := string(ev.Payload)
		if ev.PayloadOmitted {
			payload = fmt.Sprintf("(%d-byte payload: trellis audit %s shows it)", ev.PayloadBytes, ev.AggregateID)
		} else if len(payload) > 160 {
			payload = strings.ToValidUTF8(payload[:157], "") + "..."
		}
		_, err := fmt.Fprintf(w, "%s  %-14s #%-6d %-14s %-16s %-26s %s\n", ev.Stored.Format(time.RFC3339Nano), ev.Stream, ev.Seq, ev.Type, actor, ev.AggregateID, payload)
		return err
	})
	if asJSON {
		if n == 0 {
			fmt.Fprint(w, "[")
		}
		fmt.Fprint(w, "\n]\n")
	}
	if err != nil {
		_ = w.Flush()
		return err
	}
	if !asJSON && !asJSONL && n == 0 {
		fmt.Fprintln(w, "no events")
	}
	return nil
}

// auditEvent is one event as `audit ID --json` prints it: every field is
// always present (actor is "" when no one acted, as for an add).
type auditEvent struct {
	ID            string          `json:"id"`
	Type          string          `json:"type"`
	AggregateID   string          `json:"aggregate_id"`
	Time          time.Time       `json:"time"`
	Actor         string          `json:"actor"`
	CausationID   string          `json:"causation_id,omitempty"`
	CorrelationID string          `json:"correlation_id,omitempty"`
	Schema        int             `json:"schema"`
	Payload       json.RawMessage `json:"payload"`
	Stream        string          `json:"stream"`
	Subject       string          `json:"subject"`
	Seq           uint64          `json:"seq"`
	Prev          string          `json:"prev"`
	Hash          string          `json:"hash"`
}

func auditEvents(recs []events.Recorded) []auditEvent {
	out := make([]auditEvent, 0, len(recs))
	for _, r := range recs {
		payload := r.Payload
		if len(payload) == 0 {
			payload = json.RawMessage("null")
		}
		out = append(out, auditEvent{ID: r.ID, Type: r.Type, AggregateID: r.AggregateID, Time: r.Time, Actor: r.Actor,
			CausationID: r.CausationID, CorrelationID: r.CorrelationID, Schema: r.Schema, Payload: payload,
			Stream: r.Stream, Subject: r.Subject, Seq: r.Seq, Prev: r.Prev, Hash: events.Hash(r.Envelope)})
	}
	return out
}

// maxJSONFindings bounds the findings `audit verify --json` lists.
const maxJSONFindings = 10000

// verifyOutput is what `audit verify --json` prints.
type verifyOutput struct {
	OK       bool            `json:"ok"`
	Findings []audit.Finding `json:"findings"`
	// Omitted counts the findings beyond maxJSONFindings.
	Omitted int                        `json:"omitted_findings,omitempty"`
	Streams []audit.StreamVerification `json:"streams"`
	Digest  string                     `json:"digest,omitempty"`
	// HeadsDigest is the digest of the log's heads (live verify).
	HeadsDigest    string `json:"heads_digest,omitempty"`
	AnchorsChecked int    `json:"anchors_checked"`
	Keyed          bool   `json:"keyed,omitempty"`
	Millis         int64  `json:"millis"`
}

// anchorKey returns the anchor key: --anchor-key FILE, or the data
// directory's when it has one (nil when neither).
func (a *app) anchorKey(file string) ([]byte, error) {
	if file != "" {
		return audit.ReadAnchorKey(file)
	}
	key, err := audit.AnchorKey(a.dataDir, false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return key, err
}

func (a *app) auditVerify() *cobra.Command {
	var since, file, keyFile, witness string
	var asJSON bool
	c := &cobra.Command{
		Use:   "verify",
		Short: "Check the log (or an export, offline) for removed, altered or reordered events; exit 9 when any is found",
		Long: "Walks every Trellis stream in order and checks JetStream's own evidence (sequences deleted from a stream,\n" +
			"inside it or at its end; a stream that no longer starts at #1, or is missing) and every aggregate's hash chain\n" +
			"(each event's prev against the hash of its aggregate's previous event), each event's message id, ULID and\n" +
			"times, the heads the server's keyed anchors (and --witness FILE) recorded, and how far the server's projections\n" +
			"folded each stream (a projection showing events the stream no longer holds). Each finding is printed with its\n" +
			"position (stream, sequence, aggregate). Links without prev (events from before the chain existed) are counted\n" +
			"as unchained; timers that fired are accounted for by their batch (see docs/audit.md). With --file, checks an\n" +
			"`audit export` offline (no server): line hashes, chains, continuity and the trailer (its MAC with --anchor-key).\n" +
			"Exit 0 when nothing was found, 9 when something was, other codes for errors.",
		Example: `  trellis audit verify
  trellis audit verify --since 2026-01-02 --json
  trellis audit verify --file january.jsonl`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file != "" && since != "" {
				return &usageError{fmt.Errorf("--since applies to the live log; an export (--file) is verified whole")}
			}
			out := verifyOutput{Findings: []audit.Finding{}}
			onFinding := func(f audit.Finding) error {
				if !asJSON {
					_, err := fmt.Fprintln(a.stdout, f.String())
					return err
				}
				if len(out.Findings) < maxJSONFindings {
					out.Findings = append(out.Findings, f)
				} else {
					out.Omitted++
				}
				return nil
			}
			var rep *audit.VerifyReport
			what := "the log"
			key, err := a.anchorKey(keyFile)
			if err != nil {
				return err
			}
			var wit *audit.Anchor
			newWitness := false
			if witness != "" {
				switch w, err := audit.ReadWitness(witness); {
				case err == nil:
					wit = w
				case errors.Is(err, fs.ErrNotExist) && file == "":
					newWitness = true
				case errors.Is(err, fs.ErrNotExist):
					return trellis.FieldError("witness", "%s does not exist: write one with a live `audit verify --witness FILE`", witness)
				default:
					return trellis.FieldError("witness", "%v", err)
				}
			}
			if file != "" {
				what = file
				if rep, err = audit.VerifyFileWith(cmd.Context(), file, audit.VerifyFileOptions{Key: key, Witness: wit}, onFinding); err != nil {
					return err
				}
			} else {
				t, err := trellis.ParseTimeArg("since", since, time.Now())
				if err != nil {
					return err
				}
				s, err := a.openSession(cmd.Context())
				if err != nil {
					return err
				}
				defer s.close()
				store, err := s.log("audit verify")
				if err != nil {
					return err
				}
				anchors, err := audit.ReadAnchors(audit.AnchorsPath(a.dataDir))
				if err != nil {
					return err
				}
				// The projections' positions first: the streams' state read
				// after them can only be further along.
				positions, err := s.projections.Projections(cmd.Context())
				if err != nil {
					// A server from before the operation: verify the rest.
					fmt.Fprintf(a.stderr, "trellis: the projections were not compared with the log: %s\n", trellis.AsError(err).Message)
				}
				opts := audit.VerifyOptions{Since: t, Anchors: anchors, AnchorKey: key, Witness: wit, Projections: positions}
				if rep, err = audit.Verify(cmd.Context(), store, opts, onFinding); err != nil {
					return err
				}
				if newWitness {
					if err := audit.WriteWitness(witness, &audit.Anchor{Time: time.Now().UTC(), Heads: rep.Heads, Digest: rep.HeadsDigest}); err != nil {
						return err
					}
				}
			}
			if asJSON {
				out.OK, out.Streams, out.Digest, out.Millis = rep.OK, rep.Streams, rep.Digest, rep.Millis
				out.HeadsDigest, out.AnchorsChecked, out.Keyed = rep.HeadsDigest, rep.AnchorsChecked, rep.Keyed
				if err := printJSON(a.stdout, out); err != nil {
					return err
				}
			} else {
				printVerify(a.stdout, rep)
			}
			if !rep.OK {
				return &tamperedError{findings: rep.Findings, what: what}
			}
			return nil
		},
	}
	c.Flags().StringVar(&since, "since", "", "verify the events stored from this time on (RFC 3339, a date, or a duration ago), each still checked against its aggregate's previous event")
	c.Flags().StringVar(&file, "file", "", "verify this audit export offline instead of the log")
	c.Flags().StringVar(&keyFile, "anchor-key", "", "the anchor key (default <data>/audit/anchor.key when it exists): checks the MAC of the server's anchors and of an export's trailer")
	c.Flags().StringVar(&witness, "witness", "", "an auditor's file of the log's heads: written by the first live verify, then the log (or an export) must still hold them")
	c.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return c
}

// printVerify writes the summary of a verify for people.
func printVerify(w io.Writer, rep *audit.VerifyReport) {
	unchained := uint64(0)
	for _, s := range rep.Streams {
		if s.Missing {
			fmt.Fprintf(w, "%-15s missing\n", s.Stream)
			continue
		}
		if s.LastSeq == 0 {
			fmt.Fprintf(w, "%-15s empty\n", s.Stream)
			continue
		}
		fmt.Fprintf(w, "%-15s #%d-#%d: %d events, %d aggregates begun, %d links verified, %d unchained, %d deleted, %d findings\n",
			s.Stream, max(s.From, s.FirstSeq), s.LastSeq, s.Events, s.Aggregates, s.Chained, s.Unchained, s.Deleted, s.Findings)
		unchained += s.Unchained
	}
	if rep.Digest != "" {
		fmt.Fprintf(w, "digest %s\n", rep.Digest)
	}
	if rep.Keyed {
		fmt.Fprintln(w, "trailer MAC checked under the anchor key")
	}
	if rep.HeadsDigest != "" {
		fmt.Fprintf(w, "heads %s (keep it, or the heads with --witness FILE, to check later that none of these events went missing)\n", rep.HeadsDigest)
	}
	if rep.AnchorsChecked > 0 {
		fmt.Fprintf(w, "%d anchor(s) or witness compared with the log\n", rep.AnchorsChecked)
	}
	if rep.OK {
		fmt.Fprintf(w, "OK: no removed, altered, reordered, duplicated or malformed events (%d unchained links; see docs/audit.md)\n", unchained)
		return
	}
	fmt.Fprintf(w, "TAMPERED: %d finding(s)\n", rep.Findings)
}

func (a *app) auditExport() *cobra.Command {
	var since, until, out, keyFile string
	var asJSON bool
	c := &cobra.Command{
		Use:   "export",
		Short: "Write the events of every stream in a time window to a JSONL file with hashes, for auditors",
		Long: "Writes a header, one line per event (the envelope with its payload inline, its hash, its stream, sequence\n" +
			"and stored time), a line per range of deleted sequences, and a trailer counting the lines with the SHA-256 of\n" +
			"everything before it. `trellis audit verify --file FILE` checks it offline; keep the digest printed here apart\n" +
			"from the file. The file is written beside --out and renamed into place once whole.",
		Example: "  trellis audit export --since 2026-01-01 --until 2026-02-01 --out january.jsonl",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return trellis.FieldError("out", "is required: the file to write the export to")
			}
			now := time.Now()
			from, err := trellis.ParseTimeArg("since", since, now)
			if err != nil {
				return err
			}
			to, err := trellis.ParseTimeArg("until", until, now)
			if err != nil {
				return err
			}
			if !from.IsZero() && !to.IsZero() && to.Before(from) {
				return trellis.FieldError("until", "%s is before --since %s", to.Format(time.RFC3339Nano), from.Format(time.RFC3339Nano))
			}
			s, err := a.openSession(cmd.Context())
			if err != nil {
				return err
			}
			defer s.close()
			store, err := s.log("audit export")
			if err != nil {
				return err
			}
			key, err := a.anchorKey(keyFile)
			if err != nil {
				return err
			}
			var res *audit.ExportResult
			err = writeAtomic(out, func(w io.Writer) error {
				var err error
				res, err = audit.Export(cmd.Context(), store, audit.ExportOptions{Since: from, Until: to, Key: key}, w)
				return err
			})
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(a.stdout, struct {
					File string `json:"file"`
					*audit.ExportResult
				}{out, res})
			}
			fmt.Fprintf(a.stdout, "exported %d events (%d lines, %d bytes) to %s\ndigest %s (keep it apart from the file; audit verify --file prints it too)\n",
				res.Events, res.Lines, res.Bytes, out, res.Digest)
			return nil
		},
	}
	c.Flags().StringVar(&since, "since", "", "only events stored at or after this time (RFC 3339, a date, or a duration ago)")
	c.Flags().StringVar(&until, "until", "", "only events stored at or before this time (same forms; not before --since)")
	c.Flags().StringVar(&out, "out", "", "the file to write (required)")
	c.Flags().StringVar(&keyFile, "anchor-key", "", "the anchor key (default <data>/audit/anchor.key when it exists): the trailer carries the digest's MAC under it")
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return c
}

// writeAtomic writes a file through fn into a temporary file beside out
// and renames it over out once whole, so out is either absent, the old
// file, or complete.
func writeAtomic(out string, fn func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".*.tmp")
	if err != nil {
		return trellis.FieldError("out", "cannot write %s: %v", out, err)
	}
	defer func() { _ = os.Remove(f.Name()) }() // after the rename: nothing
	bw := bufio.NewWriterSize(f, 256<<10)
	if err := fn(bw); err != nil {
		_ = f.Close()
		return err
	}
	if err := bw.Flush(); err != nil {
		_ = f.Close()
		return trellis.FieldError("out", "cannot write %s: %v", out, err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return trellis.FieldError("out", "cannot write %s: %v", out, err)
	}
	if err := f.Close(); err != nil {
		return trellis.FieldError("out", "cannot write %s: %v", out, err)
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		return trellis.FieldError("out", "cannot write %s: %v", out, err)
	}
	if err := os.Rename(f.Name(), out); err != nil {
		return trellis.FieldError("out", "cannot write %s: %v", out, err)
	}
	return nil
}

func (a *app) replayCommand() *cobra.Command {
	var asJSON bool
	var until, out string
	// The list comes from the service itself, so it names every
	// projection replay rebuilds.
	names := strings.Join(handlers.NewService(nil, handlers.ServiceConfig{}).ProjectionNames(), ", ")
	c := &cobra.Command{
		Use:   "replay",
		Short: "Drop every projection (" + names + ") and rebuild it from the event log, or rebuild them as of a point into a directory",
		Long: "Drops every projection and rebuilds it from the event log, in this order: " + names + ".\n" +
			"With a server running, the server rebuilds its own projections.\n\n" +
			"With --until TIME|SEQ --out DIR, builds every projection as of that point of the log into DIR (new or empty)\n" +
			"and leaves the live ones alone. TIME is RFC 3339, a date, or a duration ago (the log as it stood then: every\n" +
			"event stored at or before it); SEQ is a sequence of TRELLIS_QUEUE, or STREAM:SEQ (TRELLIS_VINE:55): that\n" +
			"stream up to the event, every other stream as it stood when the log stored it. DIR is a data directory of its\n" +
			"own: DIR/projections/board.db, DIR/checkpoints/, DIR/index/. It costs a replay of the log up to the point.",
		Example: "  trellis replay\n  trellis replay --json\n  trellis replay --until 2026-01-02T09:30:00Z --out /tmp/at-0930\n  trellis replay --until 1234 --out /tmp/at-1234",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if (until == "") != (out == "") {
				return &usageError{fmt.Errorf("--until and --out go together: replay --until TIME|SEQ --out DIR rebuilds as of a point into DIR")}
			}
			if until != "" {
				return a.replayUntil(cmd, until, out, asJSON)
			}
			return a.call(cmd, asJSON, func(ctx context.Context, s *session) (any, error) { return s.replay(ctx) }, func(v any) {
				res := v.(*handlers.ReplayResult)
				for _, p := range res.Projections {
					fmt.Fprintf(a.stdout, "rebuilt %-12s from %s up to #%d\n", p.Name, p.Stream, p.LastSeq)
				}
				fmt.Fprintf(a.stdout, "replay took %d ms\n", res.Millis)
			})
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	c.Flags().StringVar(&until, "until", "", "rebuild as of this point: a time (RFC 3339, a date, a duration ago) or a sequence ([STREAM:]SEQ); needs --out")
	c.Flags().StringVar(&out, "out", "", "the new or empty directory to rebuild into (with --until)")
	return c
}

// replayUntil rebuilds every projection as of a point into out.
func (a *app) replayUntil(cmd *cobra.Command, until, out string, asJSON bool) error {
	p, err := audit.ParsePoint("until", until, time.Now())
	if err != nil {
		return err
	}
	abs, err := filepath.Abs(out)
	if err != nil {
		return trellis.FieldError("out", "%v", err)
	}
	if data, err := filepath.Abs(a.dataDir); err == nil && (abs == data || strings.HasPrefix(abs, data+string(filepath.Separator))) {
		return trellis.FieldError("out", "%s is inside the data directory %s: rebuild somewhere else, so the live projections stay untouched", out, a.dataDir)
	}
	return a.call(cmd, asJSON, func(ctx context.Context, s *session) (any, error) {
		store, err := s.log("replay --until")
		if err != nil {
			return nil, err
		}
		cut, err := audit.ResolvePoint(ctx, store, p)
		if err != nil {
			return nil, err
		}
		return handlers.RebuildAt(ctx, store, cut, abs, nil)
	}, func(v any) {
		res := v.(*handlers.RebuildResult)
		for _, p := range res.Projections {
			fmt.Fprintf(a.stdout, "rebuilt %-12s from %s up to #%d\n", p.Name, p.Stream, p.LastSeq)
		}
		fmt.Fprintf(a.stdout, "as of %s into %s in %d ms\n", res.Cut.At.Format(time.RFC3339Nano), res.Dir, res.Millis)
		fmt.Fprintf(a.stdout, "read it with commands that only read, given --data %s (for example: trellis queue list --data %s), while no server runs on it\n", res.Dir, res.Dir)
	})
}
