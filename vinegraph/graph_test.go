package vinegraph_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/handlers"
	"github.com/trellis/trellis/internal/servicetest"
	"github.com/trellis/trellis/vine"
	"github.com/trellis/trellis/vinegraph"
)

type vineBundle struct {
	*eventstest.Bundle
	svc *handlers.Service
	ws  string
}

func setupVine(t *testing.T) *vineBundle {
	svc, b, ws := servicetest.StartVine(t)
	return &vineBundle{Bundle: b, svc: svc, ws: ws}
}

func (b *vineBundle) file(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(b.ws, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func (b *vineBundle) fixture(t *testing.T, src, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "vine", "testdata", src))
	if err != nil {
		t.Fatal(err)
	}
	return b.file(t, name, string(data))
}

func (b *vineBundle) events(t *testing.T, graphID string) []string {
	t.Helper()
	recs, _, err := b.Store.Load(context.Background(), events.StreamVine, events.GraphFilter(graphID))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range recs {
		out = append(out, r.Type)
	}
	return out
}

func TestVineLoopEventSourced(t *testing.T) {
	t.Parallel()
	b := setupVine(t)
	ctx := context.Background()
	f := b.file(t, "plan.vine", servicetest.Chain)
	fr, err := b.svc.VineNext(ctx, trellis.VineFileRequest{File: f})
	if err != nil {
		t.Fatal(err)
	}
	if len(fr.ReadyToStart) != 1 || fr.ReadyToStart[0].ID != "a" || fr.Progress.Total != 3 {
		t.Fatalf("frontier = %+v", fr)
	}
	c, err := b.svc.VineClaim(ctx, trellis.VineClaimRequest{File: f, Agent: "agent-1"})
	if err != nil || c.Node == nil || c.Node.Node.ID != "a" {
		t.Fatalf("claim = %+v, %v", c, err)
	}
	// The file is rewritten from the log after each change (a claim's
	// right after it returns).
	waitFile(t, f, holds("[a] Analyse (started)"))
	// Nothing else is ready: claim returns no task.
	if c2, err := b.svc.VineClaim(ctx, trellis.VineClaimRequest{File: f, Agent: "agent-2"}); err != nil || c2.Node != nil {
		t.Fatalf("second claim = %+v, %v", c2, err)
	}
	// Claiming a started task by id is a conflict.
	if _, err := b.svc.VineClaim(ctx, trellis.VineClaimRequest{File: f, ID: "a", Agent: "agent-2"}); trellis.ErrorCode(err) != trellis.CodeConflict {
		t.Fatalf("claim of a started task: %v", err)
	}
	if _, err := b.svc.VineWrite(ctx, trellis.VineWriteRequest{File: f, Agent: "agent-1", Operations: []vine.Op{
		{Op: "update", ID: "a", Decisions: []string{"> analysed the inputs"}},
		{Op: "set_status", ID: "a", Status: "reviewing"},
	}}); err != nil {
		t.Fatal(err)
	}
	fr, _ = b.svc.VineNext(ctx, trellis.VineFileRequest{File: f})
	if len(fr.ReadyToStart) != 1 || fr.ReadyToStart[0].ID != "b" {
		t.Fatalf("after reviewing a: %+v", fr.ReadyToStart)
	}
	gid := events.GraphID("plan.vine")
	if got := strings.Join(b.events(t, gid), " "); got != "imported batch_applied batch_applied" {
		t.Fatalf("events = %s", got)
	}
	exp, err := b.svc.VineExport(ctx, trellis.VineExportRequest{Graph: gid})
	if err != nil || !strings.Contains(exp.Text, "> analysed the inputs") || exp.Path != "plan.vine" {
		t.Fatalf("export = %+v, %v", exp, err)
	}
	// The frontier projection, live and rebuilt by replay, equals the
	// frontier computed from the exported graph.
	g, _ := vine.Parse(exp.Text)
	want, _ := json.Marshal(vine.Next(g))
	live, _ := b.svc.Frontiers().Frontier(gid)
	if got, _ := json.Marshal(live); string(got) != string(want) {
		t.Fatalf("live frontier %s; want %s", got, want)
	}
	if _, err := b.svc.Replay(ctx); err != nil {
		t.Fatal(err)
	}
	rebuilt, _ := b.svc.Frontiers().Frontier(gid)
	if got, _ := json.Marshal(rebuilt); string(got) != string(want) {
		t.Fatalf("rebuilt frontier %s; want %s", got, want)
	}
}

