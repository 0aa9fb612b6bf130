package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/trellis/trellis/audit"
	"github.com/trellis/trellis/events"
)

// verifyJSON runs `audit verify --json` with args and returns its exit
// code and report.
func verifyJSON(t *testing.T, args ...string) (int, verifyOutput) {
	t.Helper()
	code, out, errs := cli(t, append([]string{"audit", "verify", "--json"}, args...)...)
	var rep verifyOutput
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("verify %v: exit %d, not JSON: %v\n%s%s", args, code, err, out, errs)
	}
	return code, rep
}

// hasDetail reports whether rep has a finding of kind whose detail holds
// text.
func hasDetail(rep verifyOutput, kind, text string) bool {
	for _, f := range rep.Findings {
		if f.Kind == kind && strings.Contains(f.Detail, text) {
			return true
		}
	}
	return false
}

// TestAuditVerifyAnchorsAndWitness reproduces the second review with a raw
// JetStream client holding the servers' credentials: an export whose last
// line was dropped and trailer recomputed, a forged event with a correct
// prev, a stream whose newest event was dropped (deleted, recreated and
// refilled with #1-#4 under their original message ids), a stream deleted.
// Each is a finding (exit 9): through the keyed anchor the server
// recorded, the auditor's witness, and the checks of ids and times.
func TestAuditVerifyAnchorsAndWitness(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	d := "--data=" + data
	srv := startServer(t, data)
	ctx := context.Background()
	store := srv.Store()
	first := lifecycle(t, d, "jobs", "w1")
	lifecycle(t, d, "jobs", "w2")
	// The running server recorded its first anchor at start.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if as, err := audit.ReadAnchors(audit.AnchorsPath(data)); err == nil && len(as) > 0 && as[0].MAC != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the server recorded no anchor at start")
		}
	}
	// The anchor the server records every minute and at close, taken now.
	if _, err := audit.RecordAnchor(ctx, store, data); err != nil {
		t.Fatal(err)
	}
	key := audit.AnchorKeyPath(data)
	if fi, err := os.Stat(key); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("anchor key: %v %v", fi, err)
	}
	witness := filepath.Join(t.TempDir(), "heads.json")
	code, rep := verifyJSON(t, d, "--witness", witness)
	if code != 0 || rep.AnchorsChecked < 1 || rep.HeadsDigest == "" {
		t.Fatalf("verify of the untouched log: exit %d %+v", code, rep)
	}
	if _, err := audit.ReadWitness(witness); err != nil {
		t.Fatalf("witness not written: %v", err)
	}
	if code, out, _ := cli(t, "audit", "verify", d, "--witness", witness); code != 0 || !strings.Contains(out, "heads sha256-") {
		t.Fatalf("verify against the witness: exit %d\n%s", code, out)
	}

	t.Run("bad input", func(t *testing.T) {
		notKey := filepath.Join(t.TempDir(), "not.key")
		if err := os.WriteFile(notKey, []byte("hello"), 0o600); err != nil {
			t.Fatal(err)
		}
		exp := filepath.Join(t.TempDir(), "x.jsonl")
		for _, tc := range []struct {
			args []string
			msg  string
		}{
			{[]string{"audit", "verify", d, "--anchor-key", filepath.Join(t.TempDir(), "missing.key")}, "anchor_key"},
			{[]string{"audit", "verify", d, "--anchor-key", notKey}, "not an anchor key"},
			{[]string{"audit", "verify", d, "--witness", notKey}, "not a witness file"},
			{[]string{"audit", "verify", "--file", exp, "--witness", filepath.Join(t.TempDir(), "none.json")}, "does not exist"},
			{[]string{"audit", "export", d, "--out", exp, "--anchor-key", notKey}, "not an anchor key"},
		} {
			code, _, errs := cli(t, tc.args...)
			if code != 2 || !strings.Contains(errs, tc.msg) {
				t.Errorf("trellis %s: exit %d %q; want 2 with %q", strings.Join(tc.args, " "), code, errs, tc.msg)
			}
		}
	})

	t.Run("export with its last line dropped and trailer recomputed", func(t *testing.T) {
		exp := filepath.Join(t.TempDir(), "all.jsonl")
		cliOK(t, "audit", "export", d, "--out", exp)
		if code, rep := verifyJSON(t, "--file", exp, "--anchor-key", key, "--witness", witness); code != 0 || !rep.Keyed {
			t.Fatalf("keyed export: exit %d %+v", code, rep)
		}
		forged := dropLastEvent(t, exp)
		if code, _ := verifyJSON(t, "--file", forged); code != 0 {
			t.Fatalf("without key or witness the recomputed export is consistent; exit %d", code)
		}
		if code, rep := verifyJSON(t, "--file", forged, "--anchor-key", key); code != 9 || !hasDetail(rep, audit.FindingAltered, "MAC") {
			t.Errorf("with the anchor key: exit %d %+v", code, rep.Findings)
		}
		if code, rep := verifyJSON(t, "--file", forged, "--witness", witness); code != 9 || !hasDetail(rep, audit.FindingRemoved, "witness") {
			t.Errorf("with the witness: exit %d %+v", code, rep.Findings)
		}
	})

	js := store.JetStream()
	t.Run("forged event with a correct prev", func(t *testing.T) {
		recs, _, err := store.Load(ctx, events.StreamQueue, "trellis.queue.jobs."+first+".>")
		if err != nil || len(recs) != 3 {
			t.Fatalf("load: %d %v", len(recs), err)
		}
		head := recs[2]
		env := events.Envelope{ID: "not-a-ulid", Type: "cancelled", AggregateID: first, Time: head.Time.Add(-48 * time.Hour), Actor: "operator",
			Schema: 1, Prev: events.Hash(head.Envelope), Payload: json.RawMessage(`{"reason":"forged"}`)}
		data, _ := json.Marshal(env)
		msg := &nats.Msg{Subject: "trellis.queue.jobs." + first + ".cancelled", Data: data, Header: nats.Header{nats.MsgIdHdr: []string{"whatever"}}}
		if _, err := js.PublishMsg(ctx, msg); err != nil {
			t.Fatal(err)
		}
		if code, rep := verifyJSON(t, d); code != 9 || !hasDetail(rep, audit.FindingForeign, "not a ULID") {
			t.Errorf("nonsense ULID: exit %d %+v", code, rep.Findings)
		}
		env.ID = events.NewID(time.Now())
		data, _ = json.Marshal(env)
		if _, err := js.PublishMsg(ctx, &nats.Msg{Subject: msg.Subject, Data: data, Header: nats.Header{nats.MsgIdHdr: []string{"other"}}}); err != nil {
			t.Fatal(err)
		}
		code, rep := verifyJSON(t, d)
		if code != 9 || !hasDetail(rep, audit.FindingForeign, `message id "other"`) || !hasDetail(rep, audit.FindingMisdated, "its time says") {
			t.Errorf("wrong message id, back-dated: exit %d %+v", code, rep.Findings)
		}
	})

	t.Run("newest events dropped: stream deleted and refilled", func(t *testing.T) {
		st, err := js.Stream(ctx, events.StreamQueue)
		if err != nil {
			t.Fatal(err)
		}
		info, err := st.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		recs, _, err := store.Load(ctx, events.StreamQueue, "trellis.queue.jobs.>")
		if err != nil || len(recs) < 5 {
			t.Fatalf("load: %d %v", len(recs), err)
		}
		if err := js.DeleteStream(ctx, events.StreamQueue); err != nil {
			t.Fatal(err)
		}
		if _, err := js.CreateStream(ctx, info.Config); err != nil {
			t.Fatal(err)
		}
		for _, r := range recs[:4] {
			data, _ := json.Marshal(r.Envelope)
			if _, err := js.PublishMsg(ctx, &nats.Msg{Subject: r.Subject, Data: data, Header: nats.Header{nats.MsgIdHdr: []string{r.ID}}}); err != nil {
				t.Fatal(err)
			}
		}
		code, rep := verifyJSON(t, d, "--witness", witness)
		if code != 9 || !hasDetail(rep, audit.FindingRemoved, "the anchor") || !hasDetail(rep, audit.FindingRemoved, "the witness") {
			t.Errorf("refilled stream: exit %d %+v", code, rep.Findings)
		}
	})

	t.Run("a stream deleted", func(t *testing.T) {
		if err := js.DeleteStream(ctx, events.StreamVine); err != nil {
			t.Fatal(err)
		}
		code, out, _ := cli(t, "audit", "verify", d)
		if code != 9 || !strings.Contains(out, "TRELLIS_VINE    missing") || !strings.Contains(out, "the stream does not exist") {
			t.Errorf("deleted stream: exit %d\n%s", code, out)
		}
	})

	t.Run("a forged anchor", func(t *testing.T) {
		anchors, err := audit.ReadAnchors(audit.AnchorsPath(data))
		if err != nil || len(anchors) == 0 {
			t.Fatalf("anchors: %d %v", len(anchors), err)
		}
		a := anchors[len(anchors)-1]
		a.Heads[0].LastSeq++ // consistent digest, no key: the MAC cannot follow
		a.Digest = audit.HeadsDigest(a.Heads)
		line, _ := json.Marshal(a)
		f, err := os.OpenFile(audit.AnchorsPath(data), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = f.Write(append(line, '\n'))
		_ = f.Close()
		if code, rep := verifyJSON(t, d); code != 9 || !hasDetail(rep, audit.FindingAltered, "MAC") {
			t.Errorf("forged anchor: exit %d %+v", code, rep.Findings)
		}
	})
}

