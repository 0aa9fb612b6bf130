package audit_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/trellis/trellis/audit"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/internal/servicetest"
)

// TestVerifyProjectionsReplacedStream: the queue stream deleted and
// refilled with as many events as the board applied, the last one another
// event: the board's position still lies within the stream, but the event
// it applied there is gone. Verify names the stream and the projection;
// on the untouched log the positions give no finding.
func TestVerifyProjectionsReplacedStream(t *testing.T) {
	t.Parallel()
	svc, b := servicetest.Start(t)
	ctx := context.Background()
	recs := servicetest.RunTask(t, svc, "jobs", "w1")
	if err := svc.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	positions, err := svc.Projections(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if fs, rep := verify(t, b.Store, audit.VerifyOptions{Projections: positions}); !rep.OK {
		t.Fatalf("untouched log: %+v", fs)
	}
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
	forged := recs[0].Envelope
	forged.ID = events.NewID(time.Now())
	forged.AggregateID, forged.Time = events.NewID(time.Now()), time.Now().UTC()
	for i, env := range []events.Envelope{recs[0].Envelope, recs[1].Envelope, forged} {
		subject := recs[i].Subject
		if i == 2 {
			subject = strings.Replace(recs[0].Subject, recs[0].AggregateID, forged.AggregateID, 1)
		}
		data, _ := json.Marshal(env)
		if _, err := js.PublishMsg(ctx, &nats.Msg{Subject: subject, Data: data, Header: nats.Header{nats.MsgIdHdr: []string{env.ID}}}); err != nil {
			t.Fatal(err)
		}
	}
	positions, err = svc.Projections(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fs, _ := verify(t, b.Store, audit.VerifyOptions{Projections: positions})
	found := false
	for _, f := range fs {
		if f.Kind == audit.FindingAltered && f.Stream == events.StreamQueue && f.Projection == "board" && f.Seq == 3 {
			found = true
		}
	}
	if !found {
		t.Fatalf("no finding names the board's replaced event: %+v", fs)
	}
}
