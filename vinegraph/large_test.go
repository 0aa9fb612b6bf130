package vinegraph_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
)

// A graph whose compressed text does not fit one NATS message (it was
// refused as "too large to record as one event") is recorded through the
// log's large-payload path: imported, changed, exported and rebuilt by
// replay like any other.
func TestVineGraphLargerThanAMessage(t *testing.T) {
	t.Parallel()
	b := setupVine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var sb strings.Builder
	sb.WriteString("vine 1.2.0\n---\n[root] Root (notstarted)\n")
	const n = 3000
	for i := 0; i < n; i++ {
		fmt.Fprintf(&sb, "-> t%05d\n", i)
	}
	noise := make([]byte, 400)
	for i := 0; i < n; i++ {
		_, _ = rand.Read(noise)
		// Random text does not compress: the snapshot stays over 1 MiB.
		fmt.Fprintf(&sb, "---\n[t%05d] Task %d (notstarted)\n%s\n", i, i, hex.EncodeToString(noise))
	}
	text := sb.String()
	file := b.file(t, "large.vine", text)
	info, err := b.svc.VineImport(ctx, trellis.VineFileRequest{File: file})
	if err != nil {
		t.Fatalf("import a %d-byte graph: %v", len(text), err)
	}
	recs, _, err := b.Store.Load(ctx, events.StreamVine, events.GraphFilter(info.GraphID))
	if err != nil || len(recs) != 1 || recs[0].PayloadRef == nil {
		t.Fatalf("import event: %d events, %v; want one whose payload is stored apart", len(recs), err)
	}
	claim, err := b.svc.VineClaim(ctx, trellis.VineClaimRequest{File: file, Agent: "a1"})
	if err != nil || claim.Node == nil {
		t.Fatalf("claim = %+v, %v", claim, err)
	}
	exp, err := b.svc.VineExport(ctx, trellis.VineExportRequest{Graph: info.GraphID})
	if err != nil || !strings.Contains(exp.Text, "(started)") || !strings.Contains(exp.Text, fmt.Sprintf("[t%05d]", n-1)) {
		t.Fatalf("export: %d bytes, %v", len(exp.Text), err)
	}
	live, err := b.svc.VineNext(ctx, trellis.VineFileRequest{File: file})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.svc.Replay(ctx); err != nil {
		t.Fatal(err)
	}
	rebuilt, err := b.svc.VineNext(ctx, trellis.VineFileRequest{File: file})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(live, rebuilt) || live.Progress.Total != n+1 {
		t.Fatalf("frontier after replay differs or is wrong: live %+v, rebuilt %+v", live.Progress, rebuilt.Progress)
	}
}