func TestVineHandEditRecorded(t *testing.T) {
	t.Parallel()
	b := setupVine(t)
	ctx := context.Background()
	f := b.file(t, "edit.vine", servicetest.Chain)
	if _, err := b.svc.VineImport(ctx, trellis.VineFileRequest{File: f}); err != nil {
		t.Fatal(err)
	}
	b.file(t, "edit.vine", strings.Replace(servicetest.Chain, "[a] Analyse (notstarted)", "[a] Analyse deeply (complete)", 1))
	fr, err := b.svc.VineNext(ctx, trellis.VineFileRequest{File: f})
	if err != nil {
		t.Fatal(err)
	}
	if len(fr.ReadyToStart) != 1 || fr.ReadyToStart[0].ID != "b" {
		t.Fatalf("hand edit not applied: %+v", fr.ReadyToStart)
	}
	gid := events.GraphID("edit.vine")
	if got := strings.Join(b.events(t, gid), " "); got != "imported hand_edited" {
		t.Fatalf("events = %s", got)
	}
	// Reformatting alone is not an edit.
	b.file(t, "edit.vine", strings.ReplaceAll(strings.Replace(servicetest.Chain, "[a] Analyse (notstarted)", "[a] Analyse deeply (complete)", 1), "vine 1.2.0", "vine 1.1.0"))
	if _, err := b.svc.VineNext(ctx, trellis.VineFileRequest{File: f}); err != nil {
		t.Fatal(err)
	}
	if n := len(b.events(t, gid)); n != 2 {
		t.Fatalf("reformatting recorded %d events", n)
	}
	// A broken hand edit is refused with a way out; the log is unchanged.
	b.file(t, "edit.vine", servicetest.Chain+"-> nowhere\n")
	_, err = b.svc.VineNext(ctx, trellis.VineFileRequest{File: f})
	if trellis.ErrorCode(err) != trellis.CodeInvalid || !strings.Contains(err.Error(), "vine export") {
		t.Fatalf("broken hand edit: %v", err)
	}
	if n := len(b.events(t, gid)); n != 2 {
		t.Fatalf("a broken edit changed the log (%d events)", n)
	}
	// A deleted file is written back from the log.
	os.Remove(f)
	if _, err := b.svc.VineNext(ctx, trellis.VineFileRequest{File: f}); trellis.ErrorCode(err) != trellis.CodeInvalid {
		// the broken file was removed: the graph comes back from the log
		if err != nil {
			t.Fatal(err)
		}
	}
	if data, err := os.ReadFile(f); err != nil || !strings.Contains(string(data), "Analyse deeply") {
		t.Fatalf("file not restored: %v\n%s", err, data)
	}
}

func TestVineBadInput(t *testing.T) {
	t.Parallel()
	b := setupVine(t)
	ctx := context.Background()
	f := b.file(t, "bad.vine", servicetest.Chain)
	if _, err := b.svc.VineImport(ctx, trellis.VineFileRequest{File: f}); err != nil {
		t.Fatal(err)
	}
	gid := events.GraphID("bad.vine")
	before := len(b.events(t, gid))
	cases := []struct {
		name string
		op   []vine.Op
		code trellis.Code
		want string
	}{
		{"cycle", []vine.Op{{Op: "add_dep", TaskID: "a", DepID: "root"}}, trellis.CodeInvalid, "cycle"},
		{"unknown dependency", []vine.Op{{Op: "add_dep", TaskID: "a", DepID: "ghost"}}, trellis.CodeInvalid, "unknown dependency"},
		{"island", []vine.Op{{Op: "add_task", ID: "lonely", Name: "Lonely"}}, trellis.CodeInvalid, "island"},
		{"duplicate id", []vine.Op{{Op: "add_task", ID: "a", Name: "Again"}}, trellis.CodeInvalid, "duplicate"},
		{"unknown op", []vine.Op{{Op: "explode", ID: "a"}}, trellis.CodeInvalid, "explode"},
		{"remove root", []vine.Op{{Op: "remove_task", ID: "root"}}, trellis.CodeInvalid, "root"},
		{"escaping ref", []vine.Op{{Op: "add_ref", ID: "x", Name: "X", Vine: "../../etc/passwd.vine"}}, trellis.CodeInvalid, "operations[0]"},
		{"all or nothing", []vine.Op{{Op: "set_status", ID: "a", Status: "complete"}, {Op: "add_dep", TaskID: "a", DepID: "root"}}, trellis.CodeInvalid, "cycle"},
	}
	for _, c := range cases {
		_, err := b.svc.VineWrite(ctx, trellis.VineWriteRequest{File: f, Operations: c.op})
		if trellis.ErrorCode(err) != c.code || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want %s mentioning %q", c.name, err, c.code, c.want)
		}
	}
	if after := len(b.events(t, gid)); after != before {
		t.Fatalf("failed batches changed the log: %d -> %d events", before, after)
	}
	data, _ := os.ReadFile(f)
	if strings.Contains(string(data), "(complete)") {
		t.Fatal("a failed batch changed the file")
	}
	outside := filepath.Join(t.TempDir(), "outside.vine")
	os.WriteFile(outside, []byte(servicetest.Chain), 0o644)
	for name, req := range map[string]trellis.VineFileRequest{
		"outside workspace": {File: outside},
		"empty file name":   {File: ""},
		"missing file":      {File: filepath.Join(b.ws, "nope.vine")},
		"binary":            {File: b.file(t, "bin.vine", "vine 1.2.0\n---\n[a] A (notstarted)\n\x00\x01\x02")},
		"invalid syntax":    {File: b.file(t, "syn.vine", "vine 1.2.0\n---\n[a A (notstarted)\n")},
		"bad version":       {File: b.file(t, "ver.vine", "vine 2.0.0\n---\n[a] A (notstarted)\n")},
	} {
		if _, err := b.svc.VineImport(ctx, req); err == nil {
			t.Errorf("%s: accepted", name)
		} else if c := trellis.ErrorCode(err); c != trellis.CodeInvalid && c != trellis.CodeNotFound {
			t.Errorf("%s: %v", name, err)
		}
	}
	// A 100 MB file is refused before it is read.
	big := filepath.Join(b.ws, "big.vine")
	fh, _ := os.Create(big)
	fh.Truncate(100 << 20)
	fh.Close()
	if _, err := b.svc.VineImport(ctx, trellis.VineFileRequest{File: big}); trellis.ErrorCode(err) != trellis.CodeInvalid || !strings.Contains(err.Error(), "bytes") {
		t.Fatalf("100 MB file: %v", err)
	}
}