// dropLastEvent writes a copy of an export without its last event line,
// the header and trailer recomputed to match (what someone without the
// anchor key can do).
func dropLastEvent(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSuffix(string(data), "\n"), "\n")
	body := lines[:len(lines)-1] // without the trailer
	last := len(body) - 1
	for ; last > 0; last-- {
		if strings.Contains(body[last], `"event"`) {
			break
		}
	}
	var dropped audit.ExportLine
	if err := json.Unmarshal([]byte(body[last]), &dropped); err != nil {
		t.Fatal(err)
	}
	body = append(body[:last:last], body[last+1:]...)
	var hdr audit.ExportHeader
	if err := json.Unmarshal([]byte(body[0]), &hdr); err != nil {
		t.Fatal(err)
	}
	for i := range hdr.Streams {
		if hdr.Streams[i].Stream == dropped.Stream {
			hdr.Streams[i].To = dropped.Seq - 1
		}
	}
	h, _ := json.Marshal(hdr)
	body[0] = string(h) + "\n"
	n := 0
	for _, l := range body[1:] {
		if strings.Contains(l, `"event"`) {
			n++
		}
	}
	var out bytes.Buffer
	for _, l := range body {
		out.WriteString(l)
	}
	var tr audit.ExportTrailer
	sum := sha256.Sum256(out.Bytes())
	tr.Trailer.Lines, tr.Trailer.Events, tr.Trailer.Digest = len(body), n, "sha256-"+hex.EncodeToString(sum[:])
	trl, _ := json.Marshal(tr)
	out.Write(append(trl, '\n'))
	forged := filepath.Join(t.TempDir(), "forged.jsonl")
	if err := os.WriteFile(forged, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return forged
}
