package audit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/audit"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/internal/servicetest"
)

func exportFile(t *testing.T, store *events.Store, opts audit.ExportOptions) (string, *audit.ExportResult) {
	t.Helper()
	var buf bytes.Buffer
	res, err := audit.Export(context.Background(), store, opts, &buf)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, res
}

func verifyFile(t *testing.T, path string) ([]audit.Finding, *audit.VerifyReport) {
	t.Helper()
	var fs []audit.Finding
	rep, err := audit.VerifyFile(context.Background(), path, func(f audit.Finding) error {
		fs = append(fs, f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return fs, rep
}

// rewrite writes path's lines through fn into a new file.
func rewrite(t *testing.T, path string, fn func(lines []string) []string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	out := filepath.Join(t.TempDir(), "changed.jsonl")
	if err := os.WriteFile(out, []byte(strings.Join(fn(lines), "")), 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

func kinds(fs []audit.Finding) map[string]int {
	out := map[string]int{}
	for _, f := range fs {
		out[f.Kind]++
	}
	return out
}

// lineOf returns the index of the export line holding the event at seq of
// stream.
func lineOf(t *testing.T, lines []string, stream string, seq uint64) int {
	t.Helper()
	for i, l := range lines {
		var el audit.ExportLine
		if json.Unmarshal([]byte(l), &el) == nil && el.Stream == stream && el.Seq == seq && el.Event != nil {
			return i
		}
	}
	t.Fatalf("no line for %s #%d", stream, seq)
	return -1
}

// TestExportVerifiesOffline: an export of a clean log verifies offline
// with the digest the export reported; a truncated, edited, re-hashed or
// thinned export is reported with its line and log position; a deletion
// in the log before the export shows in the export too.
func TestExportVerifiesOffline(t *testing.T) {
	t.Parallel()
	svc, b := servicetest.Start(t)
	ctx := context.Background()
	a := servicetest.RunTask(t, svc, "jobs", "w1")
	c := servicetest.RunTask(t, svc, "jobs", "w2")
	if _, err := svc.TaskCreate(ctx, trellis.AgentTaskCreateRequest{Name: "fix-auth", Objectives: []string{"Fix it"}}); err != nil {
		t.Fatal(err)
	}
	path, res := exportFile(t, b.Store, audit.ExportOptions{})
	if res.Events != 7 {
		t.Fatalf("export: %+v", res)
	}
	fs, rep := verifyFile(t, path)
	if !rep.OK || len(fs) != 0 || rep.Digest != res.Digest {
		t.Fatalf("clean export: ok=%v digest %s vs %s: %v", rep.OK, rep.Digest, res.Digest, fs)
	}
	Q := events.StreamQueue

	t.Run("cut mid-line", func(t *testing.T) {
		data, _ := os.ReadFile(path)
		cut := filepath.Join(t.TempDir(), "cut.jsonl")
		if err := os.WriteFile(cut, data[:len(data)*2/3], 0o644); err != nil {
			t.Fatal(err)
		}
		fs, rep := verifyFile(t, cut)
		if rep.OK || kinds(fs)[audit.FindingTruncated] < 2 {
			t.Fatalf("cut export: %v", fs)
		}
	})
	t.Run("cut at a line end", func(t *testing.T) {
		fs, rep := verifyFile(t, rewrite(t, path, func(l []string) []string { return l[:3] }))
		if rep.OK || kinds(fs)[audit.FindingTruncated] < 2 {
			t.Fatalf("export cut after 3 lines: %v", fs)
		}
	})
	t.Run("header cut", func(t *testing.T) {
		data, _ := os.ReadFile(path)
		cut := filepath.Join(t.TempDir(), "cut.jsonl")
		if err := os.WriteFile(cut, data[:20], 0o644); err != nil {
			t.Fatal(err)
		}
		fs, rep := verifyFile(t, cut)
		if rep.OK || kinds(fs)[audit.FindingTruncated] != 1 {
			t.Fatalf("header cut: %v", fs)
		}
	})
	t.Run("edited payload", func(t *testing.T) {
		fs, _ := verifyFile(t, rewrite(t, path, func(l []string) []string {
			i := lineOf(t, l, Q, a[1].Seq)
			l[i] = strings.Replace(l[i], `"worker":"w1"`, `"worker":"w9"`, 1)
			return l
		}))
		if !hasFindingLine(fs, audit.FindingAltered, Q, a[1].Seq) || !hasFinding(fs, audit.FindingAltered, "", 0, "") {
			t.Fatalf("edited line: %v", fs)
		}
	})
	t.Run("edited and re-hashed", func(t *testing.T) {
		// A forger who also fixes the line's hash still breaks the next
		// link of the chain.
		fs, _ := verifyFile(t, rewrite(t, path, func(l []string) []string {
			i := lineOf(t, l, Q, a[1].Seq)
			var el audit.ExportLine
			if err := json.Unmarshal([]byte(l[i]), &el); err != nil {
				t.Fatal(err)
			}
			el.Event.Actor = "w9"
			el.Hash = events.Hash(*el.Event)
			data, _ := json.Marshal(el)
			l[i] = string(data) + "\n"
			return l
		}))
		if !hasFindingLine(fs, audit.FindingAltered, Q, a[2].Seq) {
			t.Fatalf("re-hashed line: %v", fs)
		}
	})
	t.Run("line removed", func(t *testing.T) {
		fs, _ := verifyFile(t, rewrite(t, path, func(l []string) []string {
			i := lineOf(t, l, Q, c[1].Seq)
			return append(l[:i:i], l[i+1:]...)
		}))
		if !hasFindingLine(fs, audit.FindingRemoved, Q, c[1].Seq) || !hasFindingLine(fs, audit.FindingRemoved, Q, c[2].Seq) {
			t.Fatalf("removed line: %v", fs)
		}
	})
	t.Run("appended after the trailer", func(t *testing.T) {
		fs, _ := verifyFile(t, rewrite(t, path, func(l []string) []string { return append(l, l[1]) }))
		if kinds(fs)[audit.FindingTruncated] != 1 {
			t.Fatalf("appended: %v", fs)
		}
	})
	t.Run("not an export", func(t *testing.T) {
		bad := filepath.Join(t.TempDir(), "x.jsonl")
		for _, content := range []string{"", "{\"id\":1}\n", "plain text\n"} {
			if err := os.WriteFile(bad, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := audit.VerifyFile(ctx, bad, func(audit.Finding) error { return nil })
			if trellis.ErrorCode(err) != trellis.CodeInvalid || trellis.AsError(err).Field != "file" {
				t.Errorf("verify of %q: %v; want invalid file", content, err)
			}
		}
		if _, err := audit.VerifyFile(ctx, filepath.Join(t.TempDir(), "missing"), func(audit.Finding) error { return nil }); trellis.ErrorCode(err) != trellis.CodeInvalid {
			t.Errorf("missing file: %v", err)
		}
	})

	// A message deleted from the log before the export: the export
	// declares the gap and the offline check reports it.
	st, err := b.Store.JetStream().Stream(ctx, Q)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteMsg(ctx, a[1].Seq); err != nil {
		t.Fatal(err)
	}
	path2, _ := exportFile(t, b.Store, audit.ExportOptions{})
	fs, _ = verifyFile(t, path2)
	if !hasFinding(fs, audit.FindingRemoved, Q, a[1].Seq, "") || !hasFinding(fs, audit.FindingRemoved, Q, a[2].Seq, a[0].AggregateID) {
		t.Fatalf("export of a tampered log: %v", fs)
	}
}

func hasFindingLine(fs []audit.Finding, kind, stream string, seq uint64) bool {
	for _, f := range fs {
		if f.Kind == kind && f.Stream == stream && f.Seq == seq && f.Line > 0 {
			return true
		}
	}
	return false
}

// TestExportWindow: an export of a time window holds the events stored
// within it; aggregates whose earlier events lie before it are anchored,
// not reported; an empty window exports nothing and verifies; until
// before since is refused.
func TestExportWindow(t *testing.T) {
	t.Parallel()
	svc, b := servicetest.Start(t)
	ctx := context.Background()
	task, err := svc.Add(ctx, trellis.AddTaskRequest{Objective: "spans the window"})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	since := time.Now()
	time.Sleep(5 * time.Millisecond)
	if _, err := svc.Next(ctx, trellis.NextRequest{Worker: "w1"}); err != nil {
		t.Fatal(err)
	}
	servicetest.RunTask(t, svc, "jobs", "w2")
	path, res := exportFile(t, b.Store, audit.ExportOptions{Since: since})
	if res.Events != 4 {
		t.Fatalf("window export: %+v", res)
	}
	fs, rep := verifyFile(t, path)
	q := streamReport(rep, events.StreamQueue)
	if !rep.OK || q.Anchored != 1 || q.Chained != 2 {
		t.Fatalf("window export verify: %+v %v", q, fs)
	}
	_ = task
	path, res = exportFile(t, b.Store, audit.ExportOptions{Since: time.Now().Add(time.Hour)})
	if res.Events != 0 {
		t.Fatalf("future window: %+v", res)
	}
	if fs, rep := verifyFile(t, path); !rep.OK {
		t.Fatalf("empty export: %v", fs)
	}
	_, err = audit.Export(ctx, b.Store, audit.ExportOptions{Since: since, Until: since.Add(-time.Second)}, &bytes.Buffer{})
	if trellis.ErrorCode(err) != trellis.CodeInvalid || trellis.AsError(err).Field != "until" {
		t.Fatalf("until before since: %v", err)
	}
}