func TestVineExpandAndEscape(t *testing.T) {
	t.Parallel()
	b := setupVine(t)
	ctx := context.Background()
	parent := b.fixture(t, "expand/repo-mcp-ref-parent/parent.vine", "p/parent.vine")
	b.fixture(t, "expand/repo-mcp-ref-parent/child.vine", "p/child.vine")
	want, _ := os.ReadFile(filepath.Join("..", "vine", "testdata", "expand", "repo-mcp-ref-parent", "expected.vine"))
	refs, err := b.svc.VineRead(ctx, trellis.VineReadRequest{File: parent, Action: "refs"})
	if err != nil || len(refs.Result.([]vine.Node)) != 1 {
		t.Fatalf("refs = %+v, %v", refs, err)
	}
	if _, err := b.svc.VineExpand(ctx, trellis.VineExpandRequest{File: parent, RefID: "ext-ref", ChildFile: "../../../etc/x.vine"}); trellis.ErrorCode(err) != trellis.CodeInvalid {
		t.Fatalf("escaping child: %v", err)
	}
	if _, err := b.svc.VineExpand(ctx, trellis.VineExpandRequest{File: parent, RefID: "ext-ref", ChildFile: "./child.vine"}); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(parent)
	wantG, _ := vine.Parse(string(want))
	wantText, _ := vine.Serialize(wantG)
	if string(got) != wantText {
		t.Fatalf("expanded file:\n%s\nwant:\n%s", got, wantText)
	}
	// Replay from the log gives the same graph (the child is in the event).
	os.Remove(filepath.Join(b.ws, "p", "child.vine"))
	exp, err := b.svc.VineExport(ctx, trellis.VineExportRequest{Graph: parent})
	if err != nil || exp.Text != wantText {
		t.Fatalf("export after expansion: %v", err)
	}
}

// TestVineConcurrentClaims: agents with their own handlers (as separate
// processes would have) claim from one graph at once; every task is
// claimed exactly once.
func TestVineConcurrentClaims(t *testing.T) {
	t.Parallel()
	b := setupVine(t)
	ctx := context.Background()
	var sb strings.Builder
	sb.WriteString("vine 1.2.0\n---\n[root] Root (notstarted)\n")
	for i := 0; i < 40; i++ {
		sb.WriteString("-> t" + string(rune('a'+i/26)) + string(rune('a'+i%26)) + "\n")
	}
	for i := 0; i < 40; i++ {
		sb.WriteString("---\n[t" + string(rune('a'+i/26)) + string(rune('a'+i%26)) + "] Task (notstarted)\n")
	}
	f := b.file(t, "wide.vine", sb.String())
	if _, err := b.svc.VineImport(ctx, trellis.VineFileRequest{File: f}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	claimed := map[string]string{}
	var wg sync.WaitGroup
	for a := 0; a < 6; a++ {
		svc := handlers.NewService(b.Store, handlers.ServiceConfig{DataDir: t.TempDir(), Vine: vinegraph.Config{Roots: []string{b.ws}}})
		agent := "agent-" + string(rune('0'+a))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				c, err := svc.VineClaim(ctx, trellis.VineClaimRequest{File: f, Agent: agent})
				if err != nil {
					t.Error(err)
					return
				}
				if c.Node == nil {
					return
				}
				mu.Lock()
				if prev, dup := claimed[c.Node.Node.ID]; dup {
					t.Errorf("%s claimed by %s and %s", c.Node.Node.ID, prev, agent)
				}
				claimed[c.Node.Node.ID] = agent
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(claimed) != 40 {
		t.Fatalf("claimed %d of 40", len(claimed))
	}
}
