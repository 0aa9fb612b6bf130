package audit_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/audit"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/internal/servicetest"
)

// TestAnchorAggregateHeads: an anchor records the newest event of every
// aggregate changed since the previous anchor; a raw JetStream client
// holding the servers' credentials refills the queue stream without one
// task's newest event (its completion), a forged task filling the gap so
// the stream ends where it ended, with the same last event: verify names
// the task whose newest events were removed, and no other. An anchor
// whose aggregate heads were altered is a finding; the heads an anchor
// keeps are bounded.
func TestAnchorAggregateHeads(t *testing.T) {
	t.Parallel()
	svc, b := servicetest.Start(t)
	ctx := context.Background()
	dir := t.TempDir()
	if _, err := audit.RecordAnchor(ctx, b.Store, dir); err != nil {
		t.Fatal(err)
	}
	first := servicetest.RunTask(t, svc, "jobs", "w1")
	second := servicetest.RunTask(t, svc, "jobs", "w2")
	a, err := audit.RecordAnchor(ctx, b.Store, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Aggregates) != 2 || a.Aggregates[0].Seq != 3 || a.Aggregates[1].Seq != 6 || a.Aggregates[0].Hash != events.Hash(first[2].Envelope) {
		t.Fatalf("aggregate heads: %+v", a.Aggregates)
	}
	key, err := audit.AnchorKey(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	anchors, err := audit.ReadAnchors(audit.AnchorsPath(dir))
	if err != nil || len(anchors) != 2 {
		t.Fatalf("anchors: %d %v", len(anchors), err)
	}
	opts := audit.VerifyOptions{Anchors: anchors, AnchorKey: key}
	if fs, rep := verify(t, b.Store, opts); !rep.OK {
		t.Fatalf("untouched log with aggregate heads: %+v", fs)
	}

	t.Run("altered aggregate heads", func(t *testing.T) {
		bad := append([]audit.Anchor(nil), anchors...)
		bad[1].Aggregates = append([]audit.AggregateHead(nil), bad[1].Aggregates...)
		bad[1].Aggregates[0].Hash = bad[1].Aggregates[1].Hash
		fs, _ := verify(t, b.Store, audit.VerifyOptions{Anchors: bad, AnchorKey: key})
		if len(fs) != 1 || fs[0].Kind != audit.FindingAltered || !strings.Contains(fs[0].Detail, "forged or altered") {
			t.Fatalf("altered heads: %+v", fs)
		}
	})

	t.Run("a task's newest event removed", func(t *testing.T) {
		js := b.Store.JetStream()
		st, err := js.Stream(ctx, events.StreamQueue)
		if err != nil {
			t.Fatal(err)
		}
		info, err := st.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := js.DeleteStream(ctx, events.StreamQueue); err != nil {
			t.Fatal(err)
		}
		if _, err := js.CreateStream(ctx, info.Config); err != nil {
			t.Fatal(err)
		}
		publish := func(subject string, env events.Envelope) {
			t.Helper()
			data, _ := json.Marshal(env)
			if _, err := js.PublishMsg(ctx, &nats.Msg{Subject: subject, Data: data, Header: nats.Header{nats.MsgIdHdr: []string{env.ID}}}); err != nil {
				t.Fatal(err)
			}
		}
		publish(first[0].Subject, first[0].Envelope)
		publish(first[1].Subject, first[1].Envelope)
		// A forged task of its own in place of the completion.
		forged := first[0].Envelope
		forged.ID = events.NewID(time.Now())
		forged.AggregateID, forged.Time = events.NewID(time.Now()), time.Now().UTC()
		publish(strings.Replace(first[0].Subject, first[0].AggregateID, forged.AggregateID, 1), forged)
		for _, r := range second {
			publish(r.Subject, r.Envelope)
		}
		fs, rep := verify(t, b.Store, opts)
		if rep.OK || !hasFinding(fs, audit.FindingRemoved, events.StreamQueue, 3, first[0].AggregateID) {
			t.Fatalf("the first task's completion removed: %+v", fs)
		}
		for _, f := range fs {
			if f.Aggregate == second[0].AggregateID {
				t.Errorf("a finding about the untouched task: %+v", f)
			}
		}
	})

	t.Run("bounded", func(t *testing.T) {
		svc, b := servicetest.Start(t)
		dir := t.TempDir()
		n := audit.MaxAnchorAggregates + 10
		for added := 0; added < n; {
			req := trellis.AddManyRequest{}
			for i := 0; i < min(trellis.MaxAddMany, n-added); i++ {
				req.Tasks = append(req.Tasks, trellis.AddTaskRequest{Queue: "bulk", Objective: "bulk task"})
			}
			if _, err := svc.AddMany(ctx, req); err != nil {
				t.Fatal(err)
			}
			added += len(req.Tasks)
		}
		start := time.Now()
		a, err := audit.RecordAnchor(ctx, b.Store, dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("anchor of %d changed aggregates recorded in %s", n, time.Since(start))
		if len(a.Aggregates) != audit.MaxAnchorAggregates || a.AggregatesOmitted != 10 || a.Aggregates[0].Seq != 11 {
			t.Fatalf("anchor of %d changed aggregates: %d heads from #%d, %d omitted", n, len(a.Aggregates), a.Aggregates[0].Seq, a.AggregatesOmitted)
		}
		anchors, err := audit.ReadAnchors(audit.AnchorsPath(dir))
		if err != nil || len(anchors) != 1 || len(anchors[0].Aggregates) != audit.MaxAnchorAggregates {
			t.Fatalf("anchors read back: %d %v", len(anchors), err)
		}
		key, _ := audit.AnchorKey(dir, false)
		fs, rep := verify(t, b.Store, audit.VerifyOptions{Anchors: anchors, AnchorKey: key})
		if !rep.OK {
			t.Fatalf("untouched bulk log: %+v", fs)
		}
		if fi, err := os.Stat(audit.AnchorsPath(dir)); err == nil {
			t.Logf("anchor line with %d aggregate heads: %d bytes", len(anchors[0].Aggregates), fi.Size())
		}
		t.Logf("verify of %d events with %d anchored aggregate heads: %d ms", n, len(anchors[0].Aggregates), rep.Millis)
	})
}
